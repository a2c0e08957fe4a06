"""The web console's sign-in tokens and sessions: kept by the supervisor, for operators.

    {"op": "web_token"[, "listening": URL]}  ->  {"token": "...", "operator": "alice", "prefix": "/s/..."}
    {"op": "web_sign_in", "token": T, "session_ttl_s": S}  ->  a session {secret, operator, csrf, created_at} or null
    {"op": "web_session", "secret": S}             ->  {operator, csrf, created_at} or null

(sentinel/engine/operations.py declares these requests; ops/admin.py checks their fields and calls these.)

`ops.handle` lets only root and members of the operator group (by SO_PEERCRED) reach this op, so an
agent's user can never obtain a token: `sentinel web` run as that user stops at the refusal. The console
that asked trades the token, once, for a browser session, and every use of a session asks here again: a
session (or an unused token) of someone who is no longer root or in the operator group ends then, with all
of theirs (audited as `web_sessions_ended`), so removing a person from the group signs out their browsers; a console that starts names its listener, which
the notifications' links then name (unless `web.public_url` is set); the audit log records who opened a console
(with a prefix of the token's hash, never the token).
"""

from __future__ import annotations

import hashlib
import pwd

from sentinel.engine import outbox, websessions
from sentinel.errors import UsageError
from sentinel.frames import reply
from sentinel.jsontypes import JSONObject
from sentinel.supervisor.auth import is_operator
from sentinel.supervisor.hub import Client, Hub, caller

SESSION_MAX_S = 366 * 86400.0


def web_token(sup: Hub, conn: Client, listening: str | None) -> dict[str, object]:
    peer = caller(conn)
    if listening is not None:  # an operator's console starting: the links the watcher child sends name it
        outbox.set_console_url(sup.store.conn, outbox.checked_url(listening))
    token = websessions.issue_sign_in(sup.store.conn, peer.name, websessions.SIGN_IN_TTL_S)
    sup.store.audit("web_token_issued", {"by": peer.name, "uid": peer.uid, "pid": peer.pid,
                                         "token_sha256": hashlib.sha256(token.encode()).hexdigest()[:16]})
    return reply({"token": token, "operator": peer.name, "prefix": outbox.console_prefix(sup.store.conn),
                  "console_url": outbox.console_url(sup.store.conn)})


def web_sign_in(sup: Hub, conn: Client, token: str, ttl: float) -> dict[str, object]:
    if not 0 < ttl <= SESSION_MAX_S:
        raise UsageError(f"session_ttl_s: a number of seconds up to {SESSION_MAX_S:.0f}")
    return reply(_still_operator(sup, websessions.trade_sign_in(sup.store.conn, token, ttl)))


def web_session(sup: Hub, conn: Client, secret: str) -> dict[str, object]:
    return reply(_still_operator(sup, websessions.session(sup.store.conn, secret)))


def _still_operator(sup: Hub, found: JSONObject | None) -> JSONObject | None:
    """`found` while its person is still an operator; otherwise none, and every session of theirs ends."""
    if found is None:
        return None
    name = str(found["operator"])
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        uid = -1
    if uid >= 0 and is_operator(uid, name, sup.settings.group):
        return found
    ended = websessions.end_for(sup.store.conn, name)
    sup.store.audit("web_sessions_ended", {"operator": name, "ended": ended, "why": "no longer an operator"})
    return None

