"""The web console's sign-in tokens: issued by the supervisor, to operators only.

    {"op": "web_token"}  ->  {"token": "...", "operator": "alice"}

`ops.handle` lets only root and members of the operator group (by SO_PEERCRED) reach this op, so an
agent's user can never obtain a token: `sentinel web` run as that user stops at the refusal. The console
that asked trades the token, once, for a browser session; the audit log records who opened a console
(with a prefix of the token's hash, never the token).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from sentinel.frames import reply
from sentinel.supervisor.hub import Client, Hub


def web_token(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    token = secrets.token_urlsafe(32)
    peer = conn.peer
    sup.store.audit("web_token_issued", {"by": peer.name, "uid": peer.uid, "pid": peer.pid,
                                         "token_sha256": hashlib.sha256(token.encode()).hexdigest()[:16]})
    return reply({"token": token, "operator": peer.name})
