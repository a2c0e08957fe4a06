"""What root opens, reads or creates by a path the operator named, without going where another user pointed it.

    fd = open_read(path)              # a regular file, read-only; PathRefused for anything else
    text = read_head(path, limit)     # its first `limit` bytes
    append(path, data)                # one write at its end (made 0600, its missing directories 0755)
    make_dirs(path)                   # a directory (0755) and its missing parents

Used by the watcher child and the supervisor, which run as root: a watcher's `file` source and
`operatorGoalFile`, a `file` delivery target (watchers and notifications), an MCP server's `workdir:`.

As root, a link on the way is followed only if no user but root could have made or replaced it: owned by root,
in a directory owned by root that no one else may write (or a sticky one). That is the rule of
sentinel/leash/links.py's `Owner`, for every user at once; the walk is sentinel/pathwalk.py's `follow`. The path
so resolved is then opened with no link at all (openat2 RESOLVE_NO_SYMLINKS for a read; for a write or a
directory, each directory from `/` opened O_NOFOLLOW, as pathwalk.open_beneath does), so a link put in after the
check makes the open fail rather than land where it points. A file with other hard links is refused unless
its directory is written by root only (with fs.protected_hardlinks off, another user can hard-link a file it
cannot read into its own tree).
Not as root (local mode, where the agent is the operator's own uid), links are followed as the kernel does.

Either way only a regular file is read or appended to: it is opened O_NONBLOCK (a FIFO cannot hang the
caller) and refused unless fstat says S_ISREG (a FIFO, /dev/zero, a directory, a socket). How much is read is
the caller's limit. A refusal is a PathRefused: an OSError whose `strerror` is the one-line reason.
"""

from __future__ import annotations

import errno
import os
import stat

from sentinel.pathwalk import follow, open_beneath

AT_FDCWD = -100
READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY
APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class PathRefused(OSError):
    """A path root will not open: a link another user could have made, a file that is not a regular one."""

    def __init__(self, reason: str):
        super().__init__(errno.EPERM, reason)

    def __str__(self) -> str:
        return str(self.strerror)


def as_root() -> bool:
    return os.geteuid() == 0


def vetted(path: str) -> str:
    """`path` with each link on the way followed, once each is one only root could have made (the rest of a
    path that is not all there is taken as written)."""
    walked = follow(os.path.abspath(path), past_missing=False)
    if walked.looped:
        raise PathRefused("too many levels of links")
    for link in walked.links:
        if not root_only(link):
            raise PathRefused(f"goes through the link {link}, which a user other than root could have made; "
                              "root follows no such link (name its target instead)")
    return walked.real


def root_only(link: str) -> bool:
    """Could only root have made or replaced `link`? (links.Owner.could_change, for every user but root.)"""
    try:
        link_st, folder = os.lstat(link), os.lstat(os.path.dirname(link))
    except OSError:  # gone since the walk: changed under us, so someone could
        return False
    if link_st.st_uid != 0 or folder.st_uid != 0:
        return False
    return not folder.st_mode & _OTHERS_WRITE or bool(folder.st_mode & stat.S_ISVTX)


def open_read(path: str) -> int:
    """A read-only descriptor of the regular file `path` (see the module docstring)."""
    if not as_root():
        return _regular(os.open(path, READ | os.O_CLOEXEC), None)
    from sentinel.tools.fs import RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, openat2

    real = vetted(path)
    try:
        fd = openat2(AT_FDCWD, real, READ, 0, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    except OSError as exc:
        raise _raced(exc, real) from None
    return _regular(fd, real)


def read_head(path: str, limit: int) -> bytes:
    """At most the first `limit` bytes of the regular file `path`."""
    with os.fdopen(open_read(path), "rb") as f:
        return f.read(limit)


def append(path: str, data: bytes, mode: int = 0o600) -> None:
    """Append `data` to the regular file `path` in one write and fsync it; the file (`mode`) and its missing
    directories (0755) are made when missing, as root beneath `/` through no link (see the module docstring)."""
    if as_root():
        real = vetted(path)
        try:
            opened = open_beneath("/", real, APPEND, mode)
        except OSError as exc:
            raise _raced(exc, real) from None
        fd = _regular(opened, real)
    else:
        fd = _regular(open_beneath(None, path, APPEND | os.O_NOFOLLOW, mode), None)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: str, mode: int = 0o755) -> None:
    """The directory `path` and its missing parents, each made `mode` whatever the umask; as root each one is
    reached from `/` through no link (see the module docstring)."""
    if not as_root():
        if not os.path.isdir(path):
            os.makedirs(path, mode=mode, exist_ok=True)
            os.chmod(path, mode)
        return
    real = vetted(path)
    folder = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in filter(None, real.split("/")):
            made = _mkdir(part, mode, folder)
            try:
                step = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            except OSError as exc:
                raise _raced(exc, real) from None
            os.close(folder)
            folder = step
            if made:
                os.fchmod(folder, mode)
    finally:
        os.close(folder)


def _raced(exc: OSError, real: str) -> OSError:
    """What a failed open of the vetted `real` means: a link found on it now was put in after the check."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR) and follow(real, past_missing=False).links:
        return PathRefused("a link was put on the way after it was checked; root does not follow it")
    return exc


def _mkdir(name: str, mode: int, folder: int) -> bool:
    try:
        os.mkdir(name, mode, dir_fd=folder)
    except FileExistsError:
        return False
    return True


def _regular(fd: int, real: str | None) -> int:
    """`fd` if it is a regular file (and, as root, `real` being its path, one no other user could have hard-linked
    there); closed and PathRefused otherwise."""
    st = os.fstat(fd)
    reason = None
    if not stat.S_ISREG(st.st_mode):
        reason = f"not a regular file ({_kind(st.st_mode)}); only a regular file is read or written"
    elif real is not None and st.st_nlink > 1 and not _root_written(os.path.dirname(real)):
        reason = ("has other hard links and lies in a directory a user other than root can write; root opens no "
                  "such file")
    if reason is not None:
        os.close(fd)
        raise PathRefused(reason)
    return fd


def _root_written(folder: str) -> bool:
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return st.st_uid == 0 and not st.st_mode & _OTHERS_WRITE


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a file")
