"""File access confined to one directory tree with openat2(RESOLVE_BENEATH).

The kernel refuses any path that leaves the root (`..`, absolute symlinks,
symlinks pointing outside, magic links), so a symlink the agent planted can
never send a write elsewhere, and there is no check-then-use race.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
from pathlib import Path

_SYS_OPENAT2 = 437  # x86_64 and aarch64 share this number
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class OutsideRoot(ValueError):
    """The path names something outside the confined tree."""


def openat2(dir_fd: int, path: str, flags: int, mode: int = 0, resolve: int = RESOLVE_BENEATH) -> int:
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, resolve)
    try:
        name = os.fsencode(path)  # a name that is not UTF-8 comes as surrogate escapes (os.listdir): its own bytes
    except UnicodeEncodeError:
        raise FileNotFoundError(errno.ENOENT, "no file can have this name", path) from None
    fd = _libc.syscall(_SYS_OPENAT2, dir_fd, name, ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:  # read errno only after a failed return, never on its own
        err = ctypes.get_errno()
        if err == errno.EXDEV:
            raise OutsideRoot(path)
        raise OSError(err, os.strerror(err), path)
    return int(fd)


def relative(root: Path, path: str) -> str:
    """The path relative to root; absolute paths must already lie inside root."""
    if not path or "\x00" in path:
        raise OutsideRoot(path)
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(root)
        except ValueError:
            raise OutsideRoot(path) from None
    rel = str(p)
    return "." if rel in ("", ".") else rel


class Confined:
    """A directory tree that paths are resolved beneath."""

    def __init__(self, root: Path, resolve: int = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS):
        self.root = Path(root)
        self.resolve = resolve

    def _root_fd(self) -> int:
        return os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)

    def open(self, path: str, flags: int, mode: int = 0o644) -> int:
        root_fd = self._root_fd()
        try:
            return openat2(root_fd, relative(self.root, path), flags, mode, self.resolve)
        finally:
            os.close(root_fd)

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        """A file's bytes; a FIFO, socket or device is refused, never read (it could wait for ever)."""
        fd = self.open(path, os.O_RDONLY | os.O_NONBLOCK)
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as f:
            return f.read() if limit is None else f.read(limit)

    def write_bytes(self, path: str, data: bytes, mode: int = 0o644, exact_mode: bool = False) -> None:
        """Write atomically-enough for an agent: create parents beneath root, then the file (given `mode` even
        when it exists already, with `exact_mode`).

        Only the name asked for is written. A file with other names (hard links) is replaced by a new file under
        this name, so the others keep what they held: a write through a hard link would land on every name, and
        decisions are made on the path. A FIFO, socket or device there is refused, never opened for writing
        (that would wait for a reader, or write to the device)."""
        rel = relative(self.root, path)
        parent, _, name = rel.rpartition("/")
        if not name or name in (".", ".."):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        dir_fd = self.makedirs(parent or ".")
        try:
            fd = openat2(dir_fd, name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, mode, self.resolve)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                raise OSError(errno.EINVAL, "not a regular file", path)
            if st.st_nlink > 1:  # opened for writing proves it was ours to write; the other names are not
                os.close(fd)
                return self._replace(dir_fd, name, data, mode if exact_mode else stat.S_IMODE(st.st_mode))
            os.set_blocking(fd, True)
            os.ftruncate(fd, 0)
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "wb") as f:
            if exact_mode:
                os.fchmod(f.fileno(), mode)
            f.write(data)

    def _replace(self, dir_fd: int, name: str, data: bytes, mode: int) -> None:
        """A new file holding `data` renamed over `name` in `dir_fd`."""
        tmp = f".{name[:200]}.sentinel-{os.urandom(6).hex()}"
        fd = openat2(dir_fd, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, self.resolve)
        try:
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), mode)
                f.write(data)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise

    def makedirs(self, rel_dir: str) -> int:
        """Create each missing directory beneath root; returns an fd of the last one."""
        fd = self._root_fd()
        for part in [p for p in relative(self.root, rel_dir).split("/") if p not in ("", ".")]:
            try:
                nxt = openat2(fd, part, os.O_PATH | os.O_DIRECTORY, 0, self.resolve)
            except FileNotFoundError:
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = openat2(fd, part, os.O_PATH | os.O_DIRECTORY, 0, self.resolve)
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
            fd = nxt
        return int(fd)

    def listdir(self, path: str) -> list[tuple[str, bool, int]]:
        fd = self.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            out = []
            for name in sorted(os.listdir(fd)):
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                out.append((name, stat.S_ISDIR(st.st_mode), st.st_size))
            return out
        finally:
            os.close(fd)
