"""Where a model host listens and reports: its socket's address and status file (without the host's own imports).

The model host (sentinel.models.host_process) binds `address(sock)` and writes `status_path(sock)`; its
keepers and clients (sentinel.models.hosts, `sentinel status`) read them and need none of its asyncio server.
"""

from __future__ import annotations

import os
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


def status_path(sock: Path) -> Path:
    return sock.with_suffix(".json")
