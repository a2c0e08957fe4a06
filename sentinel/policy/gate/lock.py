"""The priority lock (docs/gate.md): one flock-based lockfile per session shared by the consumers of a local GPU.

    consumer      priority  waits
    judge         P0        never: a non-blocking try; proceeds whether or not it got the lock
    synthesizer   P1        up to 5 s, then skips
    accumulator   P2        up to 30 s (context.lock_timeout_s), then skips (catches up next Stop)
    scribe        P3        up to 10 s, then skips

Only backends that share a local accelerator (ollama, local) take part; CLI and remote
backends skip the lock entirely (`priority_lock(None, ...)` is a no-op that succeeds).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from typing import Iterator

from sentinel.pathwalk import open_beneath

WAIT_S = {"judge": 0.0, "synthesizer": 5.0, "accumulator": 30.0, "scribe": 10.0}
POLL_S = 0.05


class LockTimeout(Exception):
    """A waiting consumer did not get the lock in time: it skips its work."""


def _try(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


@contextlib.contextmanager
def priority_lock(path: str | None, consumer: str, wait_s: float | None = None,
                  beneath: str | None = None) -> Iterator[bool]:
    """Hold the lock for `consumer`; yields whether it is held. Raises LockTimeout for waiting consumers."""
    if path is None:
        yield False
        return
    limit = WAIT_S[consumer] if wait_s is None else wait_s
    try:
        fd = open_beneath(beneath, path, os.O_RDWR | os.O_CREAT, 0o644)  # no link followed in the repository
    except OSError:  # a link put in its place, an unwritable directory: the judge goes on; the others skip
        if consumer == "judge":
            yield False
            return
        raise LockTimeout(f"{path}: cannot be opened") from None
    try:
        held = _acquire(fd, consumer, limit)
        try:
            yield held
        finally:
            if held:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, consumer: str, limit: float) -> bool:
    if _try(fd):
        return True
    if consumer == "judge":
        return False  # P0 never waits
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        time.sleep(POLL_S)
        if _try(fd):
            return True
    raise LockTimeout(f"{consumer}: GPU lock busy for {limit:g}s")
