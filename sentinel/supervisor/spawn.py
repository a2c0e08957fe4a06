"""Start a process as an agent's user from a single-threaded root process: fork, confine, execve.

    spawn(Launch(...)) -> Spawned        a long-lived process (a run's worker); the caller watches its pidfd
    run(Launch(...))   -> (code, output) a short job (setup's tree writer), waited for here

The forked child confines itself with Leash's layer functions in the order docs/architecture.md gives (Processes and privilege):

    join cgroup -> rlimits -> securebits + capability bounding set -> setgroups([]) -> setresgid ->
    setresuid -> clear capabilities -> pdeathsig again -> no_new_privs -> seccomp -> Landlock -> execve

The Landlock ruleset is built here before the fork, by root, with the paths opened before any uid
change. `executable` (a path the child opens as root) is what execve runs, by descriptor, with argv[0]
unchanged: the worker's execute-only interpreter (interp.py). `confine=False` skips seccomp and
Landlock for a service that is no agent (Muzzle, as its own user). The child reports over a close-on-exec pipe: `{"ok": ...}` just before execve, or an error,
and the parent waits for that pipe to close, so a spawn that returns has passed every layer.
Never called with threads running (checked): setuid in a multithreaded process is unsafe, and
preexec_fn is never used.

(The Leash launcher in sentinel/leash/launch.py runs one-shot tools and has no call yet that hands
back a long-lived process with an extra inherited socket; this is the smallest such spawn.)
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import threading
from dataclasses import dataclass, field
from typing import Any

from sentinel.leash import cgroups, lsm, privs, seccomp, wire
from sentinel.leash.errors import LaunchFailed, SandboxUnavailable
from sentinel.leash.profile import Profile

EXIT_REFUSED = 126
RESET_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGXCPU, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM,
                 signal.SIGCHLD, signal.SIGHUP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGUSR1)
HIGH_FD = 512


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    uid: int
    gid: int
    cwd: str
    profile: Profile
    stdio: tuple[int, int, int]
    sandbox: str = "enforce"
    name: str = "sentinel-worker"
    executable: str | None = None
    confine: bool = True


@dataclass
class Spawned:
    pid: int
    pidfd: int
    group: cgroups.Group | None
    applied: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def kill(self) -> None:
        """SIGKILL the process, its process group and everything left in its cgroup."""
        for fn, target in ((os.killpg, self.pid), (os.kill, self.pid)):
            try:
                fn(target, signal.SIGKILL)
            except OSError:
                pass
        if self.group is not None:
            self.group.kill_others()

    def reap(self) -> int:
        """Wait for the exited process; its exit code (negative: killed by that signal). Removes its cgroup."""
        try:
            _, status = os.waitpid(self.pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            code = -1
        os.close(self.pidfd)
        if self.group is not None:
            self.group.kill_others()
            _remove(self.group)
        return code


def spawn(launch: Launch) -> Spawned:
    if threading.active_count() != 1:
        raise LaunchFailed("refusing to fork a process running threads (privileges are changed after fork)")
    if launch.uid == 0 or launch.gid == 0:
        raise LaunchFailed("refusing to launch as uid or gid 0")
    built, applied, missing = _ruleset(launch) if launch.confine else (None, [], [])
    program = seccomp.program(bool(launch.profile.network)) if launch.confine and seccomp.supported() else None
    if launch.confine and program is None:
        missing.append("seccomp-net")
    group = _group(launch, applied, missing)
    if missing and launch.sandbox == "enforce" and set(missing) - {"cgroup"}:
        _cleanup(built, group)
        raise SandboxUnavailable(f"sandbox layers unavailable: {', '.join(missing)}; "
                                 "set `sandbox: best_effort` to run without them")
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(status_r)
        _child(launch, built.fd if built else None, program, group, status_w, parent)
    os.close(status_w)
    _cleanup(built, None)
    status = _read_status(status_r)
    if not status.get("ok"):
        _wait_failed(pid, group)
        raise SandboxUnavailable(status.get("error") or "the worker did not start")
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
    return built, list(built.applied), list(built.missing)


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

def _child(launch: Launch, ruleset_fd: int | None, seccomp: bytes | None, group: cgroups.Group | None,
           status_w: int, parent: int) -> None:
    applied: list[str] = []
    try:
        exe = os.open(launch.executable, os.O_PATH | os.O_CLOEXEC) if launch.executable else None
        status_w, ruleset_fd, exe = _arrange_fds(launch.stdio, status_w, ruleset_fd, exe)
        os.setsid()
        for sig in RESET_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        if group is not None:
            group.join()
        privs.set_rlimits(launch.profile.rlimits)
        privs.lock_securebits()
        privs.drop_bounding_set()
        _switch_user(launch.uid, launch.gid)
        privs.clear_capabilities()
        if any(privs.capabilities()):
            raise OSError(1, "capabilities still held after the uid change")
        privs.set_pdeathsig(signal.SIGKILL)  # setresuid cleared it
        if os.getppid() != parent:
            raise OSError(3, "the supervisor exited during the launch")
        privs.set_no_new_privs()
        if seccomp is not None:
            privs.install_seccomp(seccomp)
            applied.append("seccomp-net")
        if ruleset_fd is not None:
            lsm.restrict_self(ruleset_fd)
            os.close(ruleset_fd)
        os.chdir(launch.cwd)
        _check_reachable(launch)
        _report(status_w, {"ok": True, "applied": ["rlimits", "caps", "uid", "no_new_privs", *applied]})
        os.execve(exe if exe is not None else launch.argv[0], launch.argv, launch.env)
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


def _switch_user(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise OSError(1, "uid/gid/groups did not change")


def _report(fd: int, message: dict[str, Any]) -> None:
    try:
        os.write(fd, json.dumps(message).encode() + b"\n")
    except OSError:
        pass
