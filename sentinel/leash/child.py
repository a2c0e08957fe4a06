"""The launch child: a single-threaded fork of the keeper that confines itself, then execve.

The keeper forks it ahead of the request (so the fork is off the launch path); it then starts its
own session and applies the request-independent layers of the tool profile (session keyring and, as
root, the capability bounding set + securebits, its own IPC namespace, a mount namespace where
everything is read-only); it rehearses the request path on a made-up plan (so the copy-on-write
faults of a fresh fork are taken now, not during the launch), and waits for its plan. With the plan
it goes through the rest of the one sequence, sentinel/leash/confine.py (the cgroup is the keeper's,
inherited), then execve.

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
import socket
import time
from dataclasses import dataclass
from typing import Any

from sentinel.leash import confine, privs, seccomp, wire

EXIT_SANDBOX = 126
EXIT_EXEC = 127


@dataclass
class ChildPlan:
    """What the launch child execs, and how it is confined (`confinement`)."""

    argv: list[str]
    env: dict[str, str]
    stdio: tuple[int, int, int]
    status_fd: int
    confinement: confine.Plan
    resolved: str | None = None            # argv[0] found on PATH before the layers go on
    keeper_fd: int | None = None           # the plan's socket, kept to hand the keeper a seccomp listener


def prefork(sock: socket.socket, root: bool) -> None:
    """Body of the pre-forked child: early, request-independent steps, then wait for the plan. Never returns."""
    try:
        confine.new_session()
        early = confine.early(confine.TOOL, root)
        _rehearse(root)
        msg, fds = wire.recv(sock, maxfds=8)
        if msg is not None:
            plan = plan_from_wire(msg, fds, keeper_pid=os.getppid(), root=root)
            if plan.confinement.seccomp_unix:
                plan.keeper_fd = sock.fileno()
            else:
                sock.close()
            plan.confinement.early_errors = early
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
    conf = plan.confinement
    privs.clamped_rlimits(confine._rlimits(conf))
    privs.capabilities()
    if seccomp.supported():
        privs.seccomp_fprog(confine.seccomp_program(conf))
    _resolve(plan.argv[0], plan.env)
    assert conf.trace is not None  # the sample asks for a trace
    conf.trace["child:start"] = time.monotonic()
    json.dumps({"applied": conf.ruleset_layers, "missing": conf.missing, "trace": conf.trace})


# untyped: the keeper's plan off the Leash wire (JSON), checked field by field into ChildPlan here
def plan_from_wire(msg: dict[str, Any], fds: list[int], keeper_pid: int, root: bool) -> ChildPlan:
    """fds: stdin, stdout, stderr, status pipe, then the Landlock ruleset if any. The idmap fd is
    the keeper's own, inherited through fork: the plan names it."""
    conf = confine.Plan(cwd=msg["cwd"], parent_pid=keeper_pid, layers=confine.TOOL, root=root,
                        rlimits=msg.get("rlimits", {}), nproc_relative=msg.get("nproc_relative", False),
                        uid=msg.get("uid"), gid=msg.get("gid"), seccomp_allow_tcp=msg.get("seccomp_allow_tcp"),
                        seccomp_unix=msg.get("seccomp_unix", False),
                        writable=msg.get("writable", []), idmap_fd=msg.get("idmap_fd"),
                        idmap_error=msg.get("idmap_error"), expose=msg.get("expose", []),
                        ruleset_fd=fds[4] if len(fds) > 4 else None,
                        ruleset_layers=msg.get("ruleset_layers", []), enforce=msg.get("enforce", True),
                        trace={} if msg.get("trace") else None)
    return ChildPlan(argv=msg["argv"], env=msg["env"], stdio=(fds[0], fds[1], fds[2]), status_fd=fds[3],
                     confinement=conf)


def run(plan: ChildPlan) -> None:
    """Never returns."""
    try:
        _confine_and_exec(plan)
    except confine.Refused as exc:
        _report(plan.status_fd, {"error": str(exc)})
        os._exit(EXIT_SANDBOX)
    except BaseException as exc:  # noqa: BLE001 - a forked child must never unwind into the launcher
        _report(plan.status_fd, {"error": f"launch child failed: {type(exc).__name__}: {exc}"})
    os._exit(EXIT_SANDBOX)


def _confine_and_exec(plan: ChildPlan) -> None:
    conf = plan.confinement
    if conf.trace is not None:
        conf.trace["child:start"] = time.monotonic()
    _stdio(plan)
    plan.resolved = _resolve(plan.argv[0], plan.env)
    confine.apply(conf)
    _hand_listener(plan)
    # untyped: a status line for the keeper's pipe (JSON)
    status: dict[str, Any] = {"applied": conf.applied, "missing": conf.missing}
    if conf.trace is not None:
        conf.trace["child:ready"] = time.monotonic()
        status["trace"] = conf.trace
    _report(plan.status_fd, status)
    _exec(plan)


def _hand_listener(plan: ChildPlan) -> None:
    """Give the keeper the filter's notification fd (it answers every connect() from now on); the
    keeper reads it after the status line, so it is sent first."""
    listener = plan.confinement.listener_fd
    if plan.keeper_fd is None:
        return
    with socket.socket(fileno=plan.keeper_fd) as sock:
        wire.send(sock, {"listener": listener is not None}, [listener] if listener is not None else [])
    if listener is not None:
        os.close(listener)


def _stdio(plan: ChildPlan) -> None:
    for target, fd in enumerate(plan.stdio):
        if fd != target:
            os.dup2(fd, target)
        os.set_inheritable(target, True)
    conf = plan.confinement
    keep = sorted(fd for fd in (plan.status_fd, conf.ruleset_fd, conf.idmap_fd, plan.keeper_fd) if fd is not None)
    low = 3
    for fd in keep:
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


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


# untyped: a status line for the keeper's pipe (JSON)
def _report(fd: int, message: dict[str, Any]) -> None:
    try:
        os.write(fd, json.dumps(message).encode() + b"\n")
    except OSError:
        pass
