"""What the console knows is live: pending approvals and the runs registry, polled once for every open page,
and one run's events as they are journaled.

    engines = Engines(open_engine)           # an engine per blocking call, in a worker thread
    hub = Hub(engines, poll_s=0.25)          # started by the app; pages subscribe to its snapshots
    async for snap in hub.subscribe(): ...   # the current snapshot, then each changed one
    async for event in run_events(engines, hub, run_id, after=seq): ...

Everything comes from the engine protocol (`pending`, `runs`, `events`), so a decision made in the CLI, the
chat or another browser shows here as soon as the store has it. The hub polls only while a page listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable, Iterator, TypeVar

import anyio

from sentinel.engine.api import Engine
from sentinel.engine.events import Event
from sentinel.engine.rows import ApprovalRow, RunRow

RUNS_SHOWN = 500  # the newest runs the hub watches (the runs page lists these)
T = TypeVar("T")


class Engines:
    """Opens an engine for each blocking call: a LocalEngine holds one SQLite connection and must not be shared
    between threads; the supervisor's client is stateless, so `open` may hand out the same one."""

    def __init__(self, opener: Callable[[], Engine], mode: str):
        self.opener = opener
        self.mode = mode

    @contextlib.contextmanager
    def open(self) -> Iterator[Engine]:
        engine = self.opener()
        try:
            yield engine
        finally:
            engine.close()

    def run(self, fn: Callable[[Engine], T]) -> T:
        with self.open() as engine:
            return fn(engine)

    async def call(self, fn: Callable[[Engine], T]) -> T:
        return await anyio.to_thread.run_sync(self.run, fn)


@dataclass
class Snapshot:
    version: int = 0
    pending: dict[str, ApprovalRow] = field(default_factory=dict)   # approval id -> approval
    runs: dict[str, RunRow] = field(default_factory=dict)           # run id -> registry row, newest first
    error: str | None = None                                            # the last poll failed (supervisor gone)


def _changed(old: Snapshot, pending: dict[str, ApprovalRow], runs: dict[str, RunRow]) -> bool:
    if old.pending.keys() != pending.keys() or old.runs.keys() != runs.keys():
        return True
    return any(_mark(old.runs[k]) != _mark(row) for k, row in runs.items())


def _mark(row: RunRow) -> tuple[str, float]:
    return row.status, row.updated_at


class Hub:
    """Polls `pending()` and `runs()` while anyone subscribes; wakes subscribers when something changed."""

    def __init__(self, engines: Engines, poll_s: float):
        self.engines = engines
        self.poll_s = poll_s
        self.snapshot = Snapshot()
        self.listeners = 0
        self._cond: asyncio.Condition | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def cond(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._poll_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def refresh(self) -> Snapshot:
        """Poll now (a page being rendered wants the current state, not the last poll's)."""
        try:
            pending, runs = await self.engines.call(_read)
        except Exception as exc:  # the supervisor went away: say so on the page, keep the last state
            snap = self.snapshot
            if snap.error != str(exc):
                await self._publish(Snapshot(snap.version + 1, snap.pending, snap.runs, str(exc)))
            return self.snapshot
        if _changed(self.snapshot, pending, runs) or self.snapshot.error:
            await self._publish(Snapshot(self.snapshot.version + 1, pending, runs))
        return self.snapshot

    async def _publish(self, snap: Snapshot) -> None:
        async with self.cond:
            self.snapshot = snap
            self.cond.notify_all()

    async def _poll_forever(self) -> None:
        while True:
            if self.listeners:
                await self.refresh()
            await asyncio.sleep(self.poll_s)

    async def subscribe(self) -> AsyncIterator[Snapshot]:
        """The current snapshot, then every newer one (never the same version twice)."""
        self.listeners += 1
        try:
            if self.snapshot.version == 0:
                await self.refresh()
            seen = -1
            while True:
                async with self.cond:
                    await self.cond.wait_for(lambda: self.snapshot.version != seen)
                    snap = self.snapshot
                seen = snap.version
                yield snap
        finally:
            self.listeners -= 1

    async def run_changed(self, run_id: str, mark: tuple[str, float] | None) -> None:
        """Return once the run's registry row (status, updated_at) differs from `mark`."""
        async for snap in self.subscribe():
            row = snap.runs.get(run_id)
            if row is not None and _mark(row) != mark:
                return


def _read(engine: Engine) -> tuple[dict[str, ApprovalRow], dict[str, RunRow]]:
    pending = {a.id: a for a in engine.pending(all_hosts=True)}  # the console shows every host's
    runs = {r.id: r for r in engine.runs(limit=RUNS_SHOWN, all_hosts=True)}
    return pending, runs


async def follow(engines: Engines, run_id: str, after: int) -> AsyncIterator[Event]:
    """A run's durable events after `after`, as they are journaled, until it pauses or stops (the engine's
    `events(follow=True)`, drained in a thread; the thread stops at its next event once nobody listens)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Event | Exception | None] = asyncio.Queue()  # None: the stream ended
    stop = threading.Event()

    def put(item: Event | Exception | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the server is stopping
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def drain() -> None:
        try:
            with engines.open() as engine:
                stream = engine.events(run_id, after=after, follow=True)
                try:
                    for event in stream:
                        if stop.is_set():
                            break
                        if event.durable and event.run_id == run_id:  # a child's live events: on its own page
                            put(event)
                finally:
                    stream.close()  # type: ignore[attr-defined]  # a generator (the protocol says Iterator)
        except Exception as exc:
            put(exc)
        finally:
            put(None)

    threading.Thread(target=drain, name=f"console-follow-{run_id}", daemon=True).start()
    try:
        while (item := await queue.get()) is not None:
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        stop.set()


async def run_events(engines: Engines, hub: Hub, run_id: str, after: int) -> AsyncIterator[Event]:
    """A run's events after `after`, forever: followed while it executes, then again each time its registry
    row changes (a resume from the CLI, the chat or this console)."""
    while True:
        row = hub.snapshot.runs.get(run_id)
        mark = _mark(row) if row else None  # taken before following: a change during the follow re-follows
        async for event in follow(engines, run_id, after):
            after = max(after, event.seq)
            yield event
        await hub.run_changed(run_id, mark)
