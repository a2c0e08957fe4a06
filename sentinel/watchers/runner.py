"""The watcher loop: poll each source when due, match, dedupe, fire hook sessions, drive the relay.

    runner = Runner(engine, store, config, watchers, run_command)
    runner.run(stop=lambda: False)      # `sentinel watch run` (local mode), or the supervisor's watcher child
    runner.fire(watcher, data)          # `sentinel watch fire ID` (no match, dedupe or cooldown)

A firing opens its relay contract (a row with a deadline) before its hook session starts, so a session
that dies, a runner that dies or a supervisor killed with -9 all leave the contract to the timer, which
is a query on that row and survives restarts. What each watcher remembers between polls (its last
value for `changed`, the dedupe keys it fired while the match held, its last firing for `cooldownS`)
is in `watch_state`: a restart neither fires a held condition again nor forgets a cooldown.
A dedupe key is remembered while the match keeps holding; when it lapses the watcher re-arms.
"""

from __future__ import annotations

import json
import selectors
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from sentinel.engine import relay
from sentinel.engine.store import Store, new_id
from sentinel.errors import SentinelError
from sentinel.jsontypes import JSON, JSONObject
from sentinel.watchers import envelope as env_mod
from sentinel.watchers.match import MISSING, Missing, holds, render
from sentinel.watchers.relay import Relay, fall_back
from sentinel.watchers.spec import Watcher
from sentinel.watchers.strategies import RunCommand, Source, SourceError, make_source

if TYPE_CHECKING:
    from sentinel.config import Config


class HookStarter(Protocol):
    """What the runner needs of an engine: start a hook session (the Engine protocol's `start` does)."""

    def start(self, task: str, *, model: str | None, agent: str | None, skills: Sequence[str],
              hook: str | None) -> object: ...


@dataclass
class Memory:
    """What one watcher remembers between polls (`watch_state.state`, JSON): its last value (for `changed`; MISSING
    before the first poll), the dedupe keys fired while the match held, and when it last fired (for `cooldownS`)."""

    last: JSON | Missing = MISSING
    keys: list[str] = field(default_factory=list)
    fired_at: float | None = None

    @classmethod
    def parse(cls, text: str) -> Memory:
        data: JSON = json.loads(text)
        state = data if isinstance(data, dict) else {}
        keys, fired = state.get("keys"), state.get("firedAt")
        return cls(state["last"] if "last" in state else MISSING,
                   [str(k) for k in keys] if isinstance(keys, list) else [],
                   float(fired) if isinstance(fired, (int, float)) else None)

    def dumps(self) -> str:
        state: JSONObject = {} if isinstance(self.last, Missing) else {"last": self.last}
        state["keys"] = [*self.keys]
        if self.fired_at is not None:
            state["firedAt"] = self.fired_at
        return json.dumps(state, default=str)


MAX_SLEEP_S = 1.0
KEYS_KEPT = 200


class Runner:
    def __init__(self, engine: HookStarter, store: Store, config: Config, watchers: list[Watcher], run_command: RunCommand,
                 log: Callable[[str], None] | None = None):
        self.engine = engine
        self.conn = store.conn
        self.settings = config.watchers
        self.watchers = {w.id: w for w in watchers if w.enabled}
        self.run_command = run_command
        self.relay = Relay(self.conn, self.settings, run_command)
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.sources: dict[str, Source] = {}

    # -- the loop --------------------------------------------------------------------------------

    def open(self) -> None:
        for watcher in self.watchers.values():
            try:
                self.sources[watcher.id] = make_source(watcher, self.run_command)
            except SourceError as exc:
                self.log(f"watcher {watcher.id}: {exc}")

    def close(self) -> None:
        for source in self.sources.values():
            source.close()

    def run(self, stop: Callable[[], bool] = lambda: False) -> None:
        self.open()
        sel = selectors.DefaultSelector()
        for source in self.sources.values():
            fd = source.fileno()
            if fd is not None:
                sel.register(fd, selectors.EVENT_READ, source)
        try:
            while not stop():
                self.tick()
                for key, _ in sel.select(self.sleep_s()):
                    key.data.readable()
        finally:
            sel.close()
            self.close()

    def sleep_s(self) -> float:
        now = time.time()
        due = [s.due_at for s in self.sources.values()] + [self.relay.next_due() or now + MAX_SLEEP_S]
        return max(0.0, min(min(due) - now, MAX_SLEEP_S))

    def tick(self, now: float | None = None) -> list[str]:
        """One turn: poll what is due, fire what matched, then the relay's timers and deliveries."""
        fired = []
        for wid, source in self.sources.items():
            now = time.time()
            if source.due_at > now and source.fileno() is None:
                continue
            try:
                items = source.poll(now)
            except SourceError as exc:
                self.log(f"watcher {wid}: {exc}")
                continue
            for data in items:
                fired += self.observe(self.watchers[wid], data, now)
        self.relay.tick()
        return fired

    # -- one observation -------------------------------------------------------------------------

    def observe(self, watcher: Watcher, data: JSON, now: float) -> list[str]:
        """Match, dedupe and cool down one observation; fire when it passes. Returns the firing ids."""
        memory = self.state(watcher.id)
        ok, found = holds(watcher.match, data, memory.last)
        value = memory.last = None if isinstance(found, Missing) else found   # a value that held is never MISSING
        verdict = self.verdict(watcher, memory, ok, data, value, now)
        self.save_state(watcher.id, memory)
        if verdict is None:
            return []
        return [self.fire(watcher, data, value, verdict, now)]

    def verdict(self, watcher: Watcher, memory: Memory, ok: bool, data: JSON, value: JSON,
                now: float) -> str | None:
        """The dedupe key to fire with, or None (no match, a duplicate, or cooling down)."""
        if not ok:
            memory.keys = []  # the condition lapsed: the next crossing fires again
            return None
        key = render(watcher.dedupeKey, env_mod.context(watcher, data, value, now))
        if key in memory.keys:
            return None
        if now - (memory.fired_at or 0) < watcher.cooldownS:
            return None
        memory.keys = (memory.keys + [key])[-KEYS_KEPT:]
        memory.fired_at = now
        return key

    def fire(self, watcher: Watcher, data: JSON, value: JSON = None, dedupe_key: str | None = None,
             now: float | None = None) -> str:
        """Open the relay contract, then start the hook session that answers it."""
        now = time.time() if now is None else now
        key = dedupe_key or render(watcher.dedupeKey, env_mod.context(watcher, data, value, now))
        envelope = env_mod.envelope(watcher, data, value, key, now)
        timeout_ms = watcher.hookResponseTimeoutMs or self.settings.hookResponseTimeoutMs
        firing_id = relay.open_firing(self.conn, firing_id=new_id("f-"), watcher=watcher.id, dedupe_key=key,
                                      envelope=envelope, fired_at=now, deadline=now + timeout_ms / 1000,
                                      fallback=self.settings.hookResponseFallbackMode != "none")
        self.log(f"watcher {watcher.id}: fired {firing_id} (key {key})")
        model = watcher.fire.model or self.settings.defaultHookModel
        skills = [watcher.skillId] if watcher.skillId else []
        try:
            self.engine.start(env_mod.first_message(envelope), model=model, agent=watcher.fire.agent, skills=skills,
                              hook=firing_id)
        except SentinelError as exc:  # a bad agent, model or skill: the operator still hears of the event
            self.log(f"watcher {watcher.id}: the hook session could not start: {exc}")
            fall_back(self.conn, relay.get(self.conn, firing_id), f"the hook session could not start: {exc}")
        return firing_id

    def wait(self, firing_id: str, poll_s: float = 0.05) -> JSONObject:
        """Drive the relay until this firing is settled (`watch fire` in the foreground)."""
        while (firing := relay.get(self.conn, firing_id))["status"] == relay.PENDING:
            self.relay.tick()
            time.sleep(min(poll_s, max(0.0, firing["deadline"] - time.time())))
        self.relay.tick()
        return firing

    # -- remembered state ------------------------------------------------------------------------

    def state(self, watcher_id: str) -> Memory:
        row = self.conn.execute("SELECT state FROM watch_state WHERE watcher=?", (watcher_id,)).fetchone()
        return Memory.parse(row[0]) if row else Memory()

    def save_state(self, watcher_id: str, memory: Memory) -> None:
        self.conn.execute("INSERT INTO watch_state (watcher, state, updated_at) VALUES (?, ?, ?) ON CONFLICT (watcher)"
                          " DO UPDATE SET state=excluded.state, updated_at=excluded.updated_at",
                          (watcher_id, memory.dumps(), time.time()))
