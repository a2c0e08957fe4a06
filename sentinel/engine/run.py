"""One run's durable handle: its directory, lease, journal and state.

    with Run.create(run_dir, records.Created(...)) as run:     # or Run.open(run_dir) to resume
        run.record(records.Assistant(message=...), ...)

A run is executed by at most one process at a time: opening it takes an
exclusive flock on runs/<id>/lock, which the kernel drops if the process dies
(even by kill -9), so a crashed run can be resumed at once.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Sequence

from sentinel.engine import journal as journal_mod
from sentinel.engine import records
from sentinel.engine.events import Event, Listener, Origin, Translator
from sentinel.engine.state import JOURNAL, RunState
from sentinel.errors import Busy

LOCK = "lock"
# A lease attempt that meets only probes' shared locks (`is_leased`) tries again; one that meets an executor's
# exclusive lock is Busy at once. A probe holds its lock for microseconds, unless a loaded machine deschedules it.
LEASE_PATIENCE_S = 2.0
LEASE_RETRY_S = 0.002
# A snapshot costs O(size of the run), so it is taken after a number of events that grows
# with the run: the cost per event stays flat and a resume replays at most a quarter of it.
SNAPSHOT_MIN_EVENTS = 50
SNAPSHOT_FRACTION = 4


class Run:
    def __init__(self, run_dir: Path, lock_fd: int, state: RunState):
        self.dir = run_dir
        self._lock_fd = lock_fd
        self.state = state
        self.journal = journal_mod.Journal(run_dir / JOURNAL)
        self.journal.seq = state.seq
        self.listeners: list[Listener] = []
        self.events = Translator(state.id, state.decisions, state.sessions, len(state.workspace_steps))
        self._since_snapshot = 0

    @staticmethod
    def lease(run_dir: Path) -> int:
        fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + LEASE_PATIENCE_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if Run._only_probed(fd) and time.monotonic() < deadline:
                    time.sleep(LEASE_RETRY_S)
                    continue
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise Busy(f"run {run_dir.name} is being executed by another process (pid {holder})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        return fd

    @staticmethod
    def _only_probed(fd: int) -> bool:
        """No executor holds the lease, only shared locks do: a shared lock of our own is granted (and let go
        at once, so that two leasers racing do not block each other's upgrade)."""
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True

    @staticmethod
    def is_leased(run_dir: Path) -> bool:
        try:
            fd = os.open(run_dir / LOCK, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)

    @classmethod
    def create(cls, run_dir: Path, created: records.Created, listeners: Sequence[Listener] = ()) -> "Run":
        """A new run, leased; `listeners` hear its `created` as it is journaled, and every event after it."""
        run_dir.mkdir(parents=True, mode=0o700)
        run = cls(run_dir, cls.lease(run_dir), RunState())
        run.listeners.extend(listeners)
        run.record(created)
        return run

    @classmethod
    def open(cls, run_dir: Path) -> "Run":
        fd = cls.lease(run_dir)  # lease first: the state read below is then final
        try:
            return cls(run_dir, fd, RunState.load(run_dir))
        except BaseException:
            os.close(fd)
            raise

    def record(self, *written: records.Record, sync: bool | None = None) -> None:
        for record in written:
            if not records.valid(record):  # a harness bug: a line the reader would skip on the next load
                raise TypeError(f"journal record {type(record).__name__} ({record.type!r}) does not match its kind "
                                "in records.py")
        for record in self.journal.append(*written, sync=sync):
            self.state.apply(record)
            for event in self.events.feed(record):
                self.emit(event)
        self._since_snapshot += len(written)
        if self._since_snapshot >= max(SNAPSHOT_MIN_EVENTS, self.state.seq // SNAPSHOT_FRACTION):
            self.snapshot()

    def emit(self, event: Event) -> None:
        """Hand one typed event to every listener (durable ones come from `record`; transient ones directly)."""
        for listener in self.listeners:
            listener(event)

    def base(self) -> Origin:
        """run_id and seq for a transient event emitted now."""
        return {"run_id": self.state.id, "seq": self.state.seq}

    def snapshot(self) -> None:
        if self.journal.seq != self.state.seq:
            return  # Ctrl-C landed between a journal write and its apply: the next load replays the tail
        self.journal.flush()  # the snapshot names an offset: the lines before it are durable first
        offset = os.fstat(self.journal._fd).st_size
        self.state.save(self.dir, offset)
        self._since_snapshot = 0

    def close(self) -> None:
        try:
            self.snapshot()
        finally:
            self.journal.close()
            os.close(self._lock_fd)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
