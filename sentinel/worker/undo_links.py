"""Symbolic links in workspace checkpoints (sentinel/worker/undo.py): a link's entry, reading one, putting one back.

A link's entry is ["symlink", target, uid, gid]: its target text keyed as a path is (sentinel/worker/undo_paths.py:
a target that is not UTF-8 is kept byte for byte) and its owner; a link's mode means nothing on Linux and is not
kept. Nothing here follows a link: a link is read with readlinkat, and put back with symlinkat at a new name
renamed over the old one, so a file or link there is replaced, never written through.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from sentinel.jsontypes import JSON
from sentinel.tools.fs import OutsideRoot
from sentinel.worker import undo_paths

LINK = "symlink"  # an entry's first field: no sha256, and not the "" of an unstored file


def entry(target: str, st: os.stat_result) -> list[JSON]:
    """The entry of a link whose target text is `target` (os.fsdecode's form) and whose lstat is `st`."""
    return [LINK, undo_paths.key_of(target), st.st_uid, st.st_gid]


def is_link(value: JSON) -> bool:
    return isinstance(value, list) and len(value) == 4 and value[0] == LINK


def valid(value: JSON) -> bool:
    """A link's entry as this module writes it (the journal is the agent's to write)."""
    return (is_link(value) and isinstance(value, list) and isinstance(value[1], str) and target(value[1]) is not None
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value[2:]))


def target(key: str) -> str | None:
    """The target text a link entry's key writes; None when it is no key the checkpoints write."""
    text = undo_paths.unkey(key)
    try:
        return text if text and os.fsencode(text) else None
    except UnicodeError:
        return None


def read(fd: int, name: str) -> list[JSON] | None:
    """The entry of the link `name` in the directory `fd`; None when no link is there (or it changed while read)."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        return entry(os.readlink(name, dir_fd=fd), st) if stat.S_ISLNK(st.st_mode) else None
    except OSError:
        return None


def read_at(workspace: Path, key: str) -> list[JSON] | None:
    """The entry of the link `key` names; None when there is none (or its directory is out of reach)."""
    try:
        fd, name = undo_paths.parent(workspace, key)
    except (OSError, OutsideRoot):
        return None
    try:
        return read(fd, name)
    finally:
        os.close(fd)


def put(workspace: Path, key: str, want: list[JSON]) -> tuple[bool, list[JSON]]:
    """Make `key` the link `want` records (a valid entry), its directories made beneath the workspace; whether its
    owner is as recorded (a chown takes root), and its entry now. Raises OSError or OutsideRoot (a directory
    there is not replaced)."""
    text, uid, gid = target(str(want[1])), want[2], want[3]
    assert text is not None and isinstance(uid, int) and isinstance(gid, int)  # a valid entry
    owner = uid, gid
    fd, name = undo_paths.parent(workspace, key, create=True)
    try:
        st = _make(fd, name, text, owner)
    finally:
        os.close(fd)
    return (st.st_uid, st.st_gid) == owner, entry(text, st)


def _make(fd: int, name: str, text: str, owner: tuple[int, int]) -> os.stat_result:
    """A link to `text` made at a new name, given `owner` where this user may, then renamed over `name`; its lstat."""
    tmp = f".sentinel-undo-{os.urandom(6).hex()}"
    os.symlink(text, tmp, dir_fd=fd)
    try:
        st = os.stat(tmp, dir_fd=fd, follow_symlinks=False)
        if (st.st_uid, st.st_gid) != owner:
            with contextlib.suppress(OSError):
                os.chown(tmp, *owner, dir_fd=fd, follow_symlinks=False)
            st = os.stat(tmp, dir_fd=fd, follow_symlinks=False)
        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=fd)
        raise
    return st
