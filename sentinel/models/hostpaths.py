"""Where a model host listens and reports: its socket's address and status file (without the host's own imports).

The model host (sentinel.models.host_process) binds `address(sock)` and writes `status_path(sock)`; its
keepers and clients (sentinel.models.hosts, `sentinel status`) read them and need none of its asyncio server.
"""

from __future__ import annotations

from pathlib import Path

from sentinel.unixsock import address

__all__ = ["address", "status_path"]


def status_path(sock: Path) -> Path:
    return sock.with_suffix(".json")
