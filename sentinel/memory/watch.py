"""Which files of a folder tree changed since we last asked: inotify, read without blocking.

    watch = Watch.start(root)     # None where inotify is unavailable (the caller then rescans)
    watch.changes()               # relative paths touched since the last call, or None: rescan all

The recall index asks before every search, so a long-lived process (a run's worker) pays for one
full scan of the vault and then only for what changed, while a note edited by hand is still seen
by the very next search. Created, moved or deleted folders, a full event queue or a removed root
all answer None: the caller falls back to a full scan, which is always correct.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from pathlib import Path
from typing import Iterator

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x002, 0x004, 0x008
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x040, 0x080, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED, IN_ISDIR = 0x4000, 0x8000, 0x40000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF)
RESCAN = IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF
_EVENT = struct.Struct("iIII")

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


class Watch:
    def __init__(self, fd: int, root: Path):
        self.fd = fd
        self.root = root
        self.dirs: dict[int, str] = {}  # watch descriptor -> folder relative to root ("" for root)

    @classmethod
    def start(cls, root: Path) -> "Watch | None":
        fd = _lib().inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return None
        watch = cls(fd, root)
        try:
            for folder in _folders(root):
                watch._add(folder)
        except OSError:
            watch.close()
            return None
        return watch

    def _add(self, rel: str) -> None:
        path = os.fsencode(self.root / rel if rel else self.root)
        wd = _lib().inotify_add_watch(self.fd, path, MASK)
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self.dirs[wd] = rel

    def changes(self) -> set[str] | None:
        """Relative file paths with events since the last call; None when a full rescan is needed."""
        changed: set[str] = set()
        rescan = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            for wd, mask, name in _events(data):
                if mask & RESCAN or (mask & IN_ISDIR and mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)):
                    rescan = True
                elif name and wd in self.dirs:
                    folder = self.dirs[wd]
                    changed.add(f"{folder}/{name}" if folder else name)
        if rescan:
            self._rewatch()
            return None
        return changed

    def _rewatch(self) -> None:
        """After folders changed: drop every watch and watch the tree as it is now."""
        for wd in list(self.dirs):
            _lib().inotify_rm_watch(self.fd, wd)
        self.dirs.clear()
        try:
            for folder in _folders(self.root):
                self._add(folder)
        except OSError:
            pass  # the next call rescans again: every watch set up before the error still reports

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _events(data: bytes) -> Iterator[tuple[int, int, str]]:
    offset = 0
    while offset + _EVENT.size <= len(data):
        wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
        raw = data[offset + _EVENT.size: offset + _EVENT.size + length]
        yield wd, mask, os.fsdecode(raw.split(b"\0", 1)[0])
        offset += _EVENT.size + length


def _folders(root: Path) -> list[str]:
    """Every folder of the tree that holds notes (hidden folders such as .obsidian are skipped)."""
    out = [""]
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        base = os.path.relpath(dirpath, root)
        out += [d if base == "." else f"{base}/{d}" for d in dirnames]
    return out
