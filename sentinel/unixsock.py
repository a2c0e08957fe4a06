"""Unix sockets that are whole when they appear: every listener Sentinel makes (the supervisor's operator socket,
its agent door, a model host) is bound here.

    address(path) -> str            what to bind or connect `path` by, however deep it is
    listen(path, mode, gid=, backlog=, kind=) -> socket
                                    listening at `path` from the moment `path` names it

A socket bound at its own name is there, connectable by path, before its owner, mode and `listen()` are set: a
client in that window is refused (and takes the supervisor for absent), and a second starter probing for a stale
socket sees a refusal and unlinks a live one. `listen` binds a temporary name beside `path`, sets owner and mode,
listens, and only then renames it over `path` (replacing a stale socket in the same step), so `path` is always
either the old socket or a listening one with its final mode.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

_DIR_FDS: dict[str, int] = {}


def address(sock: Path) -> str:
    """A path to bind or connect `sock` by: itself, or through /proc/self/fd when it is longer than a Unix
    socket address may be (108 bytes; a deep $SENTINEL_HOME easily is)."""
    if len(os.fsencode(str(sock))) < 100:
        return str(sock)
    parent = str(sock.parent)
    if parent not in _DIR_FDS:
        _DIR_FDS[parent] = os.open(parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    return f"/proc/self/fd/{_DIR_FDS[parent]}/{sock.name}"


def listen(path: Path, mode: int, *, gid: int | None = None, backlog: int = 64,
           kind: int = socket.SOCK_STREAM) -> socket.socket:
    """A socket listening at `path` with `mode` (and, given `gid`, owned root:gid), which replaces what was there.
    The caller holds whatever makes it the one listener there (a lock, or a probe of the old socket)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.new")
    temporary.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, kind)
    old = os.umask(0o177)  # no moment when the socket is looser than 0600
    try:
        sock.bind(address(temporary))
        if gid is not None:
            os.chown(temporary, 0, gid, follow_symlinks=False)
        os.chmod(temporary, mode)
        sock.listen(backlog)
        os.rename(temporary, path)
    except BaseException:
        sock.close()
        temporary.unlink(missing_ok=True)
        raise
    finally:
        os.umask(old)
    return sock
