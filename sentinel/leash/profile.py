"""The sandbox profiles, built from an agent's Leash policy into a launch spec, and which layers each gets.

    tool    read-write the workspace (and a private TMPDIR) only; read-only system paths and the
            Python install; nothing of $SENTINEL_HOME; TCP connect only to the egress proxy port,
            and only when the policy grants network; no UDP at all.
    worker  read-write the agent's ~/.sentinel and workspace; read-only system paths and the
            Sentinel package; TCP connect only to Muzzle's port and the egress proxy port.
    undo    a system-mode `sentinel undo` (as the agent's user): read-write the run's directory and its workspace
            only; read-only system paths and the Sentinel package; no network at all; the agent's rlimits.
    service the supervisor's Muzzle, as its own user: no Landlock or seccomp (it must reach any upstream).
    root service  the supervisor's watcher runner: stays root, no layer (it starts tools through Leash).

Layers, in the order sentinel/leash/confine.py applies them (root-only ones marked *):

              cgroup keyring caps* ipc-ns* mount-ro* rlimits uid no_new_privs seccomp landlock
    tool        x      x      x      x       x        x      x*1      x        x       x
    worker      x             x                       x      x        x        x-net   x
    undo        x             x                       x      x        x        x-net   x
    service     x             x                       x      x        x
    root svc    (none)

    *1 root without an agent user: a uid of the tool's own (the egress proxy's key for root's tools)

Unix sockets: none but connected pairs (seccomp), unless the policy lists `unix_sockets`; then each
connect() is decided by the keeper against that list (sentinel/leash/unix_allow.py). The worker
gets no list: it reaches the supervisor through the socket it inherits, Muzzle and the proxy by TCP.

Every path a profile grants is resolved (sentinel/leash/links.py `resolve`): a link the agent could have made is refused, never
followed, and the ruleset opens the result with no link in it (docs/leash.md, Links never widen a grant).

Landlock cannot carve a file out of a granted directory, so /etc is granted entry by entry
(never shadow, gshadow, sudoers, ssh host keys, ssl/private); `/proc` is granted read-only because
Landlock already denies ptrace-mode access (environ, mem) to processes outside the sandbox.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from sentinel import paths
from sentinel.errors import UsageError
from sentinel.leash import confine
from sentinel.leash.links import Owner, agent_writable, checked, resolve_all, walk
from sentinel.leash.policy import LeashPolicy

SYSTEM_READ = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
               "/proc", "/sys/devices/system/cpu", "/dev/urandom", "/dev/random"]
ETC_READ = ["alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "debian_version", "environment",
            "gai.conf", "gitconfig", "group", "host.conf", "hostname", "hosts", "inputrc", "ld.so.cache",
            "ld.so.conf", "ld.so.conf.d", "locale.alias", "locale.conf", "localtime", "lsb-release", "magic",
            "magic.mime", "mailcap", "manpath.config", "mime.types", "networks", "nsswitch.conf", "os-release",
            "passwd", "perl", "pip.conf", "profile", "profile.d", "protocols", "python3", f"python3.{sys.version_info[1]}",
            "resolv.conf", "services", "shells", "ssl/certs", "ssl/openssl.cnf", "terminfo", "timezone", "vim",
            "wgetrc", "xattr.conf"]
DEV_WRITE = ["/dev/null", "/dev/zero", "/dev/full"]
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass
class Profile:
    """Everything needed to confine one process: the paths and ports go into the Landlock ruleset
    (built by the caller); the keeper gets the rest (`keeper_fields`) with each request. `layers` says
    which layers of the one sequence (sentinel/leash/confine.py) the process gets."""

    name: str
    read: list[str]
    write: list[str]
    tcp_connect: list[int] = field(default_factory=list)
    network: bool = False
    rlimits: dict[str, int] = field(default_factory=dict)
    memory_bytes: int | None = None
    pids_max: int | None = None
    private_tmp: bool = True
    env: dict[str, str] = field(default_factory=dict)
    layers: tuple[str, ...] = confine.TOOL
    unix_sockets: list[str] = field(default_factory=list)  # the only unix sockets it may connect to
    untrusted: list[str] = field(default_factory=list)  # where the agent's tools write: no link there is followed
    owner: Owner | None = None  # system mode: the agent's user, whose links are not followed either

    def grant_read(self, *paths: str | Path) -> None:
        """Grant more paths read-only, resolved as the profile's own (`resolve`)."""
        self.read += resolve_all(paths, self.untrusted, self.owner)

    def keeper_fields(self) -> dict[str, object]:
        return {"network": self.network, "rlimits": self.rlimits, "memory_bytes": self.memory_bytes,
                "pids_max": self.pids_max, "unix_sockets": self.unix_sockets}


def python_paths() -> list[str]:
    """The interpreter install (and venv), read-only, so `python3` works inside the sandbox."""
    out = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    return sorted(p for p in out if p and p != "/")


def system_read() -> list[str]:
    return SYSTEM_READ + [f"/etc/{name}" for name in ETC_READ] + python_paths()


def rlimits(policy: LeashPolicy) -> dict[str, int]:
    lim = policy.limits
    mib = 1024 * 1024
    out = {}
    for name, value, scale in (("RLIMIT_CPU", lim.cpu_s, 1), ("RLIMIT_AS", lim.memory_mb, mib),
                               ("RLIMIT_FSIZE", lim.file_size_mb, mib), ("RLIMIT_NOFILE", lim.open_files, 1),
                               ("RLIMIT_NPROC", lim.processes, 1)):
        if value is not None:
            out[name] = value * scale
    out["RLIMIT_CORE"] = 0
    return out


def _real(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(str(path)))


@functools.lru_cache(1)
def _system_walks() -> tuple[tuple[str, list[str]], ...]:
    return tuple(walk(p) for p in system_read())


def system_real(untrusted: Sequence[str], owner: Owner | None = None) -> list[str]:
    """`system_read()` resolved: walked once per process (a tool's profile is built for every call), each link
    it followed checked again for this profile (the checks are all that differs between profiles)."""
    return [checked(path, walked, untrusted, owner) for path, walked in zip(system_read(), _system_walks())]


def _guard_home(write: list[str], home: Path) -> None:
    """Refuse a writable path that is, or contains, Sentinel's own state."""
    home_real = _real(home)
    for path in write:
        if home_real == path or home_real.startswith(path.rstrip("/") + "/"):
            raise UsageError(f"leash: writable path {path} contains the Sentinel home {home_real}; "
                             "use a workspace outside it")


def proxy_env(host: str, port: int) -> dict[str, str]:
    url = f"http://{host}:{port}"
    return {k: url for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy")}


def tool_profile(workspace: Path, policy: LeashPolicy, *, proxy: tuple[str, int], extra_read: Sequence[str] = (),
                 home: Path | None = None) -> Profile:
    write = agent_writable([workspace, *policy.read_write])
    _guard_home(write, home or paths.home())
    read = system_real(write) + resolve_all([*policy.read_only, *extra_read], write)
    prof = Profile("tool", read, write + resolve_all(DEV_WRITE, write), rlimits=rlimits(policy),
                   unix_sockets=resolve_all(policy.unix_sockets, write), untrusted=write)
    _limits(prof, policy)
    if policy.network:
        prof.network = True
        prof.tcp_connect = [proxy[1]]
        prof.env.update(proxy_env(*proxy))
    return prof


def worker_profile(sentinel_home: Path, workspace: Path, policy: LeashPolicy, *, muzzle_port: int,
                   proxy: tuple[str, int], owner: Owner | None = None) -> Profile:
    """The supervisor launches a run's worker under this (as the agent's user, `owner`)."""
    untrusted = agent_writable([workspace, *policy.read_write], owner)
    write = resolve_all([sentinel_home], untrusted, owner) + untrusted + resolve_all(DEV_WRITE, untrusted, owner)
    read = system_real(untrusted, owner) + resolve_all([paths.REPO_DIR, paths.PACKAGE_DIR, *policy.read_only],
                                                        untrusted, owner)
    prof = Profile("worker", read, write, tcp_connect=[muzzle_port, proxy[1]], network=True,
                   rlimits=rlimits(policy), private_tmp=True, layers=confine.WORKER,
                   unix_sockets=resolve_all(policy.unix_sockets, untrusted, owner),  # its tools' filter stacks on
                   untrusted=untrusted, owner=owner)                                  # its own
    _limits(prof, policy)
    prof.rlimits.pop("RLIMIT_CPU", None)  # a worker lives for the whole run
    return prof


def undo_profile(run_dir: Path, workspace: Path, policy: LeashPolicy, owner: Owner | None = None,
                 children: Sequence[Path] = ()) -> Profile:
    """The supervisor launches a system-mode undo under this (as the agent's user): it writes the run's checkpoints'
    journal and the workspace (and leases the directories of the child runs it undoes too, reading their
    checkpoints), nothing else of the agent's tree, and connects nowhere (no TCP port, no unix socket); the agent's
    rlimits and cgroup limits, CPU time included."""
    untrusted = agent_writable([workspace, *policy.read_write], owner)
    read = system_real(untrusted, owner) + resolve_all([paths.REPO_DIR, paths.PACKAGE_DIR], untrusted, owner)
    write = resolve_all([run_dir, *children, workspace, *DEV_WRITE], untrusted, owner)
    prof = Profile("undo", read, write, rlimits=rlimits(policy), private_tmp=False, layers=confine.WORKER,
                   untrusted=untrusted, owner=owner)
    _limits(prof, policy)
    return prof


def service_profile(name: str) -> Profile:
    """A service the supervisor keeps that is no agent (Muzzle): its own user, no core dumps."""
    return Profile(name, [], [], rlimits={"RLIMIT_CORE": 0}, private_tmp=False, layers=confine.SERVICE)


def root_service_profile(name: str) -> Profile:
    """A child the supervisor keeps as root (the watcher runner): a new session and pdeathsig, no layer."""
    return Profile(name, [], [], private_tmp=False, layers=confine.ROOT_SERVICE)


def _limits(prof: Profile, policy: LeashPolicy) -> None:
    if policy.limits.memory_mb:
        prof.memory_bytes = policy.limits.memory_mb * 1024 * 1024
    prof.pids_max = policy.limits.processes
