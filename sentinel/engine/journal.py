"""The append-only run journal: one JSON event a line, the source of truth for a run.

Each `append` is one write() of whole lines, so a crash (even kill -9) leaves at
most a torn last line, which `read` drops: a written line is in the kernel's page
cache at once. Power loss is what fdatasync is for, and it is paid where it
matters, not per line (group commit): an append holding a record that comes
before an effect outside the journal (a tool call `started`, a pause, a status, a
child run) or a person's input syncs, and with it every line written before it.
A record of the model's work (`model`, `assistant`, `decision`, `finished`, ...)
is synced by the next such record, by a snapshot and at close. Lost to a power
cut, such a tail is replayed as a crash would be: a call `started` without its
`finished` is reported interrupted, never silently run again. Events carry a
sequence number and a timestamp.

Failpoints (tests only): SENTINEL_FAILPOINT="TYPE:N" kills the process with
SIGKILL right after the N-th event of TYPE is durable, which is how the crash
tests stop a run at every step boundary.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from sentinel.engine.records import Record, encode, parse


# Records whose durability can wait for the next synced one (see the module's docstring).
DEFERRED = frozenset({"model", "assistant", "system", "decision", "finished", "safeguard", "warning",
                      "checkpoint", "compaction", "workspace_step", "contract", "verdict"})


_STAMPS = frozenset({"seq", "t"})  # what `append` gives every record, whatever it left out


class Journal:
    def __init__(self, path: Path):
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self.seq = 0
        self._failpoint = _parse_failpoint(os.environ.get("SENTINEL_FAILPOINT"))
        self._counts: dict[str, int] = {}
        self._unsynced = False

    def close(self) -> None:
        try:
            self.flush()
        finally:
            os.close(self._fd)

    def flush(self) -> None:
        """Make every line written so far durable (before a snapshot names an offset past them)."""
        if self._unsynced:
            os.fdatasync(self._fd)
            self._unsynced = False

    def append(self, *records: Record, sync: bool | None = None) -> list[Record]:
        """Write `records`, stamped with their seq and time, as one write(); `sync` None syncs when one of them
        is not DEFERRED. Returns the stamped records."""
        out, lines = [], []
        now = time.time()
        for record in records:
            self.seq += 1
            stamped = _stamped(record, self.seq, now)
            out.append(stamped)
            lines.append(encode(stamped))
        os.write(self._fd, _utf8("\n".join(lines) + "\n"))
        self._unsynced = True
        if sync if sync is not None else any(record.type not in DEFERRED for record in records):
            self.flush()
        self._maybe_fail(out)
        return out

    def _maybe_fail(self, records: list[Record]) -> None:
        if not self._failpoint:
            return
        kind, nth = self._failpoint
        for record in records:
            self._counts[record.type] = self._counts.get(record.type, 0) + 1
            if record.type == kind and self._counts[kind] == nth:
                os.kill(os.getpid(), signal.SIGKILL)


def _stamped(record: Record, seq: int, t: float) -> Record:
    """A copy of `record` with its seq and time (and no longer missing them). Copied field by field rather than
    through `dataclasses.replace`, which runs `__init__` again: this is on every step's path."""
    stamped = object.__new__(type(record))
    stamped.__dict__.update(record.__dict__, seq=seq, t=t)
    if record.absent:
        stamped.__dict__["absent"] = record.absent - _STAMPS
    return stamped


def _utf8(text: str) -> bytes:
    """`text` as UTF-8, a lone surrogate (a file name that is not UTF-8, as os.fsdecode gives it) written as its
    JSON escape (`\\udcff`): lossless, since `records.parse` reads it back as that surrogate, which os.fsencode
    turns back into the name's byte. Outside a JSON string no such character occurs (`records.encode` writes the
    structure in ASCII)."""
    return text.encode("utf-8", "backslashreplace")


def _parse_failpoint(spec: str | None) -> tuple[str, int] | None:
    if not spec:
        return None
    kind, _, nth = spec.partition(":")
    return kind, int(nth or 1)


def read(path: Path, offset: int = 0) -> tuple[list[Record], int]:
    """Records from byte `offset` on, and the offset after the last complete line. A line that is no
    record (`records.parse`) is skipped."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1  # a torn last line (crash mid-write) is ignored
    return decode(data[:end]), offset + end


def decode(data: bytes) -> list[Record]:
    """The records whole journal lines hold, in order."""
    return [r for r in (parse(line) for line in data.splitlines() if line.strip()) if r is not None]
