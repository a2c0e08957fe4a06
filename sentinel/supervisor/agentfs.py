"""Reading an agent's files as root without following anything the agent planted.

Every path is opened beneath the agent's home with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
RESOLVE_NO_MAGICLINKS), must be a regular file owned by the agent's uid, and is only ever read. The
supervisor never writes here (docs/architecture.md, property 2): the worker, running as the agent, does.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sentinel.engine import journal
from sentinel.engine.records import Record
from sentinel.engine.state import JOURNAL, RunState
from sentinel.tools.fs import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, openat2

STRICT = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
MAX_JOURNAL = 256 * 1024 * 1024


def open_beneath(home: str | Path, rel: str, uid: int) -> int | None:
    """A read-only fd of home/rel if it is a regular file owned by uid; None otherwise."""
    try:
        root = os.open(home, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fd = openat2(root, rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, 0, STRICT)
    except (OSError, ValueError):
        return None
    finally:
        os.close(root)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
        os.close(fd)
        return None
    return fd


def list_beneath(home: str | Path, rel: str, uid: int) -> list[str]:
    """Entry names of the directory home/rel if it is one owned by uid; [] otherwise."""
    try:
        root = os.open(home, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        fd = openat2(root, rel, os.O_RDONLY | os.O_DIRECTORY, 0, STRICT)
    except (OSError, ValueError):
        return []
    finally:
        os.close(root)
    try:
        return sorted(os.listdir(fd)) if os.fstat(fd).st_uid == uid else []
    finally:
        os.close(fd)


def read_text(home: str | Path, rel: str, uid: int, limit: int = 64 * 1024) -> str | None:
    """The first `limit` bytes of home/rel as text, read as open_beneath allows; None when it may not be read."""
    fd = open_beneath(home, rel, uid)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(limit).decode(errors="replace")


def journal_rel(run_id: str) -> str:
    return f".sentinel/runs/{run_id}/{JOURNAL}"


def read_journal(home: str | Path, run_id: str, uid: int, offset: int = 0) -> tuple[list[Record], int]:
    """Records from byte `offset` on and the offset after the last whole line (a torn tail is left).
    A line that is no record (`records.parse`: bounded JSON of a known kind, typed keys) is skipped."""
    fd = open_beneath(home, journal_rel(run_id), uid)
    if fd is None:
        return [], offset
    with os.fdopen(fd, "rb") as f:
        f.seek(offset)
        data = f.read(MAX_JOURNAL)
    end = data.rfind(b"\n") + 1
    return journal.decode(data[:end]), offset + end


def replay(events: list[Record]) -> RunState:
    """The state a journal's records make (a run's state is replayed from its journal: the snapshot cache is
    the agent's, so it is not trusted); a record that does not fit the state is skipped."""
    state = RunState()
    for event in events:
        try:
            state.apply(event)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError):
            continue  # a well-typed record can still not fit (the agent owns this file): never a supervisor crash
    return state
