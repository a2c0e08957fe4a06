"""Checkpoint entries: making one from a file's stat, checking one read back, comparing two.

What an entry holds is described with the rest of undo in sentinel/worker/undo.py; a symlink's entry is
sentinel/worker/undo_links.py's. The recorder (undo_record.py) and the restore (undo_restore.py) both use these.
"""

from __future__ import annotations

import os
import re
import stat

from sentinel.jsontypes import JSON
from sentinel.worker import undo_links

UNSTORED = ""                    # the sha256 of an entry whose content was never stored
Entry = list[JSON]


def _entry(sha: str, mode: int, uid: int, gid: int, size: int, mtime_ns: int) -> Entry:
    """[sha256, mode, uid, gid]; an unstored one adds [size, mtime_ns], what tells a change of it."""
    head: Entry = [sha, stat.S_IMODE(mode), uid, gid]
    return head if sha != UNSTORED else [*head, size, mtime_ns]


def _stat_entry(sha: str, st: os.stat_result) -> Entry:
    return _entry(sha, st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns)


def _valid(entry: JSON) -> bool:
    """An entry as this module writes it (the journal and base manifest are the agent's to write)."""
    if not isinstance(entry, list) or len(entry) not in (2, 4, 6) or not isinstance(entry[0], str):
        return False
    if undo_links.is_link(entry):
        return undo_links.valid(entry)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in entry[1:]):
        return False
    if entry[0] == UNSTORED:
        return len(entry) == 6
    return len(entry) != 6 and _SHA.fullmatch(entry[0]) is not None


_SHA = re.compile("[0-9a-f]{64}")


def _unstored(entry: JSON) -> bool:
    return isinstance(entry, list) and bool(entry) and entry[0] == UNSTORED


def _same(a: JSON, b: JSON) -> bool:
    """Whether two entries hold the same content and mode (an unstored one: the same size and mtime; a link: the
    same target); an entry without owners (an older journal's) has only the permission bits."""
    if a is None or b is None:
        return a is b
    if not (_valid(a) and _valid(b)) or not isinstance(a, list) or not isinstance(b, list) or a[0] != b[0]:
        return False
    if a[0] == undo_links.LINK:
        return a[1] == b[1]
    mask = 0o7777 if len(a) > 2 and len(b) > 2 else 0o777
    return (_int(a[1]) & mask) == (_int(b[1]) & mask) and a[4:] == b[4:]


def _int(value: JSON) -> int:
    return value if isinstance(value, int) else -1


def _owner(entry: JSON) -> tuple[int, int] | None:
    if isinstance(entry, list) and len(entry) >= 4 and isinstance(entry[2], int) and isinstance(entry[3], int):
        return entry[2], entry[3]
    return None


def _differs(a: JSON, b: JSON) -> bool:
    """Content, mode or owner (when both entries have one)."""
    return not _same(a, b) or (_owner(a) is not None and _owner(b) is not None and _owner(a) != _owner(b))
