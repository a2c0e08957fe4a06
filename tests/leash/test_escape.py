"""The escape suite: every attempt fails under the tool profile while legitimate workspace work succeeds.

Each test runs in local mode (this uid; as root that is uid 0 with every capability dropped) and,
as root, in system mode (a throwaway leashed user).
"""

from __future__ import annotations

import os
import secrets
import socket
import time

import pytest


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


def test_tcp_only_to_the_proxy_port_with_network(leash, listener, sentinel_home):
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen(8)
    try:
        cfg = sentinel_home / "config.yaml"
        import yaml

        data = yaml.safe_load(cfg.read_text()) if cfg.exists() else {}
        data.setdefault("leash", {})["proxy_port"] = listener
        cfg.write_text(yaml.safe_dump(data))
        leash.policy(network=True, allow_domains=["example.com"])
        res = leash(CONNECT.format(listener) + "; " + CONNECT.format(other.getsockname()[1]) + "; echo $https_proxy")
        assert res.output.count("CONNECTED") == 1, res.output
        assert f"http://127.0.0.1:{listener}" in res.output
    finally:
        other.close()


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
