"""Start a process the caller keeps, from a single-threaded root process: fork, confine, execve.

    spawn(Launch(...)) -> Spawned        a long-lived process (a run's worker, Muzzle, the watcher runner);
                                         the caller watches its pidfd (sentinel/leash/kept.py restarts one)
    run(Launch(...))   -> (code, output) a short job (setup's tree writer), waited for here

The forked child goes through the one confinement sequence (sentinel/leash/confine.py) with the
layers its profile names: a worker gets cgroup, rlimits, the capability bounding set and securebits,
the uid change, no_new_privs, seccomp and Landlock; Muzzle the same without seccomp and Landlock
(it is no agent and must reach any upstream); the watcher runner none (it stays root). Every layer the
profile names is enforced in the child; `sandbox: best_effort` only lets a kernel that lacks
Landlock, seccomp or cgroups start the process without them.

The Landlock ruleset is built here before the fork, by root, with the paths opened before any uid
change. `executable` (a path the child opens as root) is what execve runs, by descriptor, with argv[0]
unchanged: the worker's execute-only interpreter (sentinel/supervisor/interp.py). The child reports
over a close-on-exec pipe: `{"ok": ...}` just before execve, or an error, and the parent waits for
that pipe to close, so a spawn that returns has passed every layer. Never called with threads running
(checked): setuid in a multithreaded process is unsafe, and preexec_fn is never used.

(Tools go through the launcher, sentinel/leash/launch.py, whose keepers own one launched tree at a
time; this is the launch for a process its caller keeps, with the caller's own stdio.)
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import threading
from dataclasses import dataclass, field
from typing import Any

from sentinel.leash import cgroups, confine, lsm, seccomp, wire
from sentinel.leash.errors import LaunchFailed, SandboxUnavailable
from sentinel.leash.profile import Profile

EXIT_REFUSED = 126
HIGH_FD = 512


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    uid: int | None  # None (only for a profile without the uid layer): the caller's own
    gid: int | None
    cwd: str
    profile: Profile
    stdio: tuple[int, int, int]
    sandbox: str = "enforce"
    name: str = "sentinel-worker"
    executable: str | None = None


@dataclass
class Spawned:
    pid: int
    pidfd: int
    group: cgroups.Group | None
    applied: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    reaped: bool = False

    def signal(self, sig: int) -> None:
        """Signal the process itself, through its pidfd: never another process that took its pid after it was
        reaped (pids wrap; the supervisor spawns thousands)."""
        if self.reaped:
            return
        try:
            signal.pidfd_send_signal(self.pidfd, sig)
        except OSError:
            pass

    def kill(self) -> None:
        """SIGKILL the process, its process group and everything left in its cgroup. Before it is reaped only:
        until then its pid, and so its group id, cannot belong to anyone else."""
        if self.reaped:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)  # the group first, at once: no shell in it runs its next command
        except OSError:
            pass
        self.signal(signal.SIGKILL)
        if self.group is not None:
            self.group.kill_others()

    def reap(self) -> int:
        """Wait for the exited process; its exit code (negative: killed by that signal). Removes its cgroup."""
        try:
            _, status = os.waitpid(self.pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            code = -1
        self.reaped = True
        os.close(self.pidfd)
        if self.group is not None:
            self.group.kill_others()
            _remove(self.group)
        return code


def spawn(launch: Launch) -> Spawned:
    if threading.active_count() != 1:
        raise LaunchFailed("refusing to fork a process running threads (privileges are changed after fork)")
    layers = launch.profile.layers
    if "uid" in layers and not (launch.uid and launch.gid):
        raise LaunchFailed("refusing to launch as uid or gid 0")
    if "uid" not in layers and (launch.uid, launch.gid) != (None, None):
        raise LaunchFailed(f"profile {launch.profile.name} changes no uid: launch it without one")
    built, applied, missing = _ruleset(launch) if "landlock" in layers else (None, [], [])
    allow_tcp = _seccomp(launch, missing) if "seccomp" in layers else None
    group = _group(launch, applied, missing) if "cgroup" in layers else None
    if missing and launch.sandbox == "enforce" and set(missing) - {"cgroup"}:
        _cleanup(built, group)
        raise SandboxUnavailable(f"sandbox layers unavailable: {', '.join(missing)}; "
                                 "set `sandbox: best_effort` to run without them")
    plan = confine.Plan(cwd=launch.cwd, parent_pid=os.getpid(), layers=layers, root=os.geteuid() == 0,
                        group=group, rlimits=launch.profile.rlimits, uid=launch.uid, gid=launch.gid,
                        seccomp_allow_tcp=allow_tcp, seccomp_name="seccomp-net",
                        seccomp_unix=bool(launch.profile.unix_sockets),
                        ruleset_fd=built.fd if built else None, ruleset_layers=list(built.applied) if built else [])
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        os.close(status_r)
        _child(launch, plan, status_w)
    os.close(status_w)
    _cleanup(built, None)
    status = _read_status(status_r)
    if not status.get("ok"):
        _wait_failed(pid, group)
        raise SandboxUnavailable(status.get("error") or "the process did not start")
    return Spawned(pid, os.pidfd_open(pid), group, applied + status.get("applied", []), missing)


def run(launch: Launch, timeout_s: float = 60.0) -> tuple[int, str]:
    """Spawn, capture stdout+stderr, wait. For short jobs only; stdio[0] is used as stdin."""
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    launch.stdio = (launch.stdio[0], out_w, out_w)
    try:
        spawned = spawn(launch)
    finally:
        os.close(out_w)
    chunks = []
    with os.fdopen(out_r, "rb") as f:
        while chunk := f.read(65536):
            chunks.append(chunk)
    return spawned.reap(), b"".join(chunks).decode(errors="replace")


# -- parent helpers ---------------------------------------------------------------------------------

def _ruleset(launch: Launch) -> tuple[lsm.Built | None, list[str], list[str]]:
    prof = launch.profile
    try:
        built = lsm.build(lsm.RulesetSpec(read=list(prof.read), write=list(prof.write),
                                          tcp_connect=list(prof.tcp_connect)))
    except OSError:
        return None, [], ["landlock-fs", "landlock-tcp", "landlock-scope"]
    return built, [], list(built.missing)  # the child reports the applied ones


def _seccomp(launch: Launch, missing: list[str]) -> bool | None:
    """Whether the filter lets TCP out (its program made here, so the child finds it cached); None: no filter."""
    if not seccomp.supported():
        missing.append("seccomp-net")
        return None
    allow_tcp = bool(launch.profile.network)
    # the call confine.seccomp_program makes
    seccomp.program(allow_tcp, tool=False, private_ipc=False, unix=bool(launch.profile.unix_sockets))
    return allow_tcp


def _group(launch: Launch, applied: list[str], missing: list[str]) -> cgroups.Group | None:
    try:
        group = cgroups.Group.create(f"{launch.name}-{os.getpid()}-{os.urandom(3).hex()}")
    except OSError:
        group = None
    if group is None:
        missing.append("cgroup")
        return None
    applied += group.applied
    applied += group.set_limits(launch.profile.memory_bytes, launch.profile.pids_max)
    return group


def _cleanup(built: lsm.Built | None, group: cgroups.Group | None) -> None:
    if built is not None:
        os.close(built.fd)
    if group is not None:
        _remove(group)


def _remove(group: cgroups.Group) -> None:
    for d in group.dirs:
        try:
            d.rmdir()
        except OSError:
            pass


# untyped: a spawned child's status lines, JSON from another process (wire.read_status)
def _read_status(fd: int) -> dict[str, Any]:
    status = wire.read_status(fd)
    if "error" in status:
        status["ok"] = False
    return status


def _wait_failed(pid: int, group: cgroups.Group | None) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    if group is not None:
        _remove(group)


# -- the child (never returns) --------------------------------------------------------------------------

def _child(launch: Launch, plan: confine.Plan, status_w: int) -> None:
    try:
        exe = os.open(launch.executable, os.O_PATH | os.O_CLOEXEC) if launch.executable else None
        status_w, plan.ruleset_fd, exe = _arrange_fds(launch.stdio, status_w, plan.ruleset_fd, exe)
        confine.new_session()
        plan.early_errors = confine.early(plan.layers, plan.root)
        confine.apply(plan)
        if plan.uid is not None:
            _check_reachable(launch)
        _report(status_w, {"ok": True, "applied": plan.applied})
        os.execve(exe if exe is not None else launch.argv[0], launch.argv, launch.env)
    except confine.Refused as exc:
        _report(status_w, {"error": f"launch failed: {exc}"})
    except BaseException as exc:  # noqa: BLE001 - a forked child must never unwind into the supervisor
        detail = getattr(exc, "strerror", None) or str(exc)
        filename = getattr(exc, "filename", None)
        where = f" ({filename})" if filename else ""
        _report(status_w, {"error": f"launch failed: {type(exc).__name__}: {detail}{where}"})
    os._exit(EXIT_REFUSED)


def _check_reachable(launch: Launch) -> None:
    """As the new user: the interpreter and the package must be reachable, else one line naming the first
    path that is not, and the fix (an install under a home the user cannot enter is the usual cause)."""
    import pwd
    import sys

    from sentinel import paths

    wanted = [(os.path.realpath(launch.argv[0]), os.X_OK), (sys.prefix, os.R_OK | os.X_OK),
              (str(paths.PACKAGE_DIR), os.R_OK | os.X_OK)]
    for path, mode in wanted:
        blocked = _first_unreachable(path, mode)
        if blocked is not None:
            try:
                user = pwd.getpwuid(os.getuid()).pw_name
            except KeyError:
                user = f"uid {os.getuid()}"
            raise PermissionError(1, f"user {user} cannot reach {blocked} (needed for {path}); install Sentinel "
                                     "where every user can read it (e.g. /opt/sentinel/venv, "
                                     "`chmod -R a+rX` the install) or make that directory readable")


def _first_unreachable(path: str, mode: int) -> str | None:
    """The first directory on the way to `path` this process cannot enter, or `path` itself if its `mode`
    is refused; None when all is well."""
    parts = path.split("/")
    for i in range(2, len(parts)):
        directory = "/".join(parts[:i])
        if not os.access(directory, os.X_OK):
            return directory
    return None if os.access(path, mode) else path


def _arrange_fds(stdio: tuple[int, int, int], status_w: int, ruleset_fd: int | None,
                 exe: int | None) -> tuple[int, int | None, int | None]:
    """stdio onto 0-2; the status pipe, ruleset and executable kept (close-on-exec); every other fd closed."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD) for fd in stdio]
    status_w = fcntl.fcntl(status_w, fcntl.F_DUPFD_CLOEXEC, HIGH_FD + 3)
    if ruleset_fd is not None:
        ruleset_fd = fcntl.fcntl(ruleset_fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD + 4)
    if exe is not None:
        exe = fcntl.fcntl(exe, fcntl.F_DUPFD_CLOEXEC, HIGH_FD + 5)
    for target, fd in enumerate(high):
        os.dup2(fd, target)  # dup2 clears close-on-exec on the target: 0-2 are inherited
    keep = sorted({fd for fd in (status_w, ruleset_fd, exe) if fd is not None})
    low = 3
    for fd in keep:
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)
    return status_w, ruleset_fd, exe


# untyped: a status line for the spawner's pipe (JSON)
def _report(fd: int, message: dict[str, Any]) -> None:
    try:
        os.write(fd, json.dumps(message).encode() + b"\n")
    except OSError:
        pass
