"""Finding what to notify and delivering it: at least once, with retries, recorded, never in the run's way.

    d = Dispatcher(store, config)
    d.tick()            # queue new events (one outbox row per event and target, ever), then send what is due
    d.run(stop)         # the supervisor's deliverer: tick every POLL_S until stop()
    kick(store, config, home)  # local mode, after a run paused or ended: queue, then start the deliverer detached

Events are read from the store, not pushed by the run: a pending approval (`approval:<id>`), a head run that
ended done or failed (`run:<id>:<status>`), a watcher firing with an escalation (`firing:<id>:escalated`).
The outbox's UNIQUE (event, target) makes the scan idempotent, so any number of deliverers may scan and
each event reaches each target once (a deliverer killed mid-send leaves its lease to expire: the row is
sent again, at least once). Sending happens in a small thread pool; the store is touched only here.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from sentinel.detach import detach
from sentinel.engine import db, outbox
from sentinel.jsontypes import JSON, JSONObject
from sentinel.engine.store import Store
from sentinel.notify import send
from sentinel.ui.render import one_line
from sentinel.watchers.deliver import DeliveryError
from sentinel.engine.status import ANSWERED

POLL_S = 0.25
WINDOW_S = 3600.0     # events older than this are not looked for again
GRACE_S = 300.0       # the first scan also notifies what happened this long before notify was configured
LEASE_S = 180.0       # a row being sent is not sent by another deliverer for this long
SHORT = 200

if TYPE_CHECKING:
    from sentinel.config import Config


def _short(value: JSON) -> str:
    """An agent-written field on one line: its hiding characters escaped first (`visible`: a newline, a tab, U+2028,
    a no-break or ideographic space each shows as its escape), then only runs of plain spaces folded, so nothing
    bash reads as part of a word is shown as a word break (`main\u2028--dry-run` is one word). Cut at SHORT."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    text = one_line(text)
    return text if len(text) <= SHORT else text[: SHORT - 1] + "…"


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


class Dispatcher:
    """Sends what the outbox holds; with a config, also queues new events first (without one, as local mode's
    detached deliverer runs: the run's own process queued them, and this one starts without loading config)."""

    def __init__(self, store: Store, config: Config | None, log: Callable[[str], None] | None = None):
        self.store = store
        self.conn = store.conn
        self.config = config
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="notify-send")

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    def scan(self, now: float | None = None) -> int:
        return scan(self.conn, self.config, now) if self.config is not None else 0

    def tick(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        self.scan(now)
        rows = outbox.claim(self.conn, now, LEASE_S)
        sending = [(row, self.pool.submit(send.send, row["spec"], self._with_link(row))) for row in rows]
        for row, future in sending:
            try:
                future.result()
            except DeliveryError as exc:
                self._failed(row, str(exc))
            except Exception as exc:  # a harness bug in one transport must not stop the others
                self._failed(row, f"{type(exc).__name__}: {exc}")
            else:
                outbox.delivered(self.conn, row["id"])

    # untyped: an outbox row as sentinel.engine.outbox returns it (its columns; `spec` and `doc` decoded)
    def _failed(self, row: dict[str, Any], error: str) -> None:
        spec, attempt = row["spec"], row["attempts"] + 1
        retry_at = None if attempt >= spec["attempts"] else time.time() + spec["backoff_s"] * 2 ** (attempt - 1)
        outbox.attempt_failed(self.conn, row, error, retry_at)
        self.log(f"notify: {row['target']}: {row['event']}: {error}" + ("" if retry_at else " (given up)"))

    def _with_link(self, row: dict[str, Any]) -> JSONObject:  # untyped: an outbox row, as in _failed
        """An approval still pending gets its one-tap link minted now (a retry mints a new one and retires the
        old): the store keeps the secret's hash, the notification carries the secret."""
        doc: JSONObject = row["doc"]
        if not (row["spec"].get("one_tap") and doc["event"] == "approval"):
            return doc
        found = self.conn.execute("SELECT status, digest FROM approvals WHERE id=?", (doc["approval_id"],)).fetchone()
        if found is None or found["status"] != "pending":
            return doc
        spec = row["spec"]
        secret, expires = outbox.mint_link(self.conn, str(doc["approval_id"]), found["digest"], spec["link_ttl_s"],
                                           row["target"], row["id"])
        return {**doc, "decide_url": f"{spec['link_base']}/link/{secret}", "decide_expires": _iso(expires)}

    def busy(self) -> bool:
        return outbox.next_due(self.conn) is not None

    def run(self, stop: Callable[[], bool], until_idle: bool = False) -> None:
        """Tick every POLL_S until stop(); with `until_idle`, also stop once nothing is left to send."""
        while not stop():
            try:
                self.tick()
            except Exception as exc:  # a locked or broken database: say so, try again
                self.log(f"notify: {type(exc).__name__}: {exc}")
            if until_idle and not self.busy():
                return
            time.sleep(POLL_S)


def scan(conn: db.Conn, config: Config, now: float | None = None) -> int:
    """Queue every new event for every target that wants it; returns how many rows were queued."""
    now = time.time() if now is None else now
    since = max(float(outbox.meta_once(conn, outbox.SINCE_KEY, repr(now - GRACE_S))), now - WINDOW_S)
    base = outbox.link_base(conn, config.web)
    # the deliverer mints links without config
    links: JSONObject = {"link_base": base, "link_ttl_s": config.web.link_ttl_s}
    queued = 0
    for event, kind, doc in _events(conn, since, base):
        for target in config.notify:
            if kind in target.on:
                queued += outbox.enqueue(conn, event, target.label, {**target.spec(), **links}, doc, now)
    return queued


def _events(conn: db.Conn, since: float, base: str) -> list[tuple[str, str, JSONObject]]:
    found: list[tuple[str, str, JSONObject]] = []
    for a in conn.execute(
            "SELECT a.id, a.run_id, a.tool, a.arguments, a.reason, a.digest, a.created_at, r.task, r.agent, r.user"
            " FROM approvals a JOIN runs r ON r.id = a.run_id WHERE a.created_at >= ? AND a.status = 'pending'",
            (since,)):
        found.append((f"approval:{a['id']}", "approval", {
            "event": "approval", "run_id": a["run_id"], "approval_id": a["id"], "tool": a["tool"],
            "arguments": _short(json.loads(a["arguments"])), "reason": _short(a["reason"]),
            "digest": a["digest"], "task": _short(a["task"]), "agent": _who(a), "t": a["created_at"],
            "url": f"{base}/runs/{a['run_id']}"}))
    for r in conn.execute(
            "SELECT id, task, agent, user, status, output, error, updated_at FROM runs WHERE updated_at >= ?"
            " AND status IN ('done', 'done_unverified', 'failed') AND parent_id IS NULL AND kind NOT IN ('hook', 'ask')", (since,)):
        answered = r["status"] in ANSWERED  # a done_unverified run is sent to whoever follows `done`, marked
        found.append((f"run:{r['id']}:{r['status']}", "done" if answered else r["status"], {
            "event": r["status"], "run_id": r["id"], "task": _short(r["task"]), "agent": _who(r),
            "output": _short(r["output"] or "") if answered else "", "error": _short(r["error"] or ""),
            "t": r["updated_at"], "url": f"{base}/runs/{r['id']}"}))
    for f in conn.execute("SELECT id, watcher, run_id, escalation, fired_at FROM watch_firings"
                          " WHERE escalation IS NOT NULL AND fired_at >= ?", (since,)):
        esc = json.loads(f["escalation"])
        found.append((f"firing:{f['id']}:escalated", "escalated", {
            "event": "escalated", "watcher": f["watcher"], "firing_id": f["id"], "run_id": f["run_id"],
            "reason": _short(esc.get("reason") or ""), "severity": esc.get("severity"), "t": esc.get("t"),
            "url": f"{base}/watchers"}))
    return found


def _who(row: sqlite3.Row | db.Row) -> str:
    user = row["user"]
    return row["agent"] if not user or user == row["agent"] else f"{user}/{row['agent']}"


def kick(store: Store, config: Config, home: Path) -> None:
    """Local mode, after a run paused or ended: queue its events here (a few queries), and when anything waits to
    be sent, start the home's deliverer detached. Costs one fork of /bin/sh, which exits at once."""
    if not config.notify:
        return
    scan(store.conn, config)
    if outbox.next_due(store.conn) is None:
        return
    detach("sentinel.notify", ["--home", str(home)], log=home / "state" / "notify.log")
