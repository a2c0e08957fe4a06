"""The web console's sign-in tokens and sessions: rows in the store the agent cannot write (system mode: the
supervisor's root-only database); only the SHA-256 of each token and session secret is stored.

    token = websessions.issue_sign_in(conn, "alice", websessions.SIGN_IN_TTL_S)   # one sign-in URL's token
    got = websessions.trade_sign_in(conn, token, session_ttl_s)   # once: {secret, operator, csrf, created_at}
    websessions.session(conn, got["secret"])                      # {operator, csrf, created_at}, None when gone

A token is traded once (one conditional UPDATE, so it holds across processes and consoles).
"""

from __future__ import annotations

import secrets
import time

from sentinel.engine import db
from sentinel.engine.outbox import sha256
from sentinel.jsontypes import JSONObject

SIGN_IN_TTL_S = 86400.0  # a sign-in URL works once, within a day


def issue_sign_in(conn: db.Conn, operator: str, ttl_s: float) -> str:
    """A one-time sign-in token for `operator` (any console of this store accepts it, once, before it expires)."""
    token = secrets.token_urlsafe(32)
    now = time.time()
    conn.execute("INSERT INTO web_signins (token_sha256, operator, created_at, expires_at) VALUES (?, ?, ?, ?)",
                 (sha256(token), operator, now, now + ttl_s))
    return token


def trade_sign_in(conn: db.Conn, token: str, session_ttl_s: float) -> JSONObject | None:
    """Trade a sign-in token for a new session (its cookie secret and CSRF token); None when it cannot be."""
    now = time.time()
    digest = sha256(token)
    cur = conn.execute("UPDATE web_signins SET used_at=? WHERE token_sha256=? AND used_at IS NULL AND expires_at > ?",
                       (now, digest, now))
    if cur.rowcount != 1:
        return None
    operator = conn.execute("SELECT operator FROM web_signins WHERE token_sha256=?", (digest,)).fetchone()[0]
    return new_session(conn, operator, session_ttl_s)


def new_session(conn: db.Conn, operator: str, ttl_s: float) -> JSONObject:
    secret, csrf, now = secrets.token_urlsafe(32), secrets.token_urlsafe(32), time.time()
    conn.execute("INSERT INTO web_sessions (secret_sha256, operator, csrf, created_at, expires_at)"
                 " VALUES (?, ?, ?, ?, ?)", (sha256(secret), operator, csrf, now, now + ttl_s))
    return {"secret": secret, "operator": operator, "csrf": csrf, "created_at": now}


def end_for(conn: db.Conn, operator: str) -> int:
    """End every session and unused sign-in token of `operator` (one who is no longer an operator); how many."""
    ended = conn.execute("DELETE FROM web_sessions WHERE operator=?", (operator,)).rowcount
    return ended + conn.execute("DELETE FROM web_signins WHERE operator=? AND used_at IS NULL", (operator,)).rowcount


def session(conn: db.Conn, secret: str) -> JSONObject | None:
    row = conn.execute("SELECT operator, csrf, created_at FROM web_sessions WHERE secret_sha256=? AND expires_at > ?",
                       (sha256(secret), time.time())).fetchone()
    return dict(row) if row else None
