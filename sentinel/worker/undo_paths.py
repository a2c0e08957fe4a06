"""Workspace paths as the checkpoints key them (sentinel/worker/undo.py), and reaching them beneath the workspace.

A path is named by its key: workspace-relative, each byte of its name that is not UTF-8 written as NUL and two hex
digits (`x\\0ff.txt`). No file name holds a NUL, so a key names one path, and the journal holds only text. A
symlink's target is keyed the same way.

Every path is reached beneath the workspace without following a symlink on the way, even one within the workspace
(openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, sentinel/tools/fs.py; below a directory whose name is not
UTF-8, one name at a time with O_NOFOLLOW, since openat2 takes text): a key in a journal, which the agent can
write, never leads out of the workspace or through a link.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from sentinel.tools.fs import RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS, Confined, OutsideRoot, relative

DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def key_of(rel: str) -> str:
    """The key of a workspace-relative path (or link target) as os.fsdecode gives it: a byte that is not UTF-8 (a
    lone surrogate U+DC80-DCFF) written as NUL and two hex digits."""
    if rel.isascii():
        return rel
    return "".join(f"\0{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff" else c for c in rel)


def unkey(key: str) -> str | None:
    """The name (os.fsdecode's form) a key writes; None when the key is not in the one form `key_of` gives."""
    if "\0" not in key:
        name = key
    else:
        head, *rest = key.split("\0")
        if not all(len(p) >= 2 and re.fullmatch("[89a-f][0-9a-f]", p[:2]) for p in rest):
            return None
        name = head + "".join(chr(0xDC00 + int(p[:2], 16)) + p[2:] for p in rest)
    return name if key_of(name) == key else None


def path(workspace: Path, key: str) -> str | None:
    """The path a key names; None when it is no key the checkpoints write: not one workspace path beneath
    `workspace`, or not in the one form `key_of` gives."""
    name = unkey(key)
    return name if name is not None and key_at(workspace, name) == key else None


def key_at(workspace: Path, name: str) -> str | None:
    """`name` as the workspace-relative key the manifests use; None when it leaves the workspace (or is no name a
    file system can hold)."""
    try:
        rel = relative(workspace, name)
        os.fsencode(rel)
    except (OutsideRoot, UnicodeError):
        return None
    key = os.path.normpath(rel)
    return None if key == "." or key.startswith("../") or key == ".." else key_of(key)


def parent(workspace: Path, key: str, create: bool = False) -> tuple[int, str]:
    """An O_PATH fd of the directory holding what `key` names (made, with `create`), beneath the workspace and
    through no symlink, and its name in it. Raises OSError or OutsideRoot."""
    name = path(workspace, key)
    if name is None:
        raise OutsideRoot(key)
    above, _, last = name.rpartition("/")
    fs = Confined(workspace, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
    if key_of(above) == above:
        return (fs.makedirs(above) if create and above else fs.open(above or ".", os.O_PATH | os.O_DIRECTORY)), last
    fd = os.open(workspace, DIR)
    for part in above.split("/"):
        try:
            nxt = _subdir(fd, part, create)
        finally:
            os.close(fd)
        fd = nxt
    return fd, last


def _subdir(fd: int, name: str, create: bool) -> int:
    try:
        sub = os.open(name, DIR, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
        os.mkdir(name, 0o755, dir_fd=fd)
        sub = os.open(name, DIR, dir_fd=fd)
    if not stat.S_ISDIR(os.fstat(sub).st_mode):  # O_PATH with O_NOFOLLOW opens a symlink itself
        os.close(sub)
        raise OutsideRoot(name)
    return sub


def open_at(workspace: Path, key: str, flags: int) -> int:
    """The file `key` names, opened beneath the workspace with `flags` (never following a symlink at its name)."""
    fd, name = parent(workspace, key)
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)


def remove(workspace: Path, key: str, directory: bool = False) -> bool:
    """Unlink the name `key` names (a symlink itself, never what it names); with `directory`, remove the directory
    there if it is empty. Whether it was removed."""
    try:
        fd, name = parent(workspace, key)
    except (OSError, OutsideRoot):
        return False
    try:
        (os.rmdir if directory else os.unlink)(name, dir_fd=fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
