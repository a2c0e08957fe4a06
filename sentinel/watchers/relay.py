"""The relay's timer side: fallbacks for firings past their deadline, and queued deliveries with backoff.

    Relay(conn, settings, run_command).tick(now)    # the runner calls it every loop turn

The contract rows and their single-UPDATE claims are `sentinel.engine.relay`; this module decides what
a fallback says (why there was no notify) and drives deliveries: each failing attempt is retried after
`deliveryBackoffS * 2**attempt`, and the last failure lands in the inbox with its error.
"""

from __future__ import annotations

import time

from sentinel.engine import db, relay
from sentinel.jsontypes import JSON, JSONObject
from sentinel.watchers.deliver import DeliveryError, deliver
from sentinel.watchers.envelope import obj, summary
from sentinel.watchers.settings import WatcherSettings
from sentinel.watchers.strategies import RunCommand
from sentinel.engine.status import RunStatus

SESSION_WHY = {"done": "the session ended without sentinel_act notify",
               "done_unverified": "the session ended without sentinel_act notify",
               "idle": "the session ended without sentinel_act notify"}


def why(conn: db.Conn, firing: JSONObject) -> str:
    """Why the fallback delivers: an escalation, the session's failure, or the time running out."""
    if esc := obj(firing.get("escalation")):
        return f"escalated ({esc.get('severity')}): {esc.get('reason')}"
    if error := obj(firing.get("outcome")).get("error"):
        return str(error)
    if not firing.get("run_id"):
        return "the hook session did not start"
    row = conn.execute("SELECT status, error, updated_at FROM runs WHERE id=?", (firing["run_id"],)).fetchone()
    status = row["status"] if row else "missing"
    deadline = _seconds(firing["deadline"])
    timeout_ms = round((deadline - _seconds(firing["fired_at"])) * 1000)
    if row is not None and row["updated_at"] > deadline:  # it ran past the time (and may still run)
        return f"no notify within {timeout_ms} ms (the session is {status})"
    if status in SESSION_WHY:
        return SESSION_WHY[status]
    if status in (RunStatus.FAILED, RunStatus.CANCELLED):
        return f"the session {status}: {row['error'] or 'no reason given'}"
    return f"no notify within {timeout_ms} ms (the session is {status})"


def _seconds(value: JSON) -> float:
    """A firing's time column (REAL NOT NULL)."""
    return float(value) if isinstance(value, (int, float)) else 0.0


def _count(value: JSON) -> int:
    """A delivery's integer column (id, attempts)."""
    return value if isinstance(value, int) else 0


def fall_back(conn: db.Conn, firing: JSONObject, reason: str | None = None) -> bool:
    """Settle a firing with its fallback (or nothing, with fallback mode none); False when already settled."""
    reason = reason or why(conn, firing)
    envelope = obj(firing["envelope"])
    listed = envelope.get("delivery")
    targets = [obj(t) for t in listed] if isinstance(listed, list) and listed else [relay.INBOX]
    firing_id = str(firing["id"])
    if not firing["fallback"]:
        return relay.settle(conn, firing_id, "suppressed", {"reason": reason}, [])
    message = summary(envelope, reason)
    return relay.settle(conn, firing_id, "fallback", {"reason": reason}, [(t, message) for t in targets])


class Relay:
    def __init__(self, conn: db.Conn, settings: WatcherSettings, run_command: RunCommand):
        self.conn = conn
        self.settings = settings
        self.run_command = run_command

    def tick(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        for firing in relay.due(self.conn, now):
            fall_back(self.conn, firing)
        for delivery in relay.pending_deliveries(self.conn, now):
            self._attempt(delivery, now)

    def next_due(self) -> float | None:
        times = [relay.next_deadline(self.conn)]
        row = self.conn.execute("SELECT MIN(next_at) FROM watch_deliveries WHERE status='pending'").fetchone()
        times.append(row[0] if row else None)
        return min((t for t in times if t is not None), default=None)

    def _attempt(self, delivery: JSONObject, now: float) -> None:
        firing = relay.get(self.conn, str(delivery["firing_id"]))
        try:
            deliver(obj(delivery["target"]), str(delivery["message"]), firing, str(delivery["kind"]), self.run_command)
        except DeliveryError as exc:
            attempt = _count(delivery["attempts"]) + 1
            last = attempt >= self.settings.deliveryAttempts
            relay.retry_later(self.conn, delivery, str(exc),
                              None if last else now + self.settings.deliveryBackoffS * 2 ** (attempt - 1))
        else:
            relay.delivered(self.conn, _count(delivery["id"]))
