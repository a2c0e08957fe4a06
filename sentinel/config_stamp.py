"""Whether config.yaml is known valid as it is now, without importing pydantic and its models.

    digest = config_stamp.current(home)
    if not config_stamp.valid(home, digest):    # unchanged since a full validation by this same code?
        config.load(home)                       # else validate in full (a ConfigError names the field)
        config_stamp.record(home, digest)       # the digest taken before: an edit meanwhile is not stamped

A listing (`sentinel runs`, `approvals`, `show`) must still refuse a broken config.yaml, but building every
settings model costs more than the rest of the command. The stamp is a digest of what decides validity:
config.yaml's bytes, the SENTINEL_* overrides, and the size and mtime of every source file of the package
(an upgrade or an edit of a settings model invalidates it). Only a successful validation writes it.
"""

from __future__ import annotations

import hashlib
import os
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


def _stamp(home: Path, name: str) -> Path:
    return home / "state" / f"{name}.valid"


def valid(home: Path, digest: str, name: str = "config") -> bool:
    try:
        return _stamp(home, name).read_text() == digest
    except OSError:
        return False


def record(home: Path, digest: str, name: str = "config", *, create: bool = True) -> None:
    """After a successful validation: best effort (a read-only state dir only means validating again).
    `create=False`: only into a state directory that exists and is this user's own."""
    try:
        stamp = _stamp(home, name)
        if not create and stamp.parent.stat().st_uid != os.geteuid():
            return
        stamp.parent.mkdir(parents=True, exist_ok=True)
        tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}")
        tmp.write_text(digest)
        os.replace(tmp, stamp)
    except OSError:
        pass
