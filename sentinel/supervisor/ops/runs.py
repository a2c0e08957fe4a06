"""Runs and chat sessions on the operator socket: start, send, interrupt, resume, cancel, run a workflow; list
them, show one, stream its events. Each handler takes its operation's declared request
(sentinel/engine/operations.py), already checked field by field."""

from __future__ import annotations

import pwd
from pathlib import Path

from sentinel.engine.rows import StoredRun
from sentinel.engine import asks, lifecycle, relay
from sentinel.engine.api import RunDetail
from sentinel.engine.events import Translator
from sentinel.engine.operations import (Cancel, Events, Interrupt, Resume, RunWorkflow, Runs, Send, Sessions, Show,
                                        Start, Undo)
from sentinel.engine.state import RunState
from sentinel.engine.status import SETTLED, RunStatus
from sentinel.engine.store import Store
from sentinel.errors import NotFound, UsageError
from sentinel.frames import reply
from sentinel.jsontypes import JSONObject
from sentinel.supervisor import children, flows, layout, registry, runmodel
from sentinel.supervisor.hub import Client, Hub, caller
from sentinel.supervisor.ops.common import (ITEM_BYTES, MAX_ROWS, Reply, fit, follow, outcome, records, state,
                                            stream)


# -- reads ------------------------------------------------------------------------------------------------

def runs(sup: Hub, conn: Client, req: Runs) -> Reply:
    rows = sup.store.list_runs(limit=min(req.limit or MAX_ROWS, MAX_ROWS), all_hosts=req.all_hosts)
    return reply([r.to_dict() for r in rows])


def show(sup: Hub, conn: Client, req: Show) -> Reply:
    store = sup.store
    row = store.get_run(req.run_id)
    now = state(store, row)
    stream(conn, "messages", now.messages)  # the agent's conversation, as its journal has it
    full, compactions = _history(store, row, now)
    stream(conn, "history", full)  # as it happened, before any compaction
    stream(conn, "decisions", store.verdicts(row["id"]))  # verdicts from the supervisor's store only
    detail = RunDetail.of(row, now, status=row["status"], decisions=[], history=[], compactions=compactions,
                          children=store.children(row["id"]), pending=store.pending_listing(row["id"]))
    return reply(detail.to_dict() | {"messages": []})  # streamed above: an answer frame has a size limit


def _history(store: Store, row: StoredRun, now: RunState) -> tuple[list[JSONObject], list[JSONObject]]:
    """The conversation before compactions, and the compactions, when there were any."""
    from sentinel.engine.state import history

    if not now.compactions:
        return now.messages, []
    return history(records(store, row))


def events(sup: Hub, conn: Client, req: Events) -> Reply:
    store = sup.store
    run_id = req.run_id
    if not run_id:
        newest = store.list_runs(limit=1)
        if not newest:
            raise NotFound("no runs yet")
        run_id = newest[0].id
    row = store.get_run(run_id)
    translator, last = Translator(row["id"]), req.after
    for record in records(store, row):
        for event in translator.feed(record):
            if event.seq > req.after:
                conn.send({"event": fit(event.to_dict(), ITEM_BYTES)})
                last = event.seq
    if req.follow and children.busy(sup, row["id"]):
        sup.watch(conn, row["id"], last)
        return None
    return reply(outcome(store, row["id"]))


def sessions(sup: Hub, conn: Client, req: Sessions) -> Reply:
    return reply([r.to_dict() for r in sup.store.list_sessions(min(req.limit or MAX_ROWS, MAX_ROWS))])


# -- acts -------------------------------------------------------------------------------------------------

def start(sup: Hub, conn: Client, req: Start, door: str = "operator") -> Reply:
    """A new run; `door`: which socket asked (agentdoor.py owns what its callers started there)."""
    store = sup.store
    if not req.task.strip():
        raise UsageError("TASK: must not be empty")
    agent, profile = registry.resolve(store, req.agent)
    pw = registry.account(agent, sup.settings.group)
    model = runmodel.choose(sup.config, agent.name, profile, req.model, pw.pw_dir, pw.pw_uid)
    sentinel_home = layout.agent_sentinel_home(pw.pw_dir)
    workspace = _workspace(req.workspace, pw) or str(sentinel_home / "workspace")
    skills = _skill_names(req.skills)
    run_id = store.new_run_id()
    if req.hook:  # a watcher firing's id: this run is its hook session
        check_hook(store, req.hook)
    store.create_run(run_id, agent=profile, task=req.task, model=model, workspace=workspace,
                     run_dir=sentinel_home / "runs" / run_id,
                     kind="hook" if req.hook else "chat" if req.chat else "task")
    if req.hook:
        relay.link(store.conn, req.hook, run_id)
    store.conn.execute("UPDATE runs SET user=? WHERE id=?", (agent.name, run_id))
    store.audit("run_started", {"run_id": run_id, "agent": agent.name, "profile": profile, "model": model,
                                "by": caller(conn).name, "uid": caller(conn).uid, "door": door})
    launched = sup.launch(run_id)
    assert launched is not None  # a task or chat run: only a workflow run has no worker
    launched.inbox = {"skills": [*skills]} if skills else {}
    return follow(sup, conn, run_id, req.follow)


def check_hook(store: Store, firing_id: str) -> None:
    """Before anything is persisted: the firing exists and has no hook session yet."""
    if relay.get(store.conn, firing_id)["run_id"] is not None:
        raise UsageError(f"firing {firing_id} already has its hook session")


def _workspace(value: str | None, pw: pwd.struct_passwd) -> str | None:
    """The workspace as its real path, resolved here (the operator's command sends it as typed): a link on the way
    that the agent's user could have made is refused, never followed (sentinel/leash/links.py `resolve`)."""
    from sentinel.leash import links

    if not value:
        return None
    if not value.startswith("/"):
        raise UsageError("--workspace: must be an absolute path in system mode")
    path = Path(links.workspace(value, (), links.Owner.of(pw)))
    if not path.is_dir():
        raise UsageError(f"--workspace: {value} is not a directory")
    return str(path)


def _skill_names(names: list[str]) -> list[str]:
    from sentinel.agents.skills import NAME

    if not all(NAME.match(n) for n in names):
        raise UsageError("skills: must be a list of skill names")
    return names


def run_workflow(sup: Hub, conn: Client, req: RunWorkflow) -> Reply:
    """`sentinel workflow run`: the operator's workflow (read by the CLI from the operator's own files),
    validated whole against the roster before anything runs, then walked by the supervisor."""
    flow = flows.parse(sup, req.workflow, req.source or f"workflows/{req.name}.yaml")

    def heard(run_id: str) -> None:
        conn.send({"started": run_id})
        sup.watch(conn, run_id)

    run_id = flows.start(sup, req.name, req.input_text, flow, follow=heard if req.follow else None)
    sup.store.audit("workflow_started", {"run_id": run_id, "workflow": req.name, "by": caller(conn).name})
    sup.launch(run_id)  # walks to its first step; a workflow that cannot start ends here (and tells its followers)
    return None if req.follow else reply(outcome(sup.store, run_id))


def resume(sup: Hub, conn: Client, req: Resume) -> Reply:
    return resume_run(sup, conn, req.run_id, req.follow)


def resume_run(sup: Hub, conn: Client, run_id: str, following: bool) -> Reply:
    store = sup.store
    row = store.get_run(run_id)
    if row["status"] in SETTLED or asks.is_ask(row):  # an idle chat session waits for `send`; an ask never runs
        return reply(outcome(store, run_id))
    if row["status"] == RunStatus.WAITING_APPROVAL and store.pending_approvals(run_id):
        return reply(outcome(store, run_id))
    if run_id in sup.workers:
        sup.workers[run_id].relaunch = True  # the pausing worker is still exiting: resume once it has
    else:
        sup.launch(run_id)
    return follow(sup, conn, children.waiting_top(store, run_id), following)  # a child's end carries on to its parents


def cancel(sup: Hub, conn: Client, req: Cancel) -> Reply:
    store = sup.store
    row = store.get_run(req.run_id)
    lifecycle.check_cancellable(row)
    lifecycle.cancelled(store, row["id"], f"cancelled by {caller(conn).name}")
    sup.cancel(row["id"])
    store.audit("run_cancelled", {"run_id": row["id"], "by": caller(conn).name})
    return reply(outcome(store, row["id"]))


def undo(sup: Hub, conn: Client, req: Undo) -> Reply:
    """Put a run's workspace back (sentinel/worker/undo.py): never by root in the agent's tree, but by a process the
    supervisor starts as the agent's user under its undo profile (workers.start_undo); the reply waits for it.
    Refused while the run's worker executes it (Busy, as local mode's lease)."""
    store = sup.store
    row = store.get_run(req.run_id)  # NotFound first, as local mode
    if row.get("kind") == flows.KIND:
        raise UsageError(f"run {row['id']} is a workflow: it changes no workspace itself; undo the runs of its "
                         f"steps (`sentinel show {row['id']}` lists them)")
    if store.shared and row.get("host") != store.host:
        raise UsageError(f"run {row['id']} executes on host {row.get('host')}: undo it there")
    sup.undo(row["id"], req.to, conn)
    return None


# -- chat sessions ------------------------------------------------------------------------------------------

def send(sup: Hub, conn: Client, req: Send) -> Reply:
    """A chat session's next message: its worker records it (with any skills) and runs the turn."""
    store = sup.store
    row = lifecycle.session_row(store, req.run_id)
    lifecycle.check_message(req.text)
    if row["status"] != RunStatus.IDLE or row["id"] in sup.workers:
        raise UsageError(f"session {row['id']} is {row['status']}, not waiting for a message")
    skills = _skill_names(req.skills)
    if req.model:  # the operator's config decides what the session may switch to
        runmodel.allowed(sup.config, row.get("user") or "", req.model, f"--model: {req.model}")
        store.set_model(row["id"], req.model)
    launched = sup.launch(row["id"])
    assert launched is not None  # a chat session: never a workflow run
    launched.inbox = {"message": req.text, "skills": [*skills]}
    store.audit("message_sent", {"run_id": row["id"], "by": caller(conn).name, "chars": len(req.text)})
    return follow(sup, conn, row["id"], req.follow)


def interrupt(sup: Hub, conn: Client, req: Interrupt) -> Reply:
    """Stop a session's turn: its worker is killed, its approvals can never be used, the session is idle."""
    store = sup.store
    row = lifecycle.session_row(store, req.run_id)
    lifecycle.check_stoppable(row)
    worker = sup.workers.get(row["id"])
    if worker is not None:
        worker.stopped, worker.relaunch = True, False
        sup.cancel(row["id"])
    lifecycle.stopped(store, row["id"], f"turn stopped by {caller(conn).name}")
    store.audit("turn_stopped", {"run_id": row["id"], "by": caller(conn).name})
    return reply(outcome(store, row["id"]))
