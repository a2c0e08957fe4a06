"""Whether each part of system mode can read the files it needs, checked as the user that part runs as.

    problems(config, agents) -> ["muzzle (user sentinel-muzzle) cannot read /etc/sentinel/config.yaml: ...", ...]
    exposed(config, agents)  -> ["agent naomi (user naomi) can read /etc/sentinel/config.yaml, ...", ...]

Muzzle reads the operator's config.yaml, its keys file and its state directory; a worker (one per agent
user) reads its Leash policy; both import Sentinel from this install. Each file is opened in a child
process that runs with the user's uid, gid and groups, as that part will (sentinel/leash/plain.py
`check_as`), so owners, modes, every directory on the way and any ACL or LSM all count. The converse is checked the same way: no agent's
user may open a secret (the operator's config, Muzzle's keys and token store, the supervisor's store). Needs root (the supervisor and `sudo sentinel status`).
"""

from __future__ import annotations

import os
import pwd
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from sentinel.config import Config

REPAIR_MUZZLE = "sudo sentinel muzzle setup-system repairs it"
REPAIR_INSTALL = "every user must be able to read the install (chmod -R a+rX it and its parent directories)"
REPAIR_POLICY = "sudo sentinel setup --name AGENT rewrites its mode (0644)"
REPAIR_STORE = "it must be root's alone (chmod 0600 it, 0700 its directory)"


def problems(config: "Config", agents: Iterable[str]) -> list[str]:
    """One line per file a part of system mode cannot read; empty when every part reads what it needs."""
    from sentinel import paths
    from sentinel.muzzle.layout import system_layout, system_user
    from sentinel.supervisor import layout

    muzzle = system_layout(config)
    install = [paths.PACKAGE_DIR / "__init__.py", Path(sys.prefix) / "pyvenv.cfg"]
    needs: list[tuple[str, str, Path, str]] = [
        ("muzzle", system_user(), muzzle.config_root / "config.yaml", REPAIR_MUZZLE),
        ("muzzle", system_user(), muzzle.state_dir, REPAIR_MUZZLE),
    ]
    if muzzle.keys_file is not None:
        needs.append(("muzzle", system_user(), muzzle.keys_file, REPAIR_MUZZLE))
    needs += [("muzzle", system_user(), p, REPAIR_INSTALL) for p in install]
    for agent in agents:
        needs.append((f"worker of {agent}", agent, layout.etc_dir() / "leash" / f"{agent}.yaml", REPAIR_POLICY))
        needs += [(f"worker of {agent}", agent, p, REPAIR_INSTALL) for p in install]
    lines, missing = [], set()
    for part, user, path, repair in needs:
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            if user not in missing:
                missing.add(user)
                lines.append(f"{part}: its user {user} does not exist ({REPAIR_MUZZLE})")
            continue
        if os.path.lexists(path) and not can_read(pw, path):
            lines.append(f"{part} (user {user}) cannot read {path}: {repair}")
    return lines


def exposed(config: "Config", agents: Iterable[str]) -> list[str]:
    """One line per secret an agent's user CAN open: the operator's config.yaml, Muzzle's keys and token
    store, the supervisor's store. Empty when every agent is kept out of all of them."""
    from sentinel.muzzle.layout import system_layout
    from sentinel.supervisor import layout

    muzzle = system_layout(config)
    secrets = [(muzzle.config_root / "config.yaml", REPAIR_MUZZLE), (muzzle.store_path, REPAIR_MUZZLE),
               (layout.db_path(), REPAIR_STORE)]
    if muzzle.keys_file is not None:
        secrets.insert(1, (muzzle.keys_file, REPAIR_MUZZLE))
    lines = []
    for agent in agents:
        try:
            pw = pwd.getpwnam(agent)
        except KeyError:
            continue
        for path, repair in secrets:
            if os.path.lexists(path) and can_read(pw, path):
                lines.append(f"agent {agent} (user {agent}) can read {path}, which agents must not: {repair}")
    return lines


def can_read(pw: pwd.struct_passwd, path: Path) -> bool:
    """Whether `pw`'s user can open `path` for reading (a directory: list it), tried as that user by Leash."""
    from sentinel.leash.plain import check_as

    return check_as(pw, lambda: _open(path))


def _open(path: Path) -> None:
    if os.path.isdir(path):
        os.listdir(path)
    else:
        os.close(os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK))
