"""What the operator handlers share: the reply types, a run's outcome and journal as the supervisor reads them,
following a run, and sending long lists in parts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeAlias

from sentinel.engine.rows import StoredRun
from sentinel.engine import lifecycle
from sentinel.engine.api import Outcome
from sentinel.engine.events import KINDS
from sentinel.engine.records import Record
from sentinel.engine.state import JOURNAL, RunState
from sentinel.engine.status import RunStatus
from sentinel.engine.store import Store
from sentinel.frames import reply
from sentinel.jsontypes import JSON, JSONObject
from sentinel.supervisor import agentfs, flows, registry
from sentinel.supervisor.hub import Client, Hub

# A reply frame: its result is whatever its handler built (rows' dicts, the store's objects), which the agent door
# reads and narrows before passing on, and frames.encode writes whole.
# untyped: a handler's own result objects (typed by their declaration's `result` on the client's side)
Reply: TypeAlias = "dict[str, Any] | None"
Handler: TypeAlias = Callable[[Hub, Client, JSONObject], Reply]

MAX_ROWS = 1000            # runs listed in one reply
PART_BYTES = 2 << 20       # one `part` frame of show: items up to about this size
ITEM_BYTES = 1 << 20       # one message or decision in a show reply; longer strings are cut


@dataclass
class Watch:
    """A client following a run: gets each journal event newer than what it has seen, of the run and of the
    child runs below it (each run numbers its own events, so each is deduplicated on its own)."""

    conn: Client
    seq: int = 0
    run_id: str = ""
    children: dict[str, int] = field(default_factory=dict)

    def event(self, event: JSONObject) -> None:
        """Durable events newer than the last one sent; transient ones (text deltas) as they come."""
        seq, run_id = event.get("seq"), str(event.get("run_id") or self.run_id)
        kind = KINDS.get(str(event.get("type")))
        if kind is None:
            return
        if kind.durable and isinstance(seq, int):
            own = run_id == self.run_id
            if seq <= (self.seq if own else self.children.get(run_id, 0)):
                return
            if own:
                self.seq = seq
            else:
                self.children[run_id] = seq
        self.conn.send({"event": event})


def follow(sup: Hub, conn: Client, run_id: str, following: bool) -> Reply:
    """With `following`, the client hears the run's events until it pauses or ends (the loop replies then)."""
    if not following:
        return reply(outcome(sup.store, run_id))
    conn.send({"started": run_id})
    sup.watch(conn, run_id)
    return None


def outcome(store: Store, run_id: str) -> JSONObject:
    row = store.get_run(run_id)
    pending = store.pending_approvals(run_id) if row["status"] == RunStatus.WAITING_APPROVAL else []
    now = lifecycle.promoted(store, Outcome(run_id, row["status"], row.get("output"), row.get("error"),
                                            pending[0].id if pending else None))
    return {"id": now.id, "status": now.status, "output": now.output, "error": now.error,
            "approval_id": now.approval_id}


# -- a run's journal, read as the agent's user wrote it ----------------------------------------------------

def _owner(store: Store, row: StoredRun) -> tuple[str, int] | None:
    import pwd

    agent = registry.get(store, row.get("user") or "")
    if agent is None:
        return None
    try:
        pw = pwd.getpwnam(agent.user)
    except KeyError:
        return None
    return pw.pw_dir, pw.pw_uid


def records(store: Store, row: StoredRun) -> list[Record]:
    if row.get("kind") == flows.KIND:  # walked by the supervisor: its journal is in the state directory
        from sentinel.engine import journal

        return journal.read(Path(row["run_dir"]) / JOURNAL)[0]
    owner = _owner(store, row)
    return agentfs.read_journal(owner[0], row["id"], owner[1])[0] if owner else []


def state(store: Store, row: StoredRun) -> RunState:
    return agentfs.replay(records(store, row))


# -- long lists in parts --------------------------------------------------------------------------------

def stream(conn: Client, name: str, items: list[JSONObject]) -> None:
    """Send `items` as `{"part": name, "items": [...]}` frames of about PART_BYTES each."""
    batch: list[JSON] = []
    size = 0
    for item in items:
        cut = fit(item, ITEM_BYTES)
        cost = len(json.dumps(cut, ensure_ascii=False, default=str))
        if batch and size + cost > PART_BYTES:
            conn.send({"part": name, "items": batch})
            batch, size = [], 0
        batch.append(cut)
        size += cost
    if batch:
        conn.send({"part": name, "items": batch})


def fit(item: JSON, budget: int) -> JSON:
    """`item` if it encodes within `budget` bytes; else a copy with its long strings cut (saying so)."""
    size = len(json.dumps(item, ensure_ascii=False, default=str))
    if size <= budget:
        return item
    cut = _cut(item, max(256, budget // 16))
    if len(json.dumps(cut, ensure_ascii=False, default=str)) <= budget:
        return cut
    note = f"[{size} bytes: too large to show here; the run's journal has it]"
    return {"role": item.get("role"), "content": note} if isinstance(item, dict) else note


def _cut(value: JSON, keep: int) -> JSON:
    if isinstance(value, str) and len(value) > keep:
        return value[:keep] + f"… [cut by the supervisor: {len(value) - keep} more characters]"
    if isinstance(value, dict):
        return {k: _cut(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v, keep) for v in value]
    return value
