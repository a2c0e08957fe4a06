"""Relay contracts: one row per watcher firing, with a deadline, settled exactly once.

    firing = relay.open_firing(conn, firing_id=f, watcher="eth", dedupe_key="eth-low", envelope=env, fired_at=now,
                               deadline=now + timeout, fallback=True)
    relay.link(conn, firing, run_id)                 # the hook session that answers it
    relay.notify(conn, run_id, message, targets)     # sentinel_act notify: the contract is fulfilled
    relay.settle(conn, firing, "fallback", reason, deliveries)   # the timer's side

A firing is `pending` until exactly one of `notified`, `fallback` or `suppressed` (fallback mode `none`)
claims it with a single conditional UPDATE inside the transaction that also enqueues its deliveries,
so a kill -9 at any point leaves either no outcome (the timer fires again later) or the one outcome
with all of its deliveries. An escalation is recorded on the pending row and does not settle it.

The rows live in the supervisor's database (local mode: the state database), which the agent's user
cannot write: a worker reaches `notify` and `escalate` only through its supervisor, for its own run.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterable, Mapping

from sentinel.engine import db
from sentinel.engine.rows import FiringRow, InboxRow
from sentinel.errors import NotFound, SentinelError, UsageError

PENDING = "pending"

# untyped (each `dict[str, Any]` below that says so): a firing or delivery row of the database as a dict, each
# column of the type the schema declares, its JSON columns parsed from what this module wrote (`_firing`); the
# watchers' relay and the supervisor read them by key and hand them on as JSON
INBOX = {"type": "inbox", "name": "inbox"}


class Settled(SentinelError):
    """The firing already has its outcome; nothing was changed."""

    def __init__(self, firing: dict[str, Any]):  # untyped: a firing row
        self.firing = firing
        if firing["status"] == PENDING:
            super().__init__(f"firing {firing['id']}: the response time ran out; the fallback delivers it")
        else:
            super().__init__(f"firing {firing['id']} is already {firing['status']}")


def open_firing(conn: db.Conn, *, firing_id: str, watcher: str, dedupe_key: str,
                envelope: Mapping[str, object], fired_at: float, deadline: float, fallback: bool) -> str:
    conn.execute("INSERT INTO watch_firings (id, watcher, dedupe_key, status, fired_at, deadline, fallback, envelope)"
                 " VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)",
                 (firing_id, watcher, dedupe_key, fired_at, deadline, int(fallback), json.dumps(envelope)))
    return firing_id


def link(conn: db.Conn, firing_id: str, run_id: str) -> None:
    conn.execute("UPDATE watch_firings SET run_id=? WHERE id=? AND run_id IS NULL", (run_id, firing_id))


def get(conn: db.Conn, firing_id: str) -> dict[str, Any]:  # untyped: a firing row
    row = conn.execute("SELECT * FROM watch_firings WHERE id=?", (firing_id,)).fetchone()
    if row is None:
        raise NotFound(f"no firing {firing_id!r} (see `sentinel watch history`)")
    return _firing(row)


def for_run(conn: db.Conn, run_id: str) -> dict[str, Any] | None:  # untyped: a firing row
    row = conn.execute("SELECT * FROM watch_firings WHERE run_id=?", (run_id,)).fetchone()
    return _firing(row) if row else None


def history(conn: db.Conn, watcher: str | None = None, limit: int | None = None) -> list[FiringRow]:
    sql, params = "SELECT * FROM watch_firings", []
    if watcher:
        sql, params = sql + " WHERE watcher=?", [watcher]
    sql += " ORDER BY fired_at DESC, rowid DESC" + (" LIMIT ?" if limit else "")
    return [FiringRow(**_firing(r)) for r in conn.execute(sql, params + ([limit] if limit else []))]


def due(conn: db.Conn, now: float) -> list[dict[str, Any]]:  # untyped: firing rows
    """Pending firings whose deadline has passed: the fallback timer's work (it survives restarts: it is a row)."""
    rows = conn.execute("SELECT * FROM watch_firings WHERE status='pending' AND deadline <= ? ORDER BY deadline",
                        (now,))
    return [_firing(r) for r in rows]


def next_deadline(conn: db.Conn) -> float | None:
    row = conn.execute("SELECT MIN(deadline) FROM watch_firings WHERE status='pending'").fetchone()
    return row[0] if row else None


def settle(conn: db.Conn, firing_id: str, status: str, detail: Mapping[str, object],
           deliveries: Iterable[tuple[Mapping[str, object], str]], *, in_time: bool = False) -> bool:
    """Claim the firing's one outcome and enqueue its deliveries, atomically; False when another won.
    `in_time`: only before the deadline (a notify: past it, the outcome is the fallback's, whoever runs it)."""
    now = time.time()
    with db.transaction(conn):
        cur = conn.execute("UPDATE watch_firings SET status=?, outcome=?, resolved_at=? WHERE id=? AND status='pending'"
                           + (" AND deadline > ?" if in_time else ""),
                           (status, json.dumps(detail), now, firing_id, *([now] if in_time else [])))
        if cur.rowcount == 1:
            row = get(conn, firing_id)
            for target, message in deliveries:
                _enqueue(conn, row, target, message, status, now)
    return cur.rowcount == 1


# untyped: a firing row
def _enqueue(conn: db.Conn, firing: dict[str, Any], target: Mapping[str, object], message: str, kind: str,
             now: float) -> None:
    """The inbox is this database: its entry is written in the claiming transaction. Other targets are queued."""
    if target.get("type") == "inbox":
        add_inbox(conn, firing["id"], firing["watcher"], kind, message, now)
    else:
        conn.execute("INSERT INTO watch_deliveries (firing_id, target, kind, message, status, attempts, next_at)"
                     " VALUES (?, ?, ?, ?, 'pending', 0, ?)", (firing["id"], json.dumps(target), kind, message, now))


# untyped: a firing row, and the delivery targets of its envelope (JSON the watcher's config wrote)
def targets_of(firing: dict[str, Any], names: list[str] | None = None) -> list[dict[str, Any]]:
    """The firing's configured delivery targets, or those of them `names` picks (UsageError for others):
    a session names targets, it never describes one, so it cannot make the relay run or write anything new."""
    configured = (firing.get("envelope") or {}).get("delivery") or [INBOX]
    if not names:
        return configured
    by_name = {str(t.get("name") or t.get("type")): t for t in configured}
    unknown = [str(n) for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"unknown delivery target(s) {', '.join(unknown)}; configured: {', '.join(by_name)}")
    return [by_name[n] for n in names]


# untyped: a firing row
def notify(conn: db.Conn, run_id: str, message: str, names: list[str] | None = None) -> dict[str, Any]:
    """sentinel_act notify from run `run_id`: fulfil its firing's contract. Settled when it already had an
    outcome; NotFound when the run answers no firing."""
    firing = for_run(conn, run_id)
    if firing is None:
        raise NotFound(f"run {run_id} is not a hook session: there is no relay contract to fulfil")
    targets = targets_of(firing, names)
    if not settle(conn, firing["id"], "notified", {"by": "sentinel_act notify"}, [(t, message) for t in targets],
                  in_time=True):
        raise Settled(get(conn, firing["id"]))
    return get(conn, firing["id"])


def escalate(conn: db.Conn, run_id: str, reason: str, severity: str) -> dict[str, Any]:  # untyped: a firing row
    """sentinel_escalate: recorded on the contract, which stays open for the fallback to deliver."""
    firing = for_run(conn, run_id)
    if firing is None:
        raise NotFound(f"run {run_id} is not a hook session: there is nothing to escalate")
    if firing["status"] != PENDING:
        raise Settled(firing)
    conn.execute("UPDATE watch_firings SET escalation=? WHERE id=? AND status='pending'",
                 (json.dumps({"reason": reason, "severity": severity, "t": time.time()}), firing["id"]))
    return get(conn, firing["id"])


# -- deliveries and the inbox -------------------------------------------------------------------

def add_inbox(conn: db.Conn, firing_id: str | None, watcher: str | None, kind: str, message: str,
              now: float | None = None) -> None:
    conn.execute("INSERT INTO watch_inbox (t, firing_id, watcher, kind, message) VALUES (?, ?, ?, ?, ?)",
                 (now or time.time(), firing_id, watcher, kind, message))


def inbox(conn: db.Conn, limit: int | None = None) -> list[InboxRow]:
    sql = "SELECT * FROM watch_inbox ORDER BY id DESC" + (" LIMIT ?" if limit else "")
    return [InboxRow(**dict(r)) for r in conn.execute(sql, [limit] if limit else [])]


def pending_deliveries(conn: db.Conn, now: float) -> list[dict[str, Any]]:  # untyped: delivery rows
    rows = conn.execute("SELECT * FROM watch_deliveries WHERE status='pending' AND next_at <= ? ORDER BY id", (now,))
    return [{**dict(r), "target": json.loads(r["target"])} for r in rows]


def delivered(conn: db.Conn, delivery_id: int) -> None:
    conn.execute("UPDATE watch_deliveries SET status='done', attempts=attempts+1, done_at=?, error=NULL"
                 " WHERE id=? AND status='pending'", (time.time(), delivery_id))


# untyped: a delivery row
def retry_later(conn: db.Conn, delivery: dict[str, Any], error: str, next_at: float | None) -> None:
    """A failed attempt: try again at `next_at`, or (None: out of attempts) give up into the inbox, never silently."""
    if next_at is not None:
        conn.execute("UPDATE watch_deliveries SET attempts=attempts+1, next_at=?, error=? WHERE id=? AND status='pending'",
                     (next_at, error, delivery["id"]))
        return
    with db.transaction(conn):
        cur = conn.execute("UPDATE watch_deliveries SET status='failed', attempts=attempts+1, error=?, done_at=?"
                           " WHERE id=? AND status='pending'", (error, time.time(), delivery["id"]))
        if cur.rowcount == 1:
            firing = get(conn, delivery["firing_id"])
            target = delivery["target"].get("name") or delivery["target"].get("type")
            add_inbox(conn, firing["id"], firing["watcher"], delivery["kind"],
                      f"[delivery to {target} failed: {error}] {delivery['message']}")


def deliveries(conn: db.Conn, firing_id: str) -> list[dict[str, Any]]:  # untyped: delivery rows
    rows = conn.execute("SELECT * FROM watch_deliveries WHERE firing_id=? ORDER BY id", (firing_id,))
    return [{**dict(r), "target": json.loads(r["target"])} for r in rows]


def _firing(row: Any) -> dict[str, Any]:  # untyped: a driver's row (sqlite3.Row or db.Row), a firing row
    data = dict(row)
    for key in ("envelope", "outcome", "escalation"):
        data[key] = json.loads(data[key]) if data.get(key) else None
    data["fallback"] = bool(data["fallback"])
    return data
