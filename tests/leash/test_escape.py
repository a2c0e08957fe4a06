"""The escape suite: every attempt fails under the tool profile while legitimate workspace work succeeds.

Each test runs in local mode (this uid; as root that is uid 0 with every capability dropped) and,
as root, in system mode (a throwaway leashed user).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import pwd
import secrets
import shlex
import socket
import struct
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
import yaml


def denied(output: str) -> int:
    """Refusals in a command's output: by Landlock, or by the read-only mounts (as root)."""
    return output.count("Permission denied") + output.count("Read-only file system")


def test_workspace_work_succeeds(leash):
    res = leash("mkdir -p a/b && echo hello > a/b/f && mv a/b/f a/g && cat a/g && echo tmp > $TMPDIR/t "
                "&& cat $TMPDIR/t && /usr/bin/python3 -c 'print(6*7)' && ls /usr/bin >/dev/null && id -u "
                "&& printf '#!/bin/sh\\necho ran\\n' > s.sh && chmod +x s.sh && ./s.sh "
                "&& touch -d 2001-01-01 a/g && chmod 600 $TMPDIR/t")
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[:5] == ["hello", "tmp", "42", str(leash.uid), "ran"]
    assert (leash.workspace / "a" / "g").stat().st_mtime < 1e9 + 1e8
    assert (leash.workspace / "a" / "g").read_text() == "hello\n"
    assert "landlock-fs" in res.applied and not res.missing or res.missing == ["cgroup"]


def test_write_outside_workspace_fails(leash):
    outside = leash.workspace.parent / "outside"
    res = leash(f"echo x > {outside}/f; echo x > /tmp/sentinel-escape-{secrets.token_hex(4)}; touch /etc/x; "
                f"echo x > ~/f; echo done")
    assert denied(res.output) >= 3, res.output
    assert not (outside / "f").exists()
    assert not os.path.exists("/etc/x")


def test_metadata_of_files_outside_fails(leash, shared_dir):
    target = shared_dir / "outside" / "owned.txt"
    target.write_text("x")
    os.chmod(target, 0o600)
    os.chown(target, leash.uid, -1)  # owned by the tool's uid: only the sandbox can refuse
    before = target.stat()
    leash(f"chmod 666 {target}; touch -d 2001-01-01 {target}; chmod 644 /etc/shadow; touch /etc/passwd")
    after = target.stat()
    assert os.stat("/etc/shadow").st_mode & 0o777 in (0o640, 0o600, 0o000)
    if os.geteuid() != 0:
        pytest.xfail("Landlock does not cover chmod/utime, and without root there are no read-only mounts: "
                     "files your own uid owns outside the workspace are exposed")
    assert (after.st_mode, after.st_mtime) == (before.st_mode, before.st_mtime)


def test_read_shadow_fails(leash):
    res = leash("cat /etc/shadow; cat /etc/gshadow; cat /etc/ssh/ssh_host_ed25519_key 2>&1 | head -1")
    assert "root:" not in res.output
    assert res.output.count("Permission denied") >= 2, res.output


def test_read_other_files_and_ssh_fails(leash, shared_dir):
    home = shared_dir / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (shared_dir / "outside" / "secret.txt").write_text("SECRET\n")
    for path in (home, home / ".ssh", home / ".ssh" / "id_ed25519", shared_dir / "outside" / "secret.txt"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)  # DAC would allow it: only Leash stands in the way
    res = leash(f"cat {home}/.ssh/id_ed25519; cat {shared_dir}/outside/secret.txt; ls {home}; cat /root/.bashrc")
    assert "PRIVATE KEY" not in res.output and "SECRET" not in res.output
    assert res.output.count("Permission denied") >= 3, res.output


def test_symlink_and_hardlink_tricks_fail(leash, shared_dir):
    secret = shared_dir / "outside" / "secret.txt"
    secret.write_text("SECRET\n")
    os.chmod(secret, 0o666)
    res = leash(f"ln -s {secret} sl; cat sl; echo overwrite > sl; ln {secret} hl; cat hl; "
                f"ln -s /etc sl2; cat sl2/shadow; echo exit=$?")
    assert "SECRET" not in res.output
    assert secret.read_text() == "SECRET\n"
    assert not (leash.workspace / "hl").exists()


def test_write_sentinel_home_fails(leash, sentinel_home):
    (sentinel_home / "state").mkdir(exist_ok=True)
    os.chmod(sentinel_home, 0o777)
    os.chmod(sentinel_home / "state", 0o777)
    res = leash(f"echo evil > {sentinel_home}/state/trust.json; echo x >> {sentinel_home}/config.yaml; "
                f"cat {sentinel_home}/leash.yaml; ls {sentinel_home}")
    assert not (sentinel_home / "state" / "trust.json").exists()
    assert denied(res.output) >= 3, res.output


def test_workspace_containing_home_is_refused(sentinel_home):
    from sentinel.errors import UsageError
    from sentinel.leash.launch import run_tool

    with pytest.raises(UsageError, match="contains the Sentinel home"):
        run_tool(["true"], cwd=sentinel_home.parent, workspace=sentinel_home.parent, timeout_s=5)


@pytest.fixture
def listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    yield srv.getsockname()[1]
    srv.close()


CONNECT = "/usr/bin/python3 -c 'import socket,sys; socket.create_connection((\"127.0.0.1\", int(sys.argv[1])), 2); print(\"CONNECTED\")' {}"


def test_tcp_denied_without_network(leash, listener):
    res = leash(CONNECT.format(listener) + f"; echo > /dev/tcp/127.0.0.1/{listener} && echo BASHTCP")
    assert "CONNECTED" not in res.output and "BASHTCP" not in res.output, res.output


@pytest.fixture
def networked(leash, listener, sentinel_home):
    """Network granted, with `listener` as the egress proxy's port; yields another listening port, not allowed."""
    cfg = sentinel_home / "config.yaml"
    data = yaml.safe_load(cfg.read_text()) if cfg.exists() else {}
    data.setdefault("leash", {})["proxy_port"] = listener
    cfg.write_text(yaml.safe_dump(data))
    leash.policy(network=True, allow_domains=["example.com"])
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen(8)
    yield other.getsockname()[1]
    other.close()


def test_tcp_only_to_the_proxy_port_with_network(leash, listener, networked):
    res = leash(CONNECT.format(listener) + "; " + CONNECT.format(networked) + "; echo $https_proxy")
    assert res.output.count("CONNECTED") == 1, res.output
    assert f"http://127.0.0.1:{listener}" in res.output


def test_udp_and_dns_fail(leash):
    res = leash("/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                "s.sendto(b\"x\", (\"127.0.0.1\", 53)); print(\"SENT\")'; getent hosts example.com; echo rc=$?")
    assert "SENT" not in res.output and "rc=2" in res.output, res.output


def test_abstract_unix_socket_fails(leash):
    name = f"\0sentinel-test-{secrets.token_hex(4)}"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(name)
    srv.listen(1)
    try:
        code = f"import socket; s=socket.socket(socket.AF_UNIX); s.connect({name!r}); print('CONNECTED')"
        res = leash(f"/usr/bin/python3 -c \"{code}\"")
        assert "CONNECTED" not in res.output and "PermissionError" in res.output, res.output
    finally:
        srv.close()


def test_signal_and_ptrace_outside_fail(leash):
    me = os.getpid()
    res = leash(f"kill -0 {me} && echo SIGNALLED; kill -0 $PPID && echo PARENT; cat /proc/{me}/environ && echo ENV; "
                "/usr/bin/python3 -c 'import ctypes,sys; l=ctypes.CDLL(None); "
                f"print(\"PTRACE\", l.ptrace(0x4206, {me}, 0, 0))'")
    assert "SIGNALLED" not in res.output and "PARENT" not in res.output and "ENV" not in res.output, res.output
    assert "PTRACE -1" in res.output


def test_su_and_setuid_binaries_fail(leash):
    res = leash("su -c 'cat /etc/shadow' root </dev/null; /usr/bin/passwd -S root; newgrp root </dev/null; "
                "/usr/bin/python3 -c 'import os; os.setuid(0); print(\"ROOT\")'; echo done")
    assert ":::" not in res.output, res.output  # no line of /etc/shadow
    assert ("ROOT" in res.output) == (leash.uid == 0), res.output
    assert "done" in res.output


def test_fork_bomb_is_contained_and_cleaned(leash, alive):
    leash.policy(limits={"processes": 64})
    marker = f"{secrets.randbelow(500) + 1000}.{secrets.randbelow(9)}"
    start = time.monotonic()
    res = leash(f"for i in $(seq 300); do sleep {marker} & done; wait", timeout_s=4)
    assert time.monotonic() - start < 15
    assert "Resource temporarily unavailable" in res.output or "retry" in res.output, res.output[-500:]
    assert alive(f"sleep {marker}") == []


def test_memory_bomb_fails(leash):
    leash.policy(limits={"memory_mb": 256})
    res = leash("/usr/bin/python3 -c 'x = bytearray(1 << 30); print(\"ALLOCATED\")'")
    assert "ALLOCATED" not in res.output and res.exit_code != 0, res.output


def test_cpu_spin_times_out(leash):
    start = time.monotonic()
    res = leash("while :; do :; done", timeout_s=1)
    assert res.timed_out and res.exit_code is None
    assert time.monotonic() - start < 5


def test_cpu_rlimit_kills_spin(leash):
    leash.policy(limits={"cpu_s": 1})
    res = leash("exec /bin/bash -c 'while :; do :; done'", timeout_s=15)
    assert not res.timed_out and res.exit_code in (-24, -9), res


def test_filling_the_disk_fails(leash):
    leash.policy(limits={"file_size_mb": 1})
    res = leash("dd if=/dev/zero of=big bs=1M count=8 2>&1; echo rc=$?")
    assert "File too large" in res.output or "rc=153" in res.output or "rc=1" in res.output, res.output
    assert (leash.workspace / "big").stat().st_size <= 1024 * 1024


def test_setsid_grandchild_is_killed(leash, alive):
    marker = f"{secrets.randbelow(500) + 2000}.{secrets.randbelow(9)}"
    res = leash(f"(setsid sleep {marker} >/dev/null 2>&1 &); nohup setsid sleep {marker} >/dev/null 2>&1 & echo started")
    assert "started" in res.output
    assert alive(f"sleep {marker}") == []


def test_setsid_grandchild_is_killed_on_timeout(leash, alive):
    marker = f"{secrets.randbelow(500) + 3000}.{secrets.randbelow(9)}"
    res = leash(f"(setsid sleep {marker} >/dev/null 2>&1 &); sleep {marker}", timeout_s=0.5)
    assert res.timed_out
    assert alive(f"sleep {marker}") == []


# -- issue 19: SysV IPC, the kernel keyring, pid-taking syscalls, socket protocols, root's identity -----

def py(leash, code: str, head: str = "", **kw):
    """Run Python source (`head`, then `code` dedented) under the tool profile: the system interpreter, so
    nothing of Sentinel is imported inside. A traceback fails the test: an attack must run to be refused."""
    res = leash(f"/usr/bin/python3 -I -c {shlex.quote(head + textwrap.dedent(code))}", **kw)
    assert "Traceback" not in res.output, res.output
    return res


def as_tool_uid(leash, code: str) -> str:
    """Run Python source outside the sandbox as the uid the tools run as (same uid: only Leash stands in the way)."""
    proc = subprocess.run(["/usr/bin/python3", "-I", "-c", code], capture_output=True, text=True, timeout=20,
                          **_as(leash.uid))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _as(uid: int) -> dict:
    if uid == os.getuid():
        return {}
    try:
        return {"user": uid, "group": pwd.getpwuid(uid).pw_gid}
    except KeyError:
        return {"user": uid, "group": uid}  # a tool uid of root's: its gid is the same number


LIBC = "import ctypes, struct; l = ctypes.CDLL(None, use_errno=True); l.shmat.restype = ctypes.c_void_p\n"


def test_sysv_ipc_created_outside_is_out_of_reach(leash):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shm = libc.shmget(0, 4096, 0o1000 | 0o666)  # IPC_PRIVATE, IPC_CREAT; mode 0666: only Leash stands in the way
    queue = libc.msgget(0, 0o1000 | 0o666)
    sem = libc.semget(0, 1, 0o1000 | 0o666)
    assert min(shm, queue, sem) >= 0
    addr = libc.shmat(shm, None, 0)
    ctypes.memmove(addr, b"SECRET", 6)
    try:
        res = py(leash, head=LIBC, code=f"""
            a = l.shmat({shm}, None, 0)
            if a not in (None, 2**64 - 1):
                ctypes.memmove(a, b"PWNED!", 6)
            print("shmat", "DONE" if a not in (None, 2**64 - 1) else ctypes.get_errno())
            msg = ctypes.create_string_buffer(struct.pack("l", 1) + b"forged")
            print("msgsnd", "DONE" if l.msgsnd({queue}, msg, 6, 0o4000) == 0 else ctypes.get_errno())
            op = struct.pack("HhH", 0, 1, 0o4000)  # sembuf: V on semaphore 0, IPC_NOWAIT
            print("semop", "DONE" if l.semop({sem}, op, 1) == 0 else ctypes.get_errno())
            print("shmctl", "DONE" if l.shmctl({shm}, 0, None) == 0 else ctypes.get_errno())  # IPC_RMID
        """)
        refused = str(errno.EINVAL) if "ipc-ns" in res.applied else str(errno.EPERM)  # not there, or not allowed
        assert dict(line.split() for line in res.output.splitlines()) == {
            "shmat": refused, "msgsnd": refused, "semop": refused, "shmctl": refused}, res.output
        assert ctypes.string_at(addr, 6) == b"SECRET"
        buf = ctypes.create_string_buffer(64)
        assert libc.msgrcv(queue, buf, 56, 0, 0o4000) == -1 and ctypes.get_errno() == errno.ENOMSG
        assert libc.semctl(sem, 0, 12) == 0  # GETVAL: untouched
        assert libc.shmctl(shm, 2, ctypes.create_string_buffer(256)) == 0  # IPC_STAT: still there
    finally:
        libc.shmdt(ctypes.c_void_p(addr))
        libc.shmctl(shm, 0, None)
        libc.msgctl(queue, 0, None)
        libc.semctl(sem, 0, 0)


def test_posix_message_queue_and_shared_memory_created_outside_are_out_of_reach(leash):
    name = f"/sentinel-test-{secrets.token_hex(4)}".encode()
    shm = f"/dev/shm{name.decode()}"
    libc = ctypes.CDLL(None, use_errno=True)
    old = os.umask(0)
    try:
        mq = libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o666, None)
        with open(shm, "w") as f:  # what shm_open makes
            f.write("SECRET")
    finally:
        os.umask(old)
    assert mq >= 0, os.strerror(ctypes.get_errno())
    try:
        res = py(leash, head=LIBC, code=f"""
            q = l.mq_open({name!r}, 1)  # O_WRONLY
            print("mq_open", "DONE" if q >= 0 and l.mq_send(q, b"forged", 6, 0) == 0 else ctypes.get_errno())
            print("mq_unlink", "DONE" if l.mq_unlink({name!r}) == 0 else ctypes.get_errno())
            try:
                open({shm!r}, "r+").write("PWNED!"); print("shm DONE")
            except OSError as exc:
                print("shm", exc.errno)
        """)
        private = "ipc-ns" in res.applied  # not there; or refused (glibc reports mq_unlink's EPERM as EACCES)
        outcome = dict(line.split() for line in res.output.splitlines())
        assert outcome.pop("shm") in (str(errno.EACCES), str(errno.EROFS)), res.output  # Landlock, mounts as root
        assert outcome == {"mq_open": str(errno.ENOENT if private else errno.EPERM),
                           "mq_unlink": str(errno.ENOENT if private else errno.EACCES)}, res.output
        assert Path(shm).read_text() == "SECRET"
        attr = ctypes.create_string_buffer(64)  # struct mq_attr: flags, maxmsg, msgsize, curmsgs
        assert libc.mq_getattr(mq, attr) == 0 and struct.unpack_from("4l", attr)[3] == 0
    finally:
        os.close(mq)
        libc.mq_unlink(name)
        os.unlink(shm)


def test_ipc_inside_a_root_launch_stays_inside(leash):
    if os.geteuid() != 0:
        pytest.skip("without root, SysV IPC is refused outright (seccomp)")
    res = py(leash, head=LIBC, code="""
        i = l.shmget(0, 4096, 0o1000 | 0o600)
        print("SHM" if i >= 0 and l.shmat(i, None, 0) not in (None, 2**64 - 1) else ctypes.get_errno())
        print(open("/proc/sysvipc/shm").read().count("\\n") - 1)
    """)
    assert res.output.split() == ["SHM", "1"], res.output  # its own namespace: only its own segment


KEYCTL = ("import ctypes, sys; l = ctypes.CDLL(None, use_errno=True); l.syscall.restype = ctypes.c_long\n"
          "ADD, REQUEST, KEYCTL = {add}, {request}, {keyctl}\n")


def _keyctl_header() -> str:
    from sentinel.leash import seccomp

    return KEYCTL.format(add=seccomp.syscall_nr("add_key"), request=seccomp.syscall_nr("request_key"),
                         keyctl=seccomp.syscall_nr("keyctl"))


def test_kernel_keyring_is_not_shared(leash):
    desc, planted = f"sentinel-test-{secrets.token_hex(4)}", f"sentinel-planted-{secrets.token_hex(4)}"
    head = _keyctl_header()
    serial = int(as_tool_uid(leash, head + f"print(l.syscall(ADD, b'user', {desc.encode()!r}, b'SECRET', 6, -4))"))
    assert serial > 0  # in the user keyring (@u) of the tool's own uid
    try:
        res = py(leash, head=head, code=f"""
            buf = ctypes.create_string_buffer(64)
            attempts = {{"read": (KEYCTL, 11, {serial}, buf, 64),  # KEYCTL_READ
                        "search": (KEYCTL, 10, -4, b"user", {desc.encode()!r}, 0),  # KEYCTL_SEARCH in @u
                        "request": (REQUEST, b"user", {desc.encode()!r}, None, 0),
                        "add": (ADD, b"user", {planted.encode()!r}, b"x", 1, -4),
                        "session": (KEYCTL, 0, -3, 0)}}  # KEYCTL_GET_KEYRING_ID of the session keyring
            for name, args in attempts.items():
                print(name, "DONE" if l.syscall(*args) >= 0 else ctypes.get_errno())
        """)
        refused = str(errno.EPERM)
        assert dict(line.split() for line in res.output.splitlines()) == {
            "read": refused, "search": refused, "request": refused, "add": refused, "session": refused}, res.output
        assert "keyring" in res.applied
        found = as_tool_uid(leash, head + f"print(l.syscall(KEYCTL, 10, -4, b'user', {planted.encode()!r}, 0))")
        assert int(found) < 0  # nothing outlives the command
    finally:
        as_tool_uid(leash, head + f"l.syscall(KEYCTL, 21, {serial})")  # KEYCTL_INVALIDATE


@pytest.fixture
def victim(leash):
    """A process of the tool's own uid outside the sandbox."""
    proc = subprocess.Popen(["sleep", "60"], **_as(leash.uid))
    yield proc.pid
    proc.kill()
    proc.wait()


def test_pid_taking_syscalls_cannot_reach_outside(leash, victim):
    before = _settings_of(victim)
    everyone = "os.PRIO_USER, os.getuid()" if os.geteuid() == 0 else "os.PRIO_PROCESS, pid"  # only a throwaway uid
    res = py(leash, head=LIBC, code=f"""
        import os, resource, signal
        pid = {victim}
        raw = lambda nr, *args: None if l.syscall(nr, *args) >= 0 else ctypes.get_errno()
        attacks = {{
            "prlimit": lambda: resource.prlimit(pid, resource.RLIMIT_CPU, (0, 0)),
            "affinity": lambda: os.sched_setaffinity(pid, {{0}}),
            "scheduler": lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
            "param": lambda: os.sched_setparam(pid, os.sched_param(0)),
            "nice": lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
            "nice-all": lambda: os.setpriority({everyone}, 19),
            "ioprio": lambda: raw({_nr("ioprio_set")}, 1, pid, 3 << 13),
            "vm-read": lambda: raw({_nr("process_vm_readv")}, pid, 0, 0, 0, 0, 0),
            "kcmp": lambda: raw({_nr("kcmp")}, pid, os.getpid(), 0, 0, 0),
            "pidfd-getfd": lambda: raw({_nr("pidfd_getfd")}, os.pidfd_open(pid), 0, 0),
            "pidfd-signal": lambda: signal.pidfd_send_signal(os.pidfd_open(pid), signal.SIGSTOP),
            "proc-pidfd": lambda: signal.pidfd_send_signal(os.open(f"/proc/{{pid}}", os.O_DIRECTORY), signal.SIGSTOP),
        }}
        for name, attack in attacks.items():
            try:
                err = attack()
            except OSError as exc:
                err = exc.errno
            print(name, "DONE" if err is None else err)
    """)
    outcome = dict(line.split() for line in res.output.splitlines())
    assert set(outcome) == {"prlimit", "affinity", "scheduler", "param", "nice", "nice-all", "ioprio", "vm-read",
                            "kcmp", "pidfd-getfd", "pidfd-signal", "proc-pidfd"}, res.output
    assert set(outcome.values()) == {str(errno.EPERM), str(errno.ENOSYS)}, res.output
    assert _settings_of(victim) == before


def _settings_of(pid: int) -> tuple:
    """A process's limits, affinity, policy, nice and I/O priority, read from outside."""
    with open(f"/proc/{pid}/limits") as f:
        limits = f.read()
    ioprio = ctypes.CDLL(None, use_errno=True).syscall({"x86_64": 252, "aarch64": 31}[platform.machine()], 1, pid)
    return (limits, os.sched_getaffinity(pid), os.sched_getscheduler(pid), os.getpriority(os.PRIO_PROCESS, pid),
            ioprio)


def _nr(name: str) -> int:
    from sentinel.leash import seccomp

    return seccomp.syscall_nr(name)


def test_a_command_still_sets_its_own_limits_and_priority(leash):
    res = leash("ulimit -n 64 && ulimit -n && nice -n 5 nice && ionice -c 3 true && taskset -c 0 true && "
                "/usr/bin/python3 -c 'import os, resource; resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32)); "
                "os.sched_setaffinity(0, {0}); os.setpriority(os.PRIO_PROCESS, 0, 7); print(os.nice(0))'")
    assert res.exit_code == 0 and res.output.split() == ["64", "5", "7"], res.output


def test_other_protocols_and_listening_fail_with_network(leash, listener, networked):
    res = py(leash, f"""
        import socket
        inet, inet6, stream = socket.AF_INET, socket.AF_INET6, socket.SOCK_STREAM
        attempts = {{"mptcp": (inet, stream, 262), "sctp": (inet, stream, 132), "mptcp6": (inet6, stream, 262),
                    "vsock": (40, stream, 0)}}
        for name, args in attempts.items():
            try:
                socket.socket(*args).connect(("127.0.0.1", {networked}))
                print(name, "CONNECTED")
            except OSError as exc:
                print(name, exc.errno)
        s = socket.socket()
        try:
            s.listen(); print("listen LISTENING", s.getsockname()[1])
        except OSError as exc:
            print("listen", exc.errno)
        socket.create_connection(("127.0.0.1", {listener}), 2); print("proxy CONNECTED")
    """)
    outcome = dict(line.split()[:2] for line in res.output.splitlines())
    assert outcome == {"mptcp": "93", "sctp": "93", "mptcp6": "93", "vsock": "97", "listen": "13",
                       "proxy": "CONNECTED"}, res.output


def test_socket_pairs_and_routing_queries_work_without_network(leash):
    """Unix servers need their socket listed in the policy: tests/leash/test_unix_sockets.py."""
    res = py(leash, """
        import socket
        print(len(socket.if_nameindex()) > 0)
        a, b = socket.socketpair(); a.sendall(b"pair"); print(b.recv(4).decode())
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET); a.send(b"seq"); print(b.recv(4).decode())
    """)
    assert res.output.split() == ["True", "pair", "seq"], res.output

