"""Ports for servers a test starts later by number (Muzzle, PostgreSQL, a console): a port picked by binding port 0
and letting go is in the kernel's ephemeral range, where any other socket bound to port 0 or any outgoing
connection of a parallel test may take it before the server binds it ("Address already in use", seen in CI).
These come from below the ephemeral range, from a slice of their own for each xdist worker, and are never handed
out twice in one process."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

SLICE = 600  # ports per xdist worker
_given: set[int] = set()


def _block() -> range:
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    start = 10_000 + (index % max(1, (low - 10_000) // SLICE)) * SLICE
    return range(start, min(start + SLICE, low))


def free_port() -> int:
    """A loopback port nothing listens on now, outside the ephemeral range (see the module's docstring)."""
    block = _block()
    for port in random.sample(block, len(block)):
        if port in _given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    raise RuntimeError("no free loopback port below the ephemeral range")
