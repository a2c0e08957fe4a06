"""Whether config.yaml is known valid as it is now, without importing pydantic and its models.

    digest = config_stamp.current(home)
    if not config_stamp.valid(home, digest):    # unchanged since a full validation by this same code?
        config.load(home)                       # else validate in full (a ConfigError names the field)
        config_stamp.record(home, digest)       # the digest taken before: an edit meanwhile is not stamped

A listing (`sentinel runs`, `approvals`, `show`) must still refuse a broken config.yaml, but building every
settings model costs more than the rest of the command. The stamp is a digest of what decides validity:
config.yaml's bytes, the SENTINEL_* overrides, and the size and mtime of every source file of the package
(an upgrade or an edit of a settings model invalidates it). Only a successful validation writes it.

Beside the digest the stamp keeps the few values `sentinel status` shows (Facts), taken from that validation:

    facts = config_stamp.facts(home, digest)    # Facts, or None: validate and record(home, digest, facts)

They are read only from a stamp this user owns in a directory only they can write ($SENTINEL_HOME/state, which
no tool profile can reach: sentinel/leash/profile.py), the same place as the run registry and the approvals.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

OVERRIDES = ("SENTINEL_DEFAULT_MODEL", "SENTINEL_DEFAULT_AGENT", "SENTINEL_SANDBOX")
PACKAGE = Path(__file__).resolve().parent


def _sources(digest: "hashlib._Hash", folder: Path) -> None:
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                _sources(digest, Path(entry.path))
            elif entry.name.endswith(".py"):
                _source(digest, entry.path, entry.stat())


def _source(digest: "hashlib._Hash", path: str | os.PathLike[str], info: os.stat_result) -> None:
    digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())


def sources(*files: Path) -> str:
    """The size and mtime of each of `files`: what a stamp of work done by that code depends on."""
    digest = hashlib.sha256()
    for path in files:
        _source(digest, path, path.stat())
    return digest.hexdigest()


def current(home: Path) -> str:
    digest = hashlib.sha256()
    try:
        digest.update((home / "config.yaml").read_bytes())
    except FileNotFoundError:
        digest.update(b"\0absent")
    for name in OVERRIDES:
        digest.update(f"\0{name}={os.environ.get(name)}".encode())
    _sources(digest, PACKAGE)
    return digest.hexdigest()


@dataclass(frozen=True)
class Facts:
    """What `sentinel status` reads of a validated config.yaml (sentinel/local/engine.py config_facts)."""
    default_model: str
    default_agent: str | None
    sandbox: str
    tools: str
    muzzle: bool         # muzzle.enabled
    hosts_dir: str       # where the local model hosts' sockets and pids live (muzzle.layout.local_layout)
    notify: list[str]    # each notify target's label
    gate: bool           # gate.enabled
    rules_dir: str       # gate.rules_dir, relative to the home

    @classmethod
    def from_json(cls, data: object) -> "Facts | None":
        """The facts a stamp holds, or None when their shape is not this code's (written by another version)."""
        if not isinstance(data, dict) or set(data) != {f.name for f in dataclasses.fields(cls)}:
            return None
        strings = ("default_model", "sandbox", "tools", "hosts_dir", "rules_dir")
        if not all(isinstance(data[k], str) for k in strings) or not isinstance(data["default_agent"], (str, type(None))) \
                or not isinstance(data["muzzle"], bool) or not isinstance(data["gate"], bool) \
                or not isinstance(data["notify"], list) or not all(isinstance(x, str) for x in data["notify"]):
            return None
        return cls(**data)


def _stamp(home: Path, name: str) -> Path:
    return home / "state" / f"{name}.valid"


def _read(home: Path, name: str, *, own: bool = False) -> list[str]:
    """The stamp's lines (the digest first); none when it cannot be read, or (`own`) when it or its directory is
    not this user's own or others may write them."""
    path = _stamp(home, name)
    try:
        with open(path, encoding="utf-8") as f:
            if own and not (_private(os.fstat(f.fileno())) and _private(os.stat(path.parent))):
                return []
            return f.read().split("\n")
    except (OSError, UnicodeDecodeError):
        return []


def _private(info: os.stat_result) -> bool:
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def valid(home: Path, digest: str, name: str = "config") -> bool:
    return _read(home, name)[:1] == [digest]


def facts(home: Path, digest: str) -> Facts | None:
    """The Facts the last validation of config.yaml recorded, when it stamped `digest` (the config as it is now)."""
    lines = _read(home, "config", own=True)
    if lines[:1] != [digest] or len(lines) < 2:
        return None
    try:
        return Facts.from_json(json.loads(lines[1]))
    except ValueError:
        return None


def record(home: Path, digest: str, name: str = "config", *, create: bool = True, facts: Facts | None = None) -> None:
    """After a successful validation: best effort (a read-only state dir only means validating again).
    `create=False`: only into a state directory that exists and is this user's own. `facts`: config.yaml's."""
    try:
        stamp = _stamp(home, name)
        if not create and stamp.parent.stat().st_uid != os.geteuid():
            return
        stamp.parent.mkdir(parents=True, exist_ok=True)
        tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}")
        tmp.write_text(digest + (f"\n{json.dumps(dataclasses.asdict(facts))}" if facts else ""))
        os.replace(tmp, stamp)
    except OSError:
        pass
