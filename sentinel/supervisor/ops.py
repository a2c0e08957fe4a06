"""What an operator may ask on the operator socket. Every request is authorized from SO_PEERCRED first:
only root and members of the operator group get past `handle`.

    status, agents, runs, show, approvals           read
    start, approve, deny, resume, cancel            act (the approver's name comes from the kernel, not the client)
    logs                                            read, optionally following a run live
    web_token                                       a one-time sign-in token for `sentinel web` (console.py)

`start`, `approve`, `deny`, `resume` and `logs` with `follow` stream `{"event": ...}` frames of the
run until its worker exits, then reply with the outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from sentinel.engine.events import KINDS, Translator
from sentinel.engine.store import TERMINAL, Store, new_id
from sentinel.errors import Busy, NotFound, SentinelError, UsageError
from sentinel.supervisor import agentfs, console, layout, registry
from sentinel.frames import failure, reply

if TYPE_CHECKING:
    from sentinel.supervisor.server import Conn, Supervisor

Handler = Callable[["Supervisor", "Conn", dict[str, Any]], "dict[str, Any] | None"]


@dataclass
class Watch:
    """A client following a run: gets each journal event newer than what it has seen."""

    conn: "Conn"
    seq: int = 0

    def event(self, event: dict[str, Any]) -> None:
        """Durable events newer than the last one sent; transient ones (text deltas) as they come."""
        seq = event.get("seq")
        kind = KINDS.get(str(event.get("type")))
        if kind is None:
            return
        if kind.durable:
            if isinstance(seq, int) and seq <= self.seq:
                return
            self.seq = seq if isinstance(seq, int) else self.seq
        self.conn.send({"event": event})


def handle(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any] | None:
    peer = conn.peer
    op = msg.get("op")
    if peer is None or not peer.operator:
        who = f"{peer.name} (uid {peer.uid})" if peer else "unknown peer"
        sup._store.audit("operator_refused", {"op": str(op)[:64], "uid": peer.uid if peer else None,
                                              "user": peer.name if peer else None})
        return failure("denied", f"permission denied: {who} is not root or a member of group "
                                 f"{sup.settings.group!r}; only operators may use the supervisor")
    fn = OPS.get(op) if isinstance(op, str) else None
    if fn is None:
        return failure("usage", f"unknown operation {op!r}")
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


# -- reads ------------------------------------------------------------------------------------------

def _status(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any]:
    store = sup._store
    counts: dict[str, int] = {}
    for row in store.list_runs():
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return reply({"mode": "system", "socket": str(sup.settings.socket_path), "state_dir": str(sup.settings.state_dir),
                  "operator_group": sup.settings.group, "you": conn.peer.name if conn.peer else None,
                  "default_agent": registry.default(store), "agents": [a.name for a in registry.all_agents(store)],
                  "sandbox": sup.config.sandbox, "resume_interrupted": sup.settings.resume,
                  "workers": sorted(sup.workers), "runs": counts, "pending_approvals": len(store.pending_approvals())})


def _agents(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any]:
    return reply([a.public() for a in registry.all_agents(sup._store)])


def _runs(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any]:
    return reply(sup._store.list_runs(limit=msg.get("limit")))


def _show(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any]:
    store = sup._store
    row = _row(store, str(msg.get("run_id")))
    state = _state(store, row)
    decisions = [{"call_id": d["call_id"], "tool": d["tool"], "arguments": d.get("arguments"),
                  "outcome": d["outcome"], "reason": d["reason"], "layers": d.get("layers", []),
                  "approval": state.resolved.get(d["call_id"])} for d in state.decisions.values()]
    return reply({"id": row["id"], "status": row["status"], "task": row["task"], "agent": row["agent"],
                  "user": row.get("user"), "model": row["model"], "workspace": row["workspace"],
                  "output": row.get("output") or state.output, "error": row.get("error") or state.error,
                  "steps": state.steps, "created_at": row["created_at"], "messages": state.messages,
                  "decisions": decisions, "pending_approvals": [a.public() for a in store.pending_approvals(row["id"])]})


def _approvals(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any]:
    return reply([a.public() for a in sup._store.pending_approvals(msg.get("run_id"))])


def _logs(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any] | None:
    store = sup._store
    run_id = msg.get("run_id")
    if not run_id:
        newest = store.list_runs(limit=1)
        if not newest:
            raise NotFound("no runs yet")
        run_id = newest[0]["id"]
    row = _row(store, str(run_id))
    after = msg.get("after") if isinstance(msg.get("after"), int) else 0
    translator, last = Translator(row["id"]), after
    for record in _events(store, row):
        for event in translator.feed(record):
            if event.seq > after:
                conn.send({"event": event.to_dict()})
                last = event.seq
    if msg.get("follow") and row["id"] in sup.workers:
        sup.watch(conn, row["id"], last)
        return None
    return reply(outcome(store, row["id"]))


# -- acts -------------------------------------------------------------------------------------------

def _start(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any] | None:
    store = sup._store
    task = msg.get("task")
    if not isinstance(task, str) or not task.strip():
        raise UsageError("TASK: must not be empty")
    agent, profile = registry.resolve(store, msg.get("agent"))
    pw = registry.account(agent, sup.settings.group)
    model = msg.get("model") or ""
    if model:
        from sentinel.models import split

        split(model)
    workspace = _workspace(msg.get("workspace"))
    run_id = new_id("r-")
    sentinel_home = layout.agent_sentinel_home(pw.pw_dir)
    store.create_run(run_id, agent=profile, task=task, model=model, workspace=workspace or "",
                     run_dir=sentinel_home / "runs" / run_id)
    store.conn.execute("UPDATE runs SET user=? WHERE id=?", (agent.name, run_id))
    store.audit("run_started", {"run_id": run_id, "agent": agent.name, "profile": profile, "by": conn.peer.name})
    sup.launch(run_id)
    return _follow(sup, conn, run_id, msg)


def _workspace(value: Any) -> str | None:
    if not value:
        return None
    path = Path(str(value))
    if not path.is_absolute():
        raise UsageError("--workspace: must be an absolute path in system mode")
    if not path.is_dir():
        raise UsageError(f"--workspace: {path} is not a directory")
    return str(path)


def _approve(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any] | None:
    return _resolve(sup, conn, msg, approved=True)


def _deny(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any] | None:
    return _resolve(sup, conn, msg, approved=False)


def _resolve(sup: "Supervisor", conn: "Conn", msg: dict[str, Any], approved: bool) -> dict[str, Any] | None:
    store = sup._store
    approval_id = store.approval_id(str(msg.get("ident") or ""))
    reason = str(msg.get("reason") or "")
    digest = msg.get("digest")
    approval = store.resolve(approval_id, approved, conn.peer.name, reason,
                             digest=str(digest) if digest is not None else None)
    store.audit("approval_resolved", {"run_id": approval.run_id, "approval_id": approval.id, "approved": approved,
                                      "by": conn.peer.name, "uid": conn.peer.uid, "reason": reason})
    return _resume_run(sup, conn, approval.run_id, msg)


def _resume(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any] | None:
    return _resume_run(sup, conn, str(msg.get("run_id")), msg)


def _resume_run(sup: "Supervisor", conn: "Conn", run_id: str, msg: dict[str, Any]) -> dict[str, Any] | None:
    store = sup._store
    row = _row(store, run_id)
    if row["status"] in TERMINAL:
        return reply(outcome(store, run_id))
    if row["status"] == "waiting_approval" and store.pending_approvals(run_id):
        return reply(outcome(store, run_id))
    if run_id in sup.workers:
        sup.workers[run_id].relaunch = True  # the pausing worker is still exiting: resume once it has
    else:
        sup.launch(run_id)
    return _follow(sup, conn, run_id, msg)


def _follow(sup: "Supervisor", conn: "Conn", run_id: str, msg: dict[str, Any]) -> dict[str, Any] | None:
    if not msg.get("follow"):
        return reply(outcome(sup._store, run_id))
    conn.send({"started": run_id})
    sup.watch(conn, run_id)
    return None


def _cancel(sup: "Supervisor", conn: "Conn", msg: dict[str, Any]) -> dict[str, Any]:
    store = sup._store
    row = _row(store, str(msg.get("run_id")))
    if row["status"] in TERMINAL:
        raise UsageError(f"run {row['id']} is already {row['status']}")
    store.set_status(row["id"], "cancelled", error=f"cancelled by {conn.peer.name}")
    store.cancel_approvals(row["id"])
    sup.cancel(row["id"])
    store.audit("run_cancelled", {"run_id": row["id"], "by": conn.peer.name})
    return reply(outcome(store, row["id"]))


# -- helpers ----------------------------------------------------------------------------------------

def outcome(store: Store, run_id: str) -> dict[str, Any]:
    row = _row(store, run_id)
    pending = store.pending_approvals(run_id)
    return {"id": run_id, "status": row["status"], "output": row.get("output"), "error": row.get("error"),
            "approval_id": pending[0].id if pending and row["status"] == "waiting_approval" else None}


def _row(store: Store, run_id: str) -> dict[str, Any]:
    from sentinel.supervisor.workers import run_row

    return run_row(store, run_id)


def _owner(store: Store, row: dict[str, Any]) -> tuple[str, int] | None:
    import pwd

    agent = registry.get(store, row.get("user") or "")
    if agent is None:
        return None
    try:
        pw = pwd.getpwnam(agent.user)
    except KeyError:
        return None
    return pw.pw_dir, pw.pw_uid


def _events(store: Store, row: dict[str, Any]) -> list[dict[str, Any]]:
    owner = _owner(store, row)
    return agentfs.read_journal(owner[0], row["id"], owner[1])[0] if owner else []


def _state(store: Store, row: dict[str, Any]) -> Any:
    from sentinel.engine.state import RunState

    owner = _owner(store, row)
    return agentfs.load_state(owner[0], row["id"], owner[1]) if owner else RunState()


OPS: dict[str, Handler] = {
    "status": _status, "agents": _agents, "runs": _runs, "show": _show, "approvals": _approvals, "logs": _logs,
    "start": _start, "approve": _approve, "deny": _deny, "resume": _resume, "cancel": _cancel,
    "web_token": console.web_token,
}
