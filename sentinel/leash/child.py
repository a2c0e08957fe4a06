"""The launch child: a single-threaded fork of the keeper that confines itself, then execve.

The keeper forks it ahead of the request (so the fork is off the launch path); it then starts its
own session, resets signal dispositions, joins a new session keyring and, as root, locks
securebits, empties the capability bounding set and enters its own IPC namespace and a mount
namespace where everything is read-only; it rehearses the request path on a made-up plan (so the
copy-on-write faults of a fresh fork are taken now, not during the launch), and waits for its plan.
With the plan it continues in the order of docs/architecture.md:

    cgroups (the keeper's, inherited) -> rlimits -> [session keyring, IPC namespace, bounding set +
    securebits, done above] -> read-only mounts with the writable paths bound back (root; the
    namespace was entered above) -> setgroups([]) -> setresgid -> setresuid -> clear capabilities
    (root) -> pdeathsig again -> no_new_privs -> seccomp -> Landlock -> chdir -> execve

As root it always changes uid: to the agent's user, or else to a uid of the tool's own
(privs.tool_uid), with its writable paths idmapped so root's workspace works as before; a
tool never runs as root, whose uid every local service (the supervisor's operator socket, D-Bus,
systemd) would take for an operator.

It reports to the keeper over a close-on-exec status pipe: one JSON line with the layers applied
and missing, then either nothing (execve succeeded, the pipe closed) or an error line. It never
returns: every path ends in execve or os._exit.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from sentinel.leash import mounts, privs, seccomp, wire

EXIT_SANDBOX = 126
EXIT_EXEC = 127
RESET_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGXCPU, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM,
                 signal.SIGCHLD, signal.SIGHUP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)


@dataclass
class ChildPlan:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    stdio: tuple[int, int, int]
    status_fd: int
    keeper_pid: int
    rlimits: dict[str, int] = field(default_factory=dict)
    nproc_relative: bool = False
    root: bool = False                     # running as uid 0: lock securebits, drop and clear capabilities
    uid: int | None = None
    gid: int | None = None
    seccomp_allow_tcp: bool | None = None  # None: no seccomp filter (unsupported architecture)
    writable: list[str] = field(default_factory=list)
    idmap_fd: int | None = None            # root's workspace for a tool uid: see sentinel/leash/mounts.py
    idmap_error: str | None = None         # why there is no idmap_fd when one is needed
    expose: list[str] = field(default_factory=list)
    ruleset_fd: int | None = None
    ruleset_layers: list[str] = field(default_factory=list)
    enforce: bool = True
    resolved: str | None = None            # argv[0] found on PATH before the layers go on
    trace: dict[str, float] | None = None
    early_errors: dict[str, str] = field(default_factory=dict)  # request-independent layers that failed
    applied: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


class _Refused(Exception):
    pass


def prefork(sock: socket.socket, root: bool) -> None:
    """Body of the pre-forked child: early, request-independent steps, then wait for the plan. Never returns."""
    try:
        os.setsid()  # own session: no controlling terminal (no TIOCSTI), one process group to kill
        for sig in RESET_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        early = _early(root)
        _rehearse(root)
        msg, fds = wire.recv(sock, maxfds=8)
        if msg is not None:
            sock.close()
            plan = plan_from_wire(msg, fds, keeper_pid=os.getppid(), root=root)
            plan.early_errors = early
            run(plan)
    finally:
        os._exit(EXIT_SANDBOX)


def _rehearse(root: bool) -> None:
    """Run the pure-Python part of the request path once on a made-up plan, touching no kernel state.

    CPython writes to every object it uses (reference counts), so the first pass through the code in a
    fresh fork copies a few hundred shared pages (~0.4 ms measured). Copying only what this path
    touches, rather than every page (sentinel/leash/prefault.py), keeps the exec cheap: execve tears
    down private pages more slowly than shared ones."""
    sample = {"argv": ["true"], "env": {"PATH": "/usr/bin", "HOME": "/", "LANG": "C.UTF-8", "TMPDIR": "/tmp"},
              "cwd": "/", "rlimits": {"RLIMIT_CPU": 1, "RLIMIT_AS": 1 << 32, "RLIMIT_NPROC": 1, "RLIMIT_FSIZE": 1,
                                      "RLIMIT_NOFILE": 1, "RLIMIT_CORE": 0},
              "nproc_relative": True, "uid": None, "gid": None, "enforce": True, "trace": True,
              "seccomp_allow_tcp": False, "writable": ["/nonexistent"], "ruleset_layers": ["landlock-fs"]}
    plan = plan_from_wire(json.loads(json.dumps(sample)), [0, 1, 2, 3, 4], keeper_pid=0, root=root)
    privs.clamped_rlimits(_rlimits(plan))
    privs.capabilities()
    if seccomp.supported():
        privs.seccomp_fprog(_seccomp_program(plan))
    _resolve(plan.argv[0], plan.env)
    assert plan.trace is not None  # the sample asks for a trace
    plan.trace["child:start"] = time.monotonic()
    json.dumps({"applied": plan.ruleset_layers, "missing": plan.missing, "trace": plan.trace})


def _early(root: bool) -> dict[str, str]:
    """The request-independent layers, applied while waiting: {layer: error} for each that failed."""
    steps = [("keyring", privs.join_new_session_keyring)]
    if root:
        steps += [("caps", _drop_bounding), ("mount-ro", _readonly), ("ipc-ns", _own_ipc)]
    errors = {}
    for name, fn in steps:
        try:
            fn()
        except OSError as exc:
            errors[name] = exc.strerror or str(exc)
    return errors


def _readonly() -> None:
    if not mounts.supported():
        raise OSError(0, "not supported on this architecture")
    mounts.readonly_root()


def _own_ipc() -> None:
    privs.unshare(privs.CLONE_NEWIPC)


def _drop_bounding() -> None:
    privs.lock_securebits()
    privs.drop_bounding_set()


def plan_from_wire(msg: dict[str, Any], fds: list[int], keeper_pid: int, root: bool) -> ChildPlan:
    """fds: stdin, stdout, stderr, status pipe, then the Landlock ruleset if any. The idmap fd is
    the keeper's own, inherited through fork: the plan names it."""
    return ChildPlan(argv=msg["argv"], env=msg["env"], cwd=msg["cwd"], stdio=(fds[0], fds[1], fds[2]),
                     status_fd=fds[3], keeper_pid=keeper_pid, rlimits=msg.get("rlimits", {}),
                     nproc_relative=msg.get("nproc_relative", False), root=root, uid=msg.get("uid"),
                     gid=msg.get("gid"), seccomp_allow_tcp=msg.get("seccomp_allow_tcp"),
                     writable=msg.get("writable", []), idmap_fd=msg.get("idmap_fd"),
                     idmap_error=msg.get("idmap_error"), expose=msg.get("expose", []),
                     ruleset_fd=fds[4] if len(fds) > 4 else None,
                     ruleset_layers=msg.get("ruleset_layers", []), enforce=msg.get("enforce", True),
                     trace={} if msg.get("trace") else None)


def run(plan: ChildPlan) -> None:
    """Never returns."""
    try:
        _confine_and_exec(plan)
    except _Refused as exc:
        _report(plan.status_fd, {"error": str(exc)})
        os._exit(EXIT_SANDBOX)
    except BaseException as exc:  # noqa: BLE001 - a forked child must never unwind into the launcher
        _report(plan.status_fd, {"error": f"launch child failed: {type(exc).__name__}: {exc}"})
    os._exit(EXIT_SANDBOX)


def _confine_and_exec(plan: ChildPlan) -> None:
    if plan.trace is not None:
        plan.trace["child:start"] = time.monotonic()
    _stdio(plan)
    plan.resolved = _resolve(plan.argv[0], plan.env)
    _layer(plan, "rlimits", lambda: privs.set_rlimits(_rlimits(plan)))
    _layer(plan, "keyring", lambda: _early_layer(plan, "keyring"))
    if plan.root:
        _layer(plan, "ipc-ns", lambda: _early_layer(plan, "ipc-ns"))
        _layer(plan, "mount-ro", lambda: _mounts(plan))
        _layer(plan, "caps", lambda: _early_layer(plan, "caps"))
    if plan.idmap_fd is not None:
        os.close(plan.idmap_fd)
    if plan.uid is not None:
        uid, gid = plan.uid, plan.gid
        if gid is None:
            raise _Refused("a user switch needs a group id")
        _layer(plan, "uid", lambda: _switch_user(uid, gid))
    if plan.root:
        _layer(plan, "caps-cleared", _clear_caps)
    privs.set_pdeathsig(signal.SIGKILL)  # setresuid cleared it
    if os.getppid() != plan.keeper_pid:
        raise _Refused("keeper exited during launch")
    _layer(plan, "no_new_privs", privs.set_no_new_privs)
    if plan.seccomp_allow_tcp is not None:
        _layer(plan, "seccomp", lambda: privs.install_seccomp(_seccomp_program(plan)))
    if plan.ruleset_fd is not None:
        _landlock(plan)
    try:
        os.chdir(plan.cwd)
    except OSError as exc:
        raise _Refused(f"cannot enter working directory {plan.cwd}: {exc.strerror}") from None
    status: dict[str, Any] = {"applied": plan.applied, "missing": plan.missing}
    if plan.trace is not None:
        plan.trace["child:ready"] = time.monotonic()
        status["trace"] = plan.trace
    _report(plan.status_fd, status)
    _exec(plan)


def _layer(plan: ChildPlan, name: str, fn: Callable[[], object]) -> None:
    try:
        fn()
        plan.applied.append(name)
        if plan.trace is not None:
            plan.trace[f"child:{name}"] = time.monotonic()
    except OSError as exc:
        if plan.enforce:
            raise _Refused(f"sandbox layer {name} could not be applied: {exc.strerror or exc}") from None
        plan.missing.append(name)


def _stdio(plan: ChildPlan) -> None:
    for target, fd in enumerate(plan.stdio):
        if fd != target:
            os.dup2(fd, target)
        os.set_inheritable(target, True)
    keep = sorted(fd for fd in (plan.status_fd, plan.ruleset_fd, plan.idmap_fd) if fd is not None)
    low = 3
    for fd in keep:
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def _rlimits(plan: ChildPlan) -> dict[str, int]:
    limits = dict(plan.rlimits)
    if plan.nproc_relative and "RLIMIT_NPROC" in limits:
        # RLIMIT_NPROC counts every task of the real uid, so in the operator's own account it is set
        # above the tasks already running (a coarse backstop; the pids cgroup is the real bound).
        limits["RLIMIT_NPROC"] += _tasks_running()
    return limits


def _tasks_running() -> int:
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[1])
    except (OSError, IndexError, ValueError):
        return 4096


def _mounts(plan: ChildPlan) -> None:
    _early_layer(plan, "mount-ro")
    if plan.idmap_error:
        raise OSError(1, f"no idmapped mounts for the tool's uid: {plan.idmap_error}")
    mounts.bind_writable(plan.writable, plan.idmap_fd, plan.expose)


def _seccomp_program(plan: ChildPlan) -> bytes:
    # SysV IPC and POSIX message queues are refused unless the command has an IPC namespace of its own
    return seccomp.program(bool(plan.seccomp_allow_tcp), tool=True, private_ipc="ipc-ns" in plan.applied)


def _early_layer(plan: ChildPlan, name: str) -> None:
    if name in plan.early_errors:
        raise OSError(1, plan.early_errors[name])


def _switch_user(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise OSError(1, "uid/gid did not change")


def _clear_caps() -> None:
    privs.clear_capabilities()
    if any(privs.capabilities()):
        raise OSError(1, "capabilities still held")


def _landlock(plan: ChildPlan) -> None:
    from sentinel.leash import lsm

    assert plan.ruleset_fd is not None  # the caller checked
    try:
        lsm.restrict_self(plan.ruleset_fd)
        plan.applied.extend(plan.ruleset_layers)
    except OSError as exc:
        if plan.enforce:
            raise _Refused(f"sandbox layer landlock could not be applied: {exc.strerror}") from None
        plan.missing.extend(plan.ruleset_layers)
    os.close(plan.ruleset_fd)


def _resolve(name: str, env: dict[str, str]) -> str | None:
    """The first executable `name` on the command's PATH, found before the layers go on (each failed
    execve along PATH costs more once Landlock checks it); None to leave the search to execvpe."""
    if "/" in name:
        return None
    for entry in env.get("PATH", os.defpath).split(os.pathsep):
        if not os.path.isabs(entry):
            return None  # relative to a working directory not entered yet
        path = os.path.join(entry, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _exec(plan: ChildPlan) -> None:
    if plan.resolved:
        try:
            os.execve(plan.resolved, plan.argv, plan.env)
        except OSError:
            pass  # not executable as the command's user: let execvpe search on and report
    try:
        os.execvpe(plan.argv[0], plan.argv, plan.env)
    except OSError as exc:
        _report(plan.status_fd, {"exec_error": f"{plan.argv[0]}: {exc.strerror}"})
        os._exit(EXIT_EXEC)


def _report(fd: int, message: dict[str, Any]) -> None:
    try:
        os.write(fd, json.dumps(message).encode() + b"\n")
    except OSError:
        pass
