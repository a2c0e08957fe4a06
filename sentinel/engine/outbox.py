"""The notification outbox and one-tap decision links: rows in the store the agent cannot write (system mode: the
supervisor's root-only database). The web console's sign-in and sessions: sentinel/engine/websessions.py.

    outbox.enqueue(conn, "approval:a-1", "webhook https://…", spec, doc)   # once per (event, target), ever
    for row in outbox.claim(conn, now, lease_s=60): ...                    # due rows, leased to this caller
    outbox.delivered(conn, row["id"]) / outbox.attempt_failed(conn, row, error, retry_at)
    outbox.failing(conn)                       # targets whose newest delivery failed: `sentinel status`

    secret = outbox.mint_link(conn, approval_id, digest, ttl_s, target)   # only sha256(secret) is stored
    link = outbox.redeem(conn, secret, "approve")    # once: LinkRefused when used, expired or unknown

Every invariant is one conditional UPDATE, so it holds across processes: a row is sent by one deliverer at
a time (its lease), a link is used once.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from typing import TYPE_CHECKING, Any, Mapping

from sentinel.engine import db
from sentinel.engine.status import ApprovalStatus
from sentinel.errors import UsageError
from sentinel.jsontypes import JSONObject

if TYPE_CHECKING:
    from sentinel.engine.store import Approval, Store
    from sentinel.web.settings import WebSettings

PREFIX_KEY = "web_prefix"
CONSOLE_URL_KEY = "console_url"  # the listener of the console that serves the links (`sentinel web`)
SINCE_KEY = "notify_since"


class LinkRefused(UsageError):
    """A decision link that is unknown, used, expired, or no longer bound to what it was minted for."""


def sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def meta_once(conn: db.Conn, key: str, value: str) -> str:
    """The meta value under `key`, set to `value` by the first caller (every process agrees on it)."""
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value))
    return str(conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()[0])


def set_console_url(conn: db.Conn, url: str) -> None:
    """Where the console that serves this store's links listens now (`sentinel web` says so when it starts)."""
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                 (CONSOLE_URL_KEY, url))


def checked_url(url: object) -> str:
    """A console's address as `scheme://host:port`, nothing more (it goes into every link)."""
    import re

    if not isinstance(url, str) or len(url) > 300 or not re.fullmatch(r"https?://[A-Za-z0-9.\-\[\]:]+", url):
        from sentinel.errors import UsageError

        raise UsageError(f"listening: {str(url)[:80]!r} is not a console address (http://HOST:PORT)")
    return url


def console_url(conn: db.Conn) -> str | None:
    """The address the last console of this store listened on (scheme://host:port), if one ever did."""
    row = conn.execute("SELECT value FROM meta WHERE key=?", (CONSOLE_URL_KEY,)).fetchone()
    return str(row[0]) if row else None


def link_base(conn: db.Conn, web: "WebSettings") -> str:
    """Where a link to this store's console points: `web.public_url` when set (a browser elsewhere reaches the
    console there), else the console's own listener, else the configured loopback address and port."""
    origin = web.public_url.rstrip("/") if web.public_url else console_url(conn) or web.base_url()
    return origin + console_prefix(conn)


def console_prefix(conn: db.Conn) -> str:
    """The console's secret path, kept: links in notifications and signed-in browsers outlive a restart."""
    return meta_once(conn, PREFIX_KEY, f"/s/{secrets.token_urlsafe(18)}")


# -- the outbox ---------------------------------------------------------------------------------

def enqueue(conn: db.Conn, event: str, target: str, spec: Mapping[str, object], doc: Mapping[str, object],
            now: float | None = None) -> bool:
    """Queue one notification for one target; False when this event was already queued for it."""
    now = time.time() if now is None else now
    cur = conn.execute("INSERT INTO notify_outbox (event, target, spec, doc, status, attempts, next_at, created_at)"
                       " VALUES (?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT (event, target) DO NOTHING",
                       (event, target, json.dumps(spec), json.dumps(doc, default=str), now, now))
    return cur.rowcount == 1


def claim(conn: db.Conn, now: float, lease_s: float) -> list[dict[str, Any]]:  # untyped: outbox rows (_row)
    """Due rows this caller may send now; each is leased until `now + lease_s` (a deliverer that dies mid-send
    leaves it to the next one after the lease: at least once)."""
    out = []
    for row in conn.execute("SELECT * FROM notify_outbox WHERE status='pending' AND next_at <= ? ORDER BY id",
                            (now,)).fetchall():
        cur = conn.execute("UPDATE notify_outbox SET lease_until=? WHERE id=? AND status='pending'"
                           " AND (lease_until IS NULL OR lease_until <= ?)", (now + lease_s, row["id"], now))
        if cur.rowcount == 1:
            out.append(_row(row))
    return out


def delivered(conn: db.Conn, row_id: int) -> None:
    conn.execute("UPDATE notify_outbox SET status='delivered', attempts=attempts+1, error=NULL, lease_until=NULL,"
                 " done_at=? WHERE id=?", (time.time(), row_id))


def attempt_failed(conn: db.Conn, row: Mapping[str, object], error: str, retry_at: float | None) -> None:
    """Record a failed attempt: retried at `retry_at`, or given up (`failed`) when None."""
    if retry_at is None:
        conn.execute("UPDATE notify_outbox SET status='failed', attempts=attempts+1, error=?, lease_until=NULL,"
                     " done_at=? WHERE id=?", (error[:500], time.time(), row["id"]))
    else:
        conn.execute("UPDATE notify_outbox SET attempts=attempts+1, error=?, lease_until=NULL, next_at=? WHERE id=?",
                     (error[:500], retry_at, row["id"]))


def next_due(conn: db.Conn) -> float | None:
    row = conn.execute("SELECT MIN(CASE WHEN lease_until > next_at THEN lease_until ELSE next_at END) FROM notify_outbox"
                       " WHERE status='pending'").fetchone()
    return row[0] if row else None


# untyped: sqlite row values (TEXT, INTEGER), which `status` callers read by key and pass on as JSON
def failing(conn: db.Conn) -> list[dict[str, Any]]:
    """Each target whose newest notification is failing (retrying, or given up), with its last error."""
    sql = ("SELECT target, status, attempts, error, event FROM notify_outbox WHERE id IN"
           " (SELECT MAX(id) FROM notify_outbox GROUP BY target) AND error IS NOT NULL AND status != 'delivered'"
           " ORDER BY target")
    return [{"target": r["target"], "state": "gave up" if r["status"] == "failed" else "retrying",
             "attempts": r["attempts"], "event": r["event"], "error": r["error"]} for r in conn.execute(sql)]


def target_status(conn: db.Conn, labels: list[str]) -> list[dict[str, Any]]:  # untyped: `failing`'s rows
    """Each configured target: ok, or failing with its last error (what `sentinel status` shows, both modes)."""
    failed = {f["target"]: f for f in failing(conn)}
    return [failed.get(label) or {"target": label, "state": "ok"} for label in labels]


def history(conn: db.Conn, limit: int = 50) -> list[dict[str, Any]]:  # untyped: outbox rows (_row)
    return [_row(r) for r in conn.execute("SELECT * FROM notify_outbox ORDER BY id DESC LIMIT ?", (limit,))]


# A driver's row (sqlite3.Row or db.Row) of notify_outbox, `spec` and `doc` parsed from the JSON this module wrote;
# untyped: each column's value of the type the schema declares
def _row(row: Any) -> dict[str, Any]:
    out = dict(row)
    out["spec"], out["doc"] = json.loads(out["spec"]), json.loads(out["doc"])
    return out


# -- one-tap decision links --------------------------------------------------------------------

def mint_link(conn: db.Conn, approval_id: str, digest: str, ttl_s: float, target: str,
              outbox_id: int | None = None) -> tuple[str, float]:
    """A new link secret for deciding one approval, once, as it was when minted; the store keeps its hash only.
    A retried delivery mints anew and retires the links its earlier attempts minted."""
    now = time.time()
    if outbox_id is not None:
        conn.execute("UPDATE notify_links SET used_at=?, used_as='superseded' WHERE outbox_id=? AND used_at IS NULL",
                     (now, outbox_id))
    secret = secrets.token_urlsafe(32)
    conn.execute("INSERT INTO notify_links (secret_sha256, approval_id, digest, target, outbox_id, created_at,"
                 " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                 (sha256(secret), approval_id, digest, target, outbox_id, now, now + ttl_s))
    return secret, now + ttl_s


# untyped: a driver's row of notify_links as a dict, each column's type as the schema declares it
def link(conn: db.Conn, secret: str, now: float | None = None) -> dict[str, Any]:
    """The link's row if it can still be used; LinkRefused saying why not."""
    now = time.time() if now is None else now
    row = conn.execute("SELECT * FROM notify_links WHERE secret_sha256=?", (sha256(secret),)).fetchone()
    if row is None:
        raise LinkRefused("this decision link is not valid: decide in the console or with `sentinel approvals`")
    if row["used_at"] is not None:
        what = "replaced by a newer notification" if row["used_as"] == "superseded" else "already used"
        raise LinkRefused(f"this decision link was {what}: it works once")
    if row["expires_at"] <= now:
        raise LinkRefused("this decision link expired: decide in the console or with `sentinel approvals`")
    return dict(row)


def redeem(conn: db.Conn, secret: str, used_as: str) -> dict[str, Any]:  # untyped: `link`'s row
    """Use a link, exactly once (the first of two racing uses wins, the other is refused)."""
    row = link(conn, secret)
    now = time.time()
    cur = conn.execute("UPDATE notify_links SET used_at=?, used_as=? WHERE secret_sha256=? AND used_at IS NULL"
                       " AND expires_at > ?", (now, used_as, row["secret_sha256"], now))
    if cur.rowcount != 1:
        raise LinkRefused("this decision link was already used: it works once")
    return row


# -- what a link shows and decides (both engines: sentinel/local/engine.py, the supervisor's ops) -------------

def link_view(store: "Store", secret: str) -> JSONObject:
    """The approval a usable link decides, as it is now; LinkRefused when the link is used or expired, the
    approval is no longer pending, or its digest is not the one the link was minted for."""
    row, approval = _pending(store, secret)
    run = store.get_run(approval.run_id)
    return {"approval": approval.public(), "expires_at": row["expires_at"], "target": row["target"],
            "run": {"id": run["id"], "agent": run["agent"], "task": run["task"], "workspace": run["workspace"],
                    "user": run["user"], "kind": run["kind"]}}


def _pending(store: "Store", secret: str) -> tuple[dict[str, Any], "Approval"]:  # untyped: `link`'s row
    """The usable link's row and the pending approval it decides, for the digest it was minted for."""
    row = link(store.conn, secret)
    approval = store.get_approval(row["approval_id"])
    if approval.status != ApprovalStatus.PENDING:
        raise LinkRefused(f"approval {approval.id} is {approval.status}: there is nothing left to decide")
    if approval.digest != row["digest"]:
        raise LinkRefused(f"approval {approval.id}: the call is not the one this link was sent for (digest "
                          f"{approval.digest[:12]}…, the link's {row['digest'][:12]}…); nothing was decided")
    return row, approval


def use_link(store: "Store", secret: str, approved: bool, reason: str = "", always: bool = False) -> "Approval":
    """Decide with a link, once: it is spent first, then the approval is resolved bound to the link's digest.
    `always`: a coding agent's ask, whose exact call also joins its repository's allowlist (asks.py)."""
    from sentinel.engine import asks

    _, pending = _pending(store, secret)
    if always:
        asks.check_always(store, pending.id)
    row = redeem(store.conn, secret, "always" if always else "approve" if approved else "deny")
    by = f"one-tap link ({row['target']})"
    # a link holder is whoever can read the notification, not an operator: the call runs once, no code is trusted
    approval = store.resolve(row["approval_id"], approved, by, reason, digest=row["digest"], trusts=False)
    if always:
        asks.allow_always(store, approval.id, by)
    store.audit("approval_resolved", {"run_id": approval.run_id, "approval_id": approval.id, "approved": approved,
                                      "by": by, "link_sha256": row["secret_sha256"][:16], "reason": reason})
    return approval
