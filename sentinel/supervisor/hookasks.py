"""Coding agents' asks on the operator socket: an operator's `sentinel hook` files the call an `ask` rule held in
the operator's queue (the supervisor's store), polls it, and reads the per-repository allowlist
(sentinel/engine/asks.py, docs/hooks.md). `ops.handle` lets only operators (SO_PEERCRED) reach these ops; the
agent door has none of them.

    {"op": "hook_ask", client, repository, tool, arguments, rule, reason, keys, call_id, ttl_s}
        -> {"approval_id", "digest"}
    {"op": "hook_ask_state", approval_id}            -> {"status", "by", "reason", "digest"}
    {"op": "hook_ask_take", approval_id, digest}     -> {"taken": bool}     the approved call runs, once
    {"op": "hook_ask_withdraw", approval_id, why}    -> {"withdrawn": bool} deadline passed: nobody can approve it now
    {"op": "hook_allowlisted", repository, client, keys} -> {"allowlisted": bool}
    {"op": "hook_allowlist", repository?}            -> {"entries": [...]}
    {"op": "hook_allowlist_revoke", repository, kind?, value?, client?} -> {"revoked": n}
"""

from __future__ import annotations

from sentinel.engine import asks
from sentinel.errors import UsageError
from sentinel.frames import reply
from sentinel.jsontypes import JSONObject
from sentinel.supervisor.hub import Client, Hub, caller

MAX_TTL_S = 3600.0
MAX_TEXT = 4000


def _text(msg: JSONObject, name: str, *, limit: int = MAX_TEXT) -> str:
    value = msg.get(name)
    if not isinstance(value, str) or not value:
        raise UsageError(f"{name}: must be a non-empty string")
    return value[:limit]


def _optional_text(msg: JSONObject, name: str, *, limit: int = MAX_TEXT) -> str | None:
    value = msg.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{name}: must be a string")
    return value[:limit]


def _keys(msg: JSONObject) -> list[list[str]]:
    keys = msg.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, list) and len(k) == 2 and all(isinstance(p, str) for p in k)
                                             for k in keys):
        raise UsageError("keys: must be a list of [kind, value] string pairs")
    return [[str(p) for p in k] for k in keys if isinstance(k, list)]  # each one is, checked above


def _file(sup: Hub, conn: Client, msg: JSONObject) -> dict[str, object]:
    arguments, ttl = msg.get("arguments"), msg.get("ttl_s")
    if not isinstance(arguments, dict):
        raise UsageError("arguments: must be an object")
    if not isinstance(ttl, (int, float)) or not 0 < ttl <= MAX_TTL_S:
        raise UsageError(f"ttl_s: must be a number of seconds, at most {MAX_TTL_S:.0f}")
    repository = _text(msg, "repository")
    if not repository.startswith("/"):
        raise UsageError("repository: must be an absolute path")
    ask = asks.Ask(client=_text(msg, "client", limit=64), repository=repository, tool=_text(msg, "tool", limit=200),
                   arguments=arguments, rule=_text(msg, "rule", limit=200), reason=_text(msg, "reason"),
                   keys=_keys(msg), call_id=_text(msg, "call_id", limit=200))
    filed = asks.file(sup.store, ask, float(ttl), str(sup.settings.state_dir / "asks"), user=caller(conn).name)
    return reply({"approval_id": filed.approval_id, "digest": filed.digest})


def _state(sup: Hub, conn: Client, msg: JSONObject) -> dict[str, object]:
    return reply(asks.state(sup.store, _text(msg, "approval_id", limit=64)))


def _take(sup: Hub, conn: Client, msg: JSONObject) -> dict[str, object]:
    return reply({"taken": asks.take(sup.store, _text(msg, "approval_id", limit=64), _text(msg, "digest", limit=64))})


def _withdraw(sup: Hub, conn: Client, msg: JSONObject) -> dict[str, object]:
    return reply({"withdrawn": asks.withdraw(sup.store, _text(msg, "approval_id", limit=64), _text(msg, "why"))})


def _allowlisted(sup: Hub, conn: Client, msg: JSONObject) -> dict[str, object]:
    return reply({"allowlisted": asks.allowlisted(sup.store, _text(msg, "repository"), _text(msg, "client", limit=64),
                                                  _keys(msg))})


def _allowlist(sup: Hub, conn: Client, msg: JSONObject) -> dict[str, object]:
    return reply({"entries": asks.allowlist(sup.store, _optional_text(msg, "repository"))})


def _revoke(sup: Hub, conn: Client, msg: JSONObject) -> dict[str, object]:
    count = asks.revoke(sup.store, _text(msg, "repository"), _optional_text(msg, "kind"),
                        _optional_text(msg, "value"), _optional_text(msg, "client", limit=64), by=caller(conn).name)
    return reply({"revoked": count})


OPS = {"hook_ask": _file, "hook_ask_state": _state, "hook_ask_take": _take, "hook_ask_withdraw": _withdraw,
       "hook_allowlisted": _allowlisted, "hook_allowlist": _allowlist, "hook_allowlist_revoke": _revoke}
