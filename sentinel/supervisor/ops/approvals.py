"""The approval queue on the operator socket: list it, approve or deny (the approver's name comes from the
kernel, not the client), one-tap links; then what a decision resumes, here or on the run's own host."""

from __future__ import annotations


from sentinel.engine.rows import StoredRun
from sentinel.engine import asks, outbox
from sentinel.engine.operations import Approve, DecideLink, Deny, Link, Pending
from sentinel.engine.store import Approval, Store
from sentinel.errors import NotFound
from sentinel.frames import reply
from sentinel.supervisor.hub import Client, Hub, caller
from sentinel.supervisor.ops.common import Reply, follow, outcome
from sentinel.supervisor.ops.runs import resume_run
from sentinel.worker.children import SAVE_CALL


def pending(sup: Hub, conn: Client, req: Pending) -> Reply:
    return reply([a.to_dict() for a in sup.store.pending_listing(None, all_hosts=req.all_hosts)])


def approve(sup: Hub, conn: Client, req: Approve) -> Reply:
    return _resolve(sup, conn, req.ident, True, "", req.digest, req.always, req.follow)


def deny(sup: Hub, conn: Client, req: Deny) -> Reply:
    return _resolve(sup, conn, req.ident, False, req.reason, req.digest, False, req.follow)


def _resolve(sup: Hub, conn: Client, ident: str, approved: bool, reason: str, digest: str | None, always: bool,
             following: bool) -> Reply:
    store = sup.store
    approval_id = store.approval_id(ident)
    if always:
        asks.check_always(store, approval_id)
    # trust in code is an operator's to give: a door user's approval runs the call once (agents/trust.py)
    approval = store.resolve(approval_id, approved, caller(conn).name, reason, digest=digest,
                             trusts=caller(conn).door == "operator")
    if always:
        asks.allow_always(store, approval.id, caller(conn).name)
    store.audit("approval_resolved", {"run_id": approval.run_id, "approval_id": approval.id, "approved": approved,
                                      "by": caller(conn).name, "uid": caller(conn).uid, "reason": reason,
                                      "door": caller(conn).door})
    return resume_decided(sup, conn, approval, following)


def link(sup: Hub, conn: Client, req: Link) -> Reply:
    """What a one-tap decision link (sentinel/notify) decides; refused (usage) when it can no longer be used."""
    return reply(outbox.link_view(sup.store, req.secret))


def decide_link(sup: Hub, conn: Client, req: DecideLink) -> Reply:
    """Decide with a one-tap link, once, then resume the run as `approve` and `deny` do."""
    approval = outbox.use_link(sup.store, req.secret, req.approved, req.reason, always=req.approved and req.always)
    return resume_decided(sup, conn, approval, req.follow)


def resume_decided(sup: Hub, conn: Client, approval: Approval, following: bool) -> Reply:
    """After a decision: a finished subagent is kept (or not); any other run resumes. Another host's run is
    left to its own supervisor, which heard of the decision (`decided`); a follower here hears how it ends."""
    store = sup.store
    if asks.is_ask(store.get_run(approval.run_id)):  # a coding agent's ask: its hook waits; no run resumes
        asks.settle(store, store.get_approval(approval.id))
        return reply(outcome(store, approval.run_id))
    if not executes_here(store, store.get_run(approval.run_id)):
        return follow(sup, conn, approval.run_id, following)
    if approval.tool == "save_agent" and approval.call_id == SAVE_CALL:  # a finished subagent: keep it?
        if approval.status == "approved":
            sup.settle(approval.run_id)
        return reply(outcome(store, approval.run_id))
    return resume_run(sup, conn, approval.run_id, following)


def executes_here(store: Store, row: StoredRun) -> bool:
    """Does this host's supervisor execute the run? On a shared store, only its own host's (docs/system-mode.md)."""
    return not store.shared or row.get("host") == store.host


def decided(sup: Hub, run_id: str) -> None:
    """A decision on `run_id` was recorded, on any host: if this host executes the run and it waits for nothing
    more, resume it. Idempotent (a run that runs, or still waits, is left alone), so hearing twice resumes once."""
    store = sup.store
    try:
        row = store.get_run(run_id)
    except NotFound:
        return
    if not executes_here(store, row) or asks.is_ask(row):  # an ask's run is never executed
        return
    if run_id in sup.workers:
        sup.workers[run_id].relaunch = True  # the pausing worker is still exiting: resume once it has
    elif row["status"] == "waiting_approval" and not store.pending_approvals(run_id):
        sup.launch(run_id)
