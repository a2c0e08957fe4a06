"""Coding agents' asks: the approvals `sentinel hook` files for a call an `ask` rule holds, and the per-repository
allowlist of exact calls a person allowed always (docs/hooks.md, "Asking a person").

    ask = file(store, Ask(client, repository, tool, arguments, rule, reason, keys), ttl_s, run_dir)
    state(store, ask.approval_id)         -> {"status", "by", "reason", "digest"}: what the waiting hook polls
    take(store, approval_id, digest)      True once, for the approved call (its approval is consumed)
    withdraw(store, approval_id, why)     the hook gave up (deadline, signal, error): nobody can approve it any more
    settle(store, approval)               a person decided: the ask's run records the outcome (no run resumes)
    allow_always(store, approval_id, by)  "always for this exact call here": its keys join the allowlist for the
                                          client that asked (never for an ask of the gate's own files:
                                          check_always refuses it)
    allowlisted(store, repository, client, keys)  are all of a call's keys on the repository's allowlist, each
                                          allowed for this client?
    allowlist(store, repository) / revoke(store, repository, kind, value, client)

An ask is an ordinary approval of a run of kind `ask` (agent: the client, workspace: the repository), so
`sentinel approvals`, the web console, `sentinel approve/deny`, notifications and one-tap links serve it
unchanged; that run is never executed. Every invariant is one conditional UPDATE: an ask is decided once,
consumed once, and an ask its hook withdrew can never be approved afterwards.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from sentinel.engine.status import RunStatus
from sentinel.engine.rows import StoredRun
from sentinel.engine.store import Approval, Store
from sentinel.errors import UsageError
from sentinel.jsontypes import JSONObject
from sentinel.policy.gate.own import RULE_ID as OWN_FILES  # its asks are decided each time, never allowlisted

KIND = "ask"                       # runs.kind of an ask's run
WITHDRAWN_BY = "sentinel hook"


@dataclass
class Ask:
    """One held call: who asks (`client`), where (`repository`), the exact call, why, and its allowlist keys."""

    client: str
    repository: str
    tool: str
    arguments: JSONObject
    rule: str
    reason: str
    keys: list[list[str]] = field(default_factory=list)
    call_id: str = "call"
    approval_id: str = ""
    digest: str = ""


class HookAsk(TypedDict):
    """A row of `hook_asks`, its `keys` parsed: the exact call an ask's approval allows, per repository."""

    approval_id: str
    client: str
    repository: str
    rule: str
    keys: list[list[str]]
    created_at: float


def is_ask(row: StoredRun) -> bool:
    return row.get("kind") == KIND


def summary(ask: Ask) -> str:
    target = "; ".join(describe(k, v) for k, v in ask.keys)[:300] or ask.tool
    return f"{ask.client} asks in {ask.repository}: {target}"


def describe(kind: str, value: str) -> str:
    """An allowlist key in words: `run CMD [in DIR]`, `write PATH`, or the kind and its value as stored."""
    try:
        pair = json.loads(value) if kind in ("command", "write") else None
    except ValueError:
        pair = None
    if isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair):
        if kind == "write":
            return f"write {pair[0]}"
        return f"run {pair[1]}" + (f" (in {pair[0]})" if pair[0] not in (".", "") else "")
    return f"{kind} {value}"


def file(store: Store, ask: Ask, ttl_s: float, run_dir: str, user: str | None = None) -> Ask:
    """File the approval (and its run, and the ask's keys) in one transaction; `ask` gets its id and digest.
    `user`: the operator whose coding agent asks (system mode; local mode's runs name none)."""
    from sentinel.engine import db

    run_id = store.new_run_id()
    with db.transaction(store.conn):
        store.create_run(run_id, agent=ask.client, task=summary(ask), model="-", workspace=ask.repository,
                         run_dir=Path(run_dir) / run_id, kind=KIND)  # never created: this run never executes
        store.set_status(run_id, RunStatus.WAITING_APPROVAL)
        if user:
            store.conn.execute("UPDATE runs SET user=? WHERE id=?", (user, run_id))
        approval = store.submit_approval(run_id, ask.call_id, ask.tool, ask.arguments, ask.reason, ttl_s=ttl_s)
        store.conn.execute("INSERT INTO hook_asks (approval_id, client, repository, rule, keys, created_at)"
                           " VALUES (?, ?, ?, ?, ?, ?)", (approval.id, ask.client, ask.repository, ask.rule,
                                                        json.dumps(ask.keys), time.time()))
        store.audit("hook_ask_filed", {"run_id": run_id, "approval_id": approval.id, "client": ask.client,
                                       "repository": ask.repository, "tool": ask.tool, "rule": ask.rule,
                                       "digest": approval.digest})
    ask.approval_id, ask.digest = approval.id, approval.digest
    return ask


def state(store: Store, approval_id: str) -> JSONObject:
    row = store.conn.execute("SELECT status, resolved_by, resolution_reason, digest, expires_at FROM approvals"
                             " WHERE id=?", (approval_id,)).fetchone()
    if row is None:
        return {"status": "missing", "by": None, "reason": "", "digest": ""}
    return {"status": row["status"], "by": row["resolved_by"], "reason": row["resolution_reason"] or "",
            "digest": row["digest"], "expires_at": row["expires_at"]}


def take(store: Store, approval_id: str, digest: str) -> bool:
    """The approved call is about to run: consumed once, and only for the digest the hook filed."""
    return store.consume(approval_id, digest)


def withdraw(store: Store, approval_id: str, why: str) -> bool:
    """The hook answers without a decision (deadline, signal, error): the approval is closed as expired, so a
    later approval decides nothing. False when a person decided first (read `state` again)."""
    cur = store.conn.execute("UPDATE approvals SET status='expired', resolved_at=?, resolved_by=?,"
                             " resolution_reason=? WHERE id=? AND status='pending'",
                             (time.time(), WITHDRAWN_BY, why, approval_id))
    if cur.rowcount == 1:
        _close_run(store, approval_id, RunStatus.CANCELLED, error=why)
        return True
    return False


def settle(store: Store, approval: Approval) -> None:
    """A person decided an ask: its run records the decision as its output (it is never executed; `done`
    either way: the ask was answered, which `sentinel approve/deny` report as the success it is)."""
    by = approval.resolved_by or "?"
    if approval.approved:
        text = f"approved by {by}: the coding agent's hook lets the call run"
    else:
        why = f": {approval.resolution_reason}" if approval.resolution_reason else ""
        text = f"{approval.status} by {by}{why}: the coding agent's hook denies the call"
    _close_run(store, approval.id, RunStatus.DONE, output=text)


def _close_run(store: Store, approval_id: str, status: str, output: str | None = None,
               error: str | None = None) -> None:
    row = store.conn.execute("SELECT run_id FROM approvals WHERE id=?", (approval_id,)).fetchone()
    if row is not None:
        store.set_status(row["run_id"], status, output=output, error=error)


def of_approval(store: Store, approval_id: str) -> HookAsk | None:
    row = store.conn.execute("SELECT * FROM hook_asks WHERE approval_id=?", (approval_id,)).fetchone()
    if row is None:
        return None
    return HookAsk(approval_id=row["approval_id"], client=row["client"], repository=row["repository"],
                   rule=row["rule"], keys=json.loads(row["keys"]), created_at=row["created_at"])


# -- the allowlist ------------------------------------------------------------------------------

def check_always(store: Store, approval_id: str) -> None:
    """Before a decision with `always`: only an ask with an exact call can join an allowlist, and never one held by
    the gate's own-files rule (a usage error otherwise, with nothing decided: approve it once)."""
    ask = of_approval(store, approval_id)
    if ask is None:
        store.get_approval(approval_id)  # NotFound for an unknown id
        raise UsageError(f"approval {approval_id} is no coding agent's ask: --always is for those only")
    if not ask["keys"]:
        raise UsageError(f"approval {approval_id}: this call has nothing exact to allowlist")
    if OWN_FILES in ask["rule"].split(","):
        raise UsageError(f"approval {approval_id} cannot be approved always: it writes Sentinel's own files (rule "
                         f"{OWN_FILES}), which a person decides each time; approve it once")


TABLE = "hook_client_allowlist"   # each entry names the client it was allowed for
OLD_TABLE = "hook_allowlist"        # entries made before: no client, so they match no call (listed, revocable)
COLUMNS = "repository, kind, value, added_by, added_at, approval_id"


def allow_always(store: Store, approval_id: str, by: str) -> list[list[str]]:
    """Add the exact call of an ask to its repository's allowlist, for the client that asked (a decision's "always
    here"): the same call from another coding agent asks, as its card named the one that asked."""
    check_always(store, approval_id)
    ask = of_approval(store, approval_id)
    assert ask is not None  # check_always refused any other
    for kind, value in ask["keys"]:
        store.conn.execute(f"INSERT INTO {TABLE} (client, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
                           " ON CONFLICT DO NOTHING",
                           (ask["client"], ask["repository"], kind, value, by, time.time(), approval_id))
    store.audit("hook_allowlisted", {"approval_id": approval_id, "repository": ask["repository"],
                                     "client": ask["client"], "keys": ask["keys"], "by": by})
    return list(ask["keys"])


def allowlisted(store: Store, repository: str, client: str, keys: list[list[str]]) -> bool:
    """Every key of the call allowed for this client in this repository (an entry of another client, or an old
    one naming none, matches nothing)."""
    if not keys or not client:
        return False
    for kind, value in keys:
        if store.conn.execute(f"SELECT 1 FROM {TABLE} WHERE repository=? AND client=? AND kind=? AND value=?",
                              (repository, client, kind, value)).fetchone() is None:
            return False
    return True


def allowlist(store: Store, repository: str | None = None) -> list[JSONObject]:
    """Every entry (of one repository), each with the client it was allowed for (None: an old entry, which
    matches no call)."""
    where, params = (" WHERE repository=?", [repository]) if repository else ("", [])
    entries: list[JSONObject] = [dict(r) for r in store.conn.execute(f"SELECT client, {COLUMNS} FROM {TABLE}{where}",
                                                                     params)]
    entries += [{"client": None, **dict(r)} for r in store.conn.execute(f"SELECT {COLUMNS} FROM {OLD_TABLE}{where}",
                                                                        params)]
    return sorted(entries, key=lambda e: (str(e["repository"]), e["client"] is None, str(e["client"] or ""),
                                          str(e["kind"]), str(e["value"])))


def revoke(store: Store, repository: str, kind: str | None = None, value: str | None = None,
           client: str | None = None, by: str = "") -> int:
    """Remove allowlist entries of a repository (one exact entry, one kind, or all; of one client, else of every
    client and the old entries too); the next such call asks."""
    count = 0
    for table in (TABLE,) if client is not None else (TABLE, OLD_TABLE):
        sql, params = f"DELETE FROM {table} WHERE repository=?", [repository]
        for column, wanted in (("kind", kind), ("value", value), ("client", client if table == TABLE else None)):
            if wanted is not None:
                sql, params = sql + f" AND {column}=?", params + [wanted]
        count += int(store.conn.execute(sql, params).rowcount)
    store.audit("hook_allowlist_revoked", {"repository": repository, "kind": kind, "value": value, "client": client,
                                           "by": by, "revoked": count})
    return count
