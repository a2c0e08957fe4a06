"""One name for the agent and its Linux user: normalization, the user account, and its ~/.sentinel tree.

    normalize("Bars Agent") -> "bars_agent"
    remove(name, store, user=True)          # `sentinel agent remove NAME --user`
    setup(display, store)   -> Identity     # `sentinel setup`: system mode's own needs (install.py), then
                                            # create (or reuse) the agent's user and write its tree
    init_leash(user, store) -> Identity     # `sentinel init --leash USER`: register an existing user

The tree (docs/architecture.md, State) is written by a process running as the agent's user, confined to its home
(sentinel/leash/spawn.py), never by root (docs/architecture.md, property 2). `python -m sentinel.supervisor.identity
SPEC_JSON` is that process. Existing files are never overwritten: re-running setup adds, it does not
rename or delete.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from sentinel.errors import SentinelError, UsageError
from sentinel.engine.status import RunStatus
from sentinel.leash import plain

if TYPE_CHECKING:
    from sentinel.engine.store import Store
    from sentinel.supervisor.registry import Agent

DEFAULT_NAME = "Naomi"
MAX_LEN = 32
USER_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,31}$")
RESERVED = frozenset("""
    root daemon bin sys sync games man lp mail news uucp proxy www_data backup list irc gnats nobody nogroup
    systemd_network systemd_resolve systemd_timesync systemd_coredump messagebus sshd _apt apt polkitd
    sentinel sentinel_muzzle muzzle leash supervisor operator admin administrator sudo wheel adm staff users
    shadow tty disk kmem dialout cdrom floppy audio video plugdev netdev input render kvm docker lxd
    guest user test postgres mysql redis nginx ftp git
""".split())
TREE_DIRS = ("agents", "skills", "tools", "memory", "runs", "workflows", "watchers", "workspace", "state", "tmp")


class Removed(TypedDict):
    """What `agent remove` did (its JSON answer and its audit record)."""

    agent: str
    uid: int | None
    runs_cancelled: list[str]
    user_deleted: bool
    egress: str
    by: str


@dataclass(frozen=True)
class Identity:
    name: str
    display_name: str
    home: str
    uid: int
    created: bool
    system: tuple[str, ...] = ()  # what setup found or did for system mode itself (install.prepare)

    def public(self) -> dict[str, object]:
        return {"name": self.name, "display_name": self.display_name, "user": self.name, "home": self.home,
                "uid": self.uid, "created": self.created, "system": list(self.system)}


# -- names ------------------------------------------------------------------------------------------

def normalize(display: str) -> str:
    """The Linux user name for a display name: ASCII, lowercase, [a-z0-9_], at most 32 characters."""
    ascii_text = unicodedata.normalize("NFKD", display).encode("ascii", "ignore").decode()
    name = re.sub(r"[^a-z0-9]+", "_", ascii_text.lower()).strip("_")
    return name[:MAX_LEN].rstrip("_")


def check_name(display: str) -> str:
    """The normalized name, or a one-line UsageError saying why it cannot be an agent's user."""
    name = normalize(display)
    if not name:
        raise UsageError(f"name {display!r}: has no letters or digits to make a Linux user name from")
    if not USER_NAME.match(name):
        raise UsageError(f"name {display!r}: the user name {name!r} must start with a letter")
    if name in RESERVED or name.startswith("systemd"):
        raise UsageError(f"name {display!r}: {name!r} is reserved; pick another name")
    return name


def _account(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


# -- setup ------------------------------------------------------------------------------------------

def setup(display: str, store: Store, home_base: Path, operator_group: str) -> Identity:
    """Create the agent's user (or reuse one Sentinel created), write its tree as that user, make it default."""
    from sentinel.supervisor import registry

    from sentinel.supervisor import install

    _need_root("setup")
    display = display.strip() or DEFAULT_NAME
    name = check_name(display)
    prepared = tuple(install.prepare())
    known = registry.get(store, name)
    pw = _account(name)
    if pw is not None and known is None:
        raise UsageError(f"name {display!r}: the Linux account {name!r} already exists and was not created by "
                         f"Sentinel; pick another name, or register it explicitly with `sentinel init --leash {name}`")
    created = pw is None
    if pw is None:
        home = home_base / name
        if _group_exists(name):
            raise UsageError(f"name {display!r}: a group {name!r} already exists; pick another name")
        if os.path.lexists(home):
            raise UsageError(f"name {display!r}: {home} already exists; pick another name")
        registry.register(store, name, display, home=str(home), origin="setup")
        pw = _useradd(name, display, home)
    registry.register(store, name, display, home=pw.pw_dir, origin="setup", uid=pw.pw_uid)
    registry.account(_registered(store, name), operator_group)  # unprivileged, not an operator
    write_tree(pw, name, display)
    ensure_leash_policy(name)
    apply_egress(store)
    registry.set_default(store, name)
    store.audit("agent_setup", {"agent": name, "display_name": display, "uid": pw.pw_uid, "created": created})
    return Identity(name, display, pw.pw_dir, pw.pw_uid, created, prepared)


def _registered(store: Store, name: str) -> Agent:
    """The agent just registered, read back: one that cannot be is an error, never an agent without an account."""
    from sentinel.supervisor import registry

    agent = registry.get(store, name)
    if agent is None:
        raise SentinelError(f"agent {name!r} was registered but cannot be read back from the store")
    return agent


def init_leash(user: str, store: Store, operator_group: str) -> Identity:
    """Register an existing Linux user as an agent (its name doubles as the head agent's name)."""
    from sentinel.supervisor import registry

    _need_root("init --leash")
    pw = _account(user)
    if pw is None:
        raise UsageError(f"--leash: no Linux user {user!r}; create one with `sentinel setup --name {user}`")
    if not USER_NAME.match(user) or user in RESERVED:
        raise UsageError(f"--leash: {user!r} is reserved or not a valid agent name")
    known = registry.get(store, user)
    display = known.display_name if known else user
    registry.register(store, user, display, home=pw.pw_dir, origin=known.origin if known else "init", uid=pw.pw_uid)
    registry.account(_registered(store, user), operator_group)
    write_tree(pw, user, display)
    ensure_leash_policy(user)
    apply_egress(store)
    if registry.default(store) is None:
        registry.set_default(store, user)
    store.audit("agent_init", {"agent": user, "uid": pw.pw_uid})
    return Identity(user, display, pw.pw_dir, pw.pw_uid, False)


def apply_egress(store: Store) -> str:
    """Per-UID nftables rules for every registered agent, installed idempotently: leashed UIDs reach only
    Muzzle and the egress proxy on loopback, and no UDP (DNS included). The table is replaced whole, so a
    uid that is no longer an agent's (removed, or its user deleted and the uid free for the next user) is
    pruned. SENTINEL_EGRESS=off skips it; SENTINEL_EGRESS_NETNS puts the table in a network namespace (tests)."""
    from sentinel import config as config_mod
    from sentinel.leash import nft
    from sentinel.supervisor import layout

    if os.environ.get("SENTINEL_EGRESS") == "off":
        return "off"
    if not nft.available():
        raise UsageError("egress: nft is not installed (apt-get install nftables), or set SENTINEL_EGRESS=off")
    cfg = config_mod.load(layout.etc_dir())
    nft.install(agent_uids(store), [cfg.muzzle.port, cfg.leash.proxy_port],
                netns=os.environ.get("SENTINEL_EGRESS_NETNS"))
    return "nftables"


def agent_uids(store: Store) -> list[int]:
    """The uids of registered agents whose Linux user still exists with the uid it was registered with."""
    from sentinel.supervisor import registry

    uids = set()
    for agent in registry.all_agents(store):
        pw = _account(agent.user)
        if pw is not None and agent.uid == pw.pw_uid:
            uids.add(pw.pw_uid)
    return sorted(uids)


def remove(name: str, store: Store, *, user: bool = False, by: str = "root") -> Removed:
    """Unregister an agent: its runs that are not finished are cancelled (approvals with them), the egress
    table loses its uid, and with `user` its Linux user, home and Leash policy go too. Refused while one
    of its runs is executing, and `user` only for a user `sentinel setup` created."""
    from sentinel.errors import NotFound
    from sentinel.supervisor import layout, registry

    _need_root("agent remove")
    agent = registry.get(store, name)
    if agent is None:
        known = ", ".join(a.name for a in registry.all_agents(store)) or "none"
        raise NotFound(f"NAME: no system agent {name!r} (registered: {known})")
    if user and agent.origin != "setup":
        raise UsageError(f"--user: {name} was an existing user registered with `init --leash`; Sentinel deletes "
                         "only users it created (remove without --user, then userdel it yourself)")
    rows = store.conn.execute("SELECT id, status FROM runs WHERE user=? AND status NOT IN ('done', "
                              "'done_unverified', 'failed', 'cancelled')", (name,)).fetchall()
    running = [r["id"] for r in rows if r["status"] == RunStatus.RUNNING]
    if running:
        raise UsageError(f"agent {name} has runs executing ({', '.join(running)}): cancel them first "
                         "(sentinel cancel RUN)")
    for row in rows:
        store.set_status(row["id"], RunStatus.CANCELLED, error=f"agent {name} was removed")
        store.cancel_approvals(row["id"])
    store.conn.execute("DELETE FROM agents WHERE name=?", (name,))
    if registry.default(store) == name:
        store.conn.execute("DELETE FROM meta WHERE key=?", (registry.DEFAULT_KEY,))
    egress = apply_egress(store)
    deleted = _userdel(name, layout.etc_dir() / "leash" / f"{name}.yaml") if user else False
    record = Removed(agent=name, uid=agent.uid, runs_cancelled=[r["id"] for r in rows], user_deleted=deleted,
                     egress=egress, by=by)
    store.audit("agent_removed", dict(record))
    return record


def _userdel(name: str, policy: Path) -> bool:
    pw = _account(name)
    if pw is None:
        return False
    proc = plain.admin(["userdel", "--remove", name])
    if proc.returncode not in (0, 12):  # 12: the home could not be removed (already gone)
        raise UsageError(f"userdel {name}: {(proc.stderr.strip().splitlines() or [str(proc.returncode)])[-1]}")
    if _group_exists(name):
        plain.admin(["groupdel", name])
    try:
        policy.unlink()
    except FileNotFoundError:
        pass
    return True


def _need_root(what: str) -> None:
    if os.geteuid() != 0:
        raise UsageError(f"{what} creates or registers a Linux user: run it as root (sudo sentinel {what})")


def _useradd(name: str, display: str, home: Path) -> pwd.struct_passwd:
    comment = "Sentinel agent " + re.sub(r"[:,=\n\r\\]", " ", display)[:60]
    home.parent.mkdir(parents=True, exist_ok=True)
    proc = plain.admin(["useradd", "--system", "--user-group", "--create-home", "--home-dir", str(home),
                        "--shell", "/usr/sbin/nologin", "--comment", comment, name])
    pw = _account(name)
    if proc.returncode != 0 or pw is None:
        raise UsageError(f"useradd {name} failed: {proc.stderr.strip() or proc.returncode}")
    return pw


def ensure_leash_policy(name: str) -> Path:
    """Leash's per-user policy file (root-owned, under /etc/sentinel/leash/): defaults unless it exists."""
    from sentinel.supervisor import layout

    path = layout.etc_dir() / "leash" / f"{name}.yaml"
    for directory in (path.parent.parent, path.parent):
        if not directory.exists():
            directory.mkdir(mode=0o755)
            os.chmod(directory, 0o755)  # readable by the agent (its tools read their policy), writable by root only
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(f"# Leash policy of agent {name} (root-owned: the agent cannot widen its own leash).\n"
                    "# See sentinel/leash/policy.py for every field.\nnetwork: false\n")
    return path


# -- writing the tree as the user ---------------------------------------------------------------------

def write_tree(pw: pwd.struct_passwd, name: str, display: str) -> None:
    """Run this module as the agent's user, confined to its home, to write its ~/.sentinel tree."""
    from sentinel import paths
    from sentinel.leash import confine, spawn
    from sentinel.leash.links import agent_writable, resolve_all
    from sentinel.leash.profile import DEV_WRITE, Profile, system_real

    spec = json.dumps({"name": name, "display_name": display})
    home = agent_writable([pw.pw_dir])
    prof = Profile("setup", system_real(home) + resolve_all([paths.REPO_DIR, paths.PACKAGE_DIR], home),
                   home + resolve_all(DEV_WRITE, home), rlimits={"RLIMIT_CORE": 0}, private_tmp=False,
                   layers=confine.WORKER, untrusted=home)
    env = {"HOME": pw.pw_dir, "USER": pw.pw_name, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        code, output = spawn.run(spawn.Launch([sys.executable, "-I", "-B", "-m", "sentinel.supervisor.identity", spec], env,
                                              pw.pw_uid, pw.pw_gid, pw.pw_dir, prof, (null, 1, 2), name="setup"))
    finally:
        os.close(null)
    if code != 0:
        last = (output.strip().splitlines() or [f"exit code {code}"])[-1]
        raise UsageError(f"writing {pw.pw_dir}/.sentinel as {pw.pw_name} failed: {last}")


def build_tree(home: Path, name: str, display: str) -> None:
    """Runs as the agent's user: the layout of docs/architecture.md (State), head profile, starter soul, default_agent."""
    from sentinel import paths

    os.chmod(home, 0o700)
    root = home / ".sentinel"
    root.mkdir(mode=0o700, exist_ok=True)
    for sub in TREE_DIRS:
        (root / sub).mkdir(mode=0o700, exist_ok=True)
    soul = (paths.data_dir("souls") / "default.md").read_text()
    profile = {"name": name, "display_name": display, "soul": "default"}
    _write_new(root / "agents" / f"{name}.yaml", _yaml(profile))
    _write_new(root / "agents" / f"{name}.soul.md", soul)
    _write_new(root / "user.md", "# The operator\n\nWhat I know about the person I work for.\n")
    _set_default_agent(root / "config.yaml", name)


def _yaml(data: object) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _write_new(path: Path, text: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _set_default_agent(path: Path, name: str) -> None:
    import yaml

    data: dict[object, object] = {}
    if path.exists():
        loaded = yaml.safe_load(path.read_text()) or {}
        if not isinstance(loaded, dict):
            raise UsageError(f"{path}: top level must be a mapping")
        data = loaded
    data["default_agent"] = name
    tmp = path.with_name(f".{path.name}.tmp")
    if os.path.lexists(tmp):
        os.unlink(tmp)
    _write_new(tmp, _yaml(data))
    os.rename(tmp, path)


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    try:
        build_tree(Path(os.environ["HOME"]), spec["name"], spec["display_name"])
    except (OSError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
