"""The one confinement sequence every Leash launch goes through, in a single-threaded process made for it.

Both ways of launching use it: the keeper's pre-forked launch child for tools (sentinel/leash/child.py)
and a kept process the supervisor watches (sentinel/leash/spawn.py: a run's worker, Muzzle, the tree
writer, the watcher runner). The order, as docs/architecture.md (Processes and privilege) states it:

    new session, signals reset -> cgroup -> session keyring -> capability bounding set + securebits ->
    IPC namespace -> read-only mounts, the writable paths bound back -> rlimits -> setgroups([]) ->
    setresgid -> setresuid -> clear the remaining capabilities -> pdeathsig again -> no_new_privs -> seccomp ->
    Landlock -> chdir -> execve

Which of those layers a process gets is data, the profile's `layers` (sentinel/leash/profile.py):
TOOL, WORKER, SERVICE (Muzzle) and ROOT_SERVICE (the watcher runner, which stays root and gets none).
The layers that need root (bounding set, IPC namespace, mounts, clearing capabilities) apply only
when the process is root. `early()` is the request-independent part (up to the read-only mounts):
the keeper's launch child runs it before its plan arrives; `apply()` is the rest, and records the
early layers' outcome in their place, so both paths report the same layer names in the same order.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from typing import Callable

from sentinel.leash import cgroups, mounts, privs, seccomp

TOOL = ("cgroup", "keyring", "caps", "ipc-ns", "mount-ro", "rlimits", "uid", "no_new_privs", "seccomp", "landlock")
WORKER = ("cgroup", "caps", "rlimits", "uid", "no_new_privs", "seccomp", "landlock")
SERVICE = ("cgroup", "caps", "rlimits", "uid", "no_new_privs")  # no agent: may reach any upstream
ROOT_SERVICE: tuple[str, ...] = ()  # stays root: starts tools itself, through Leash
EARLY = ("keyring", "caps", "ipc-ns", "mount-ro")
ROOT_ONLY = ("caps", "ipc-ns", "mount-ro")
RESET_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGXCPU, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM,
                 signal.SIGCHLD, signal.SIGHUP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGUSR1)


class Refused(Exception):
    """A layer the plan needs could not be applied (with `enforce`), or the launch cannot go on."""


@dataclass
class Plan:
    """One process's confinement: which layers, with what, and what became of each."""

    cwd: str
    parent_pid: int                        # the launch is refused if this process's parent changed
    layers: tuple[str, ...] = TOOL
    root: bool = False                     # running as uid 0: the root-only layers apply
    group: cgroups.Group | None = None     # joined here; None when the process already sits in its own
    rlimits: dict[str, int] = field(default_factory=dict)
    nproc_relative: bool = False
    uid: int | None = None                 # None: no uid change (the caller's own uid)
    gid: int | None = None
    seccomp_allow_tcp: bool | None = None  # None: no seccomp filter (unsupported architecture)
    seccomp_name: str = "seccomp"          # the worker's filter is reported as seccomp-net
    seccomp_unix: bool = False             # unix stream sockets, each connect() decided by the keeper
    listener_fd: int | None = None         # then: the filter's notification fd, for the keeper
    writable: list[str] = field(default_factory=list)
    idmap_fd: int | None = None            # root's workspace for a tool uid: see sentinel/leash/mounts.py
    idmap_error: str | None = None         # why there is no idmap_fd when one is needed
    expose: list[str] = field(default_factory=list)
    ruleset_fd: int | None = None
    ruleset_layers: list[str] = field(default_factory=list)
    enforce: bool = True
    trace: dict[str, float] | None = None
    early_errors: dict[str, str] = field(default_factory=dict)  # request-independent layers that failed
    applied: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def wants(self, layer: str) -> bool:
        return layer in self.layers and (self.root or layer not in ROOT_ONLY)


def new_session() -> None:
    """Own session (no controlling terminal, so no TIOCSTI; one process group to kill), default signals."""
    os.setsid()
    for sig in RESET_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


def early(layers: tuple[str, ...], root: bool) -> dict[str, str]:
    """The request-independent layers: {layer: error} for each that failed (apply() reports them)."""
    steps: list[tuple[str, Callable[[], None]]] = [("keyring", privs.join_new_session_keyring),
                                                   ("caps", _drop_bounding), ("ipc-ns", _own_ipc),
                                                   ("mount-ro", _readonly)]
    errors = {}
    for name, fn in steps:
        if name in layers and (root or name not in ROOT_ONLY):
            try:
                fn()
            except OSError as exc:
                errors[name] = exc.strerror or str(exc)
    return errors


def apply(plan: Plan) -> None:
    """Everything after early(), in order, up to and including chdir. Raises Refused."""
    if plan.group is not None and "cgroup" in plan.layers:
        plan.group.join()
    for name in EARLY:
        if plan.wants(name):
            _layer(plan, name, _early_step(plan, name))
    if "rlimits" in plan.layers:
        _layer(plan, "rlimits", lambda: privs.set_rlimits(_rlimits(plan)))
    if plan.idmap_fd is not None:
        os.close(plan.idmap_fd)
    if plan.uid is not None and "uid" in plan.layers:
        uid, gid = plan.uid, plan.gid
        if gid is None:
            raise Refused("a user switch needs a group id")
        _layer(plan, "uid", lambda: _switch_user(uid, gid))
    if plan.wants("caps"):
        _layer(plan, "caps-cleared", _clear_caps)
    privs.set_pdeathsig(signal.SIGKILL)  # setresuid cleared it
    if os.getppid() != plan.parent_pid:
        raise Refused("the launching process exited during the launch")
    if "no_new_privs" in plan.layers:
        _layer(plan, "no_new_privs", privs.set_no_new_privs)
    if plan.seccomp_allow_tcp is not None and "seccomp" in plan.layers:
        _layer(plan, plan.seccomp_name, lambda: _seccomp(plan))
    if plan.ruleset_fd is not None and "landlock" in plan.layers:
        _landlock(plan)
    try:
        os.chdir(plan.cwd)
    except OSError as exc:
        raise Refused(f"cannot enter working directory {plan.cwd}: {exc.strerror}") from None


def seccomp_program(plan: Plan) -> bytes:
    # SysV IPC and POSIX message queues are refused unless the command has an IPC namespace of its own
    return seccomp.program(bool(plan.seccomp_allow_tcp), tool=plan.seccomp_name == "seccomp",
                           private_ipc="ipc-ns" in plan.applied, unix=plan.seccomp_unix)


def _seccomp(plan: Plan) -> None:
    if plan.seccomp_unix and plan.seccomp_name == "seccomp":  # a tool's: its keeper decides each connect()
        plan.listener_fd = privs.install_seccomp_listener(seccomp_program(plan))
    else:
        privs.install_seccomp(seccomp_program(plan))


def _layer(plan: Plan, name: str, fn: Callable[[], object]) -> None:
    try:
        fn()
        plan.applied.append(name)
        if plan.trace is not None:
            plan.trace[f"child:{name}"] = time.monotonic()
    except OSError as exc:
        if plan.enforce:
            raise Refused(f"sandbox layer {name} could not be applied: {exc.strerror or exc}") from None
        plan.missing.append(name)


def _early_step(plan: Plan, name: str) -> Callable[[], None]:
    """An early layer's outcome, as a step; the read-only mounts then bind the plan's writable paths back."""
    def step() -> None:
        if name in plan.early_errors:
            raise OSError(1, plan.early_errors[name])
        if name == "mount-ro":
            _bind_writable(plan)
    return step


def _drop_bounding() -> None:
    privs.lock_securebits()
    privs.drop_bounding_set()


def _own_ipc() -> None:
    privs.unshare(privs.CLONE_NEWIPC)


def _readonly() -> None:
    if not mounts.supported():
        raise OSError(0, "not supported on this architecture")
    mounts.readonly_root()


def _bind_writable(plan: Plan) -> None:
    if plan.idmap_error:
        raise OSError(1, f"no idmapped mounts for the tool's uid: {plan.idmap_error}")
    mounts.bind_writable(plan.writable, plan.idmap_fd, plan.expose)


def _rlimits(plan: Plan) -> dict[str, int]:
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


def _switch_user(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise OSError(1, "uid/gid/groups did not change")


def _clear_caps() -> None:
    privs.clear_capabilities()
    if any(privs.capabilities()):
        raise OSError(1, "capabilities still held")


def _landlock(plan: Plan) -> None:
    from sentinel.leash import lsm

    assert plan.ruleset_fd is not None  # the caller checked
    try:
        lsm.restrict_self(plan.ruleset_fd)
        plan.applied.extend(plan.ruleset_layers)
    except OSError as exc:
        if plan.enforce:
            raise Refused(f"sandbox layer landlock could not be applied: {exc.strerror}") from None
        plan.missing.extend(plan.ruleset_layers)
    os.close(plan.ruleset_fd)
