"""What an operator may ask on the operator socket. Every request is authorized from SO_PEERCRED first:
only root and members of the operator group get past `handle`.

Each engine operation is declared once in sentinel/engine/operations.py (its request's fields and its
result); `OPS` maps its wire name (the Engine method's name) to the handler here that executes it, after
`decode` checked every field (a wrong one is a usage error naming it). By concern:

    runs.py         start, send, interrupt, resume, cancel, run_workflow, undo; runs, show, events, sessions
    approvals.py    pending, approve, deny, link, decide_link (the approver's name comes from the kernel);
                    what a decision resumes, here or on the run's own host
    agents.py       catalog, trust_list, trust_revoke, mcp_trust*, audit_quarantined
    watchers.py     firings, inbox, fire_watcher
    admin.py        status; web_token, web_sign_in, web_session (console.py keeps them in the store)
    common.py       following a run (Watch), its outcome, its journal, long lists in `part` frames

The coding agents' asks (hook_ask*, hook_allowlist*: hookasks.py) are operator-socket ops outside the engine.

`start`, `send`, `resume`, `run_workflow`, `approve`, `deny`, `decide_link` and `events` with `follow` stream
`{"event": ...}` frames of the run until its worker exits, then reply with the outcome. `show` streams a run's
messages and decisions as `{"part": ...}` frames, so no reply grows past the frame limit however long the run.
Anything else a handler raises becomes one error reply in server.py, never the end of the supervisor.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from sentinel.engine import operations as declared
from sentinel.engine.operations import Operation, decode
from sentinel.errors import Busy, NotFound, SentinelError, UsageError
from sentinel.frames import failure
from sentinel.jsontypes import JSONObject
from sentinel.supervisor import hookasks
from sentinel.supervisor.hub import Client, Hub
from sentinel.supervisor.ops import admin, agents, approvals, runs, watchers
from sentinel.supervisor.ops.approvals import decided, executes_here, resume_decided
from sentinel.supervisor.ops.common import MAX_ROWS, Handler, Reply, Watch, fit, outcome

__all__ = ["OPS", "Handler", "MAX_ROWS", "Reply", "Watch", "answer", "decided", "executes_here", "fit", "handle",
           "outcome", "resume_decided", "start"]

O = TypeVar("O", bound=Operation[object])


def handle(sup: Hub, conn: Client, msg: JSONObject) -> Reply:
    peer = conn.peer
    op = msg.get("op")
    if peer is None or not peer.operator:
        who = f"{peer.name} (uid {peer.uid})" if peer else "unknown peer"
        sup.store.audit("operator_refused", {"op": str(op)[:64], "uid": peer.uid if peer else None,
                                              "user": peer.name if peer else None,
                                              "sandboxed": peer.sandboxed if peer else None})
        if peer is not None and peer.sandboxed:
            return failure("denied", f"permission denied: {who} runs inside a sandbox (no_new_privs); "
                                     "a sandboxed process never acts as an operator")
        return failure("denied", f"permission denied: {who} is not root or a member of group "
                                 f"{sup.settings.group!r}; only operators may use the supervisor")
    fn = OPS.get(op) if isinstance(op, str) else None
    if fn is None:
        return failure("usage", f"unknown operation {op!r}")
    return answer(fn, sup, conn, msg)


def answer(fn: Handler, sup: Hub, conn: Client, msg: JSONObject) -> Reply:
    """A handler's reply, or the one failure reply its error becomes."""
    try:
        return fn(sup, conn, msg)
    except NotFound as exc:
        return failure("not_found", str(exc))
    except Busy as exc:
        return failure("busy", str(exc))
    except UsageError as exc:
        return failure("usage", str(exc))
    except SentinelError as exc:
        return failure("error", str(exc))


def start(sup: Hub, conn: Client, msg: JSONObject, door: str = "operator") -> Reply:
    """`start` from a frame, for another door (agentdoor.py) that checked what its caller may start."""
    return runs.start(sup, conn, decode(declared.Start, msg), door)


def executes(cls: type[O], fn: Callable[[Hub, Client, O], Reply]) -> dict[str, Handler]:
    """The handler of operation `cls`: its request decoded (each field checked), then `fn`."""
    def handler(sup: Hub, conn: Client, msg: JSONObject) -> Reply:
        return fn(sup, conn, decode(cls, msg))

    return {cls.op: handler}


OPS: dict[str, Handler] = {
    **executes(declared.Start, runs.start), **executes(declared.Send, runs.send),
    **executes(declared.Interrupt, runs.interrupt), **executes(declared.Resume, runs.resume),
    **executes(declared.RunWorkflow, runs.run_workflow), **executes(declared.Cancel, runs.cancel),
    **executes(declared.Undo, runs.undo), **executes(declared.Runs, runs.runs), **executes(declared.Show, runs.show),
    **executes(declared.Events, runs.events), **executes(declared.Sessions, runs.sessions),
    **executes(declared.Pending, approvals.pending), **executes(declared.Approve, approvals.approve),
    **executes(declared.Deny, approvals.deny), **executes(declared.Link, approvals.link),
    **executes(declared.DecideLink, approvals.decide_link),
    **executes(declared.Catalog, agents.catalog), **executes(declared.TrustList, agents.trust_list),
    **executes(declared.TrustRevoke, agents.trust_revoke), **executes(declared.McpTrust, agents.mcp_trust),
    **executes(declared.McpTrustSet, agents.mcp_trust_set),
    **executes(declared.McpTrustForget, agents.mcp_trust_forget),
    **executes(declared.AuditQuarantined, agents.audit_quarantined),
    **executes(declared.Firings, watchers.firings), **executes(declared.Inbox, watchers.inbox),
    **executes(declared.FireWatcher, watchers.fire_watcher),
    **executes(declared.Status, admin.status), **executes(declared.WebToken, admin.web_token),
    **executes(declared.WebSignIn, admin.web_sign_in), **executes(declared.WebSession, admin.web_session),
    **hookasks.OPS,
}
