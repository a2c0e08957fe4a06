"""What an operator may ask on the operator socket. Every request is authorized from SO_PEERCRED first:
only root and members of the operator group get past `handle`.

    status, agents, runs, show, approvals           read
    start, approve, deny, resume, cancel            act (the approver's name comes from the kernel, not the client)
    trust_list, trust_revoke                        trusted code of agent-authored tools (approve records trust)
    logs                                            read, optionally following a run live
    sessions, catalog                               read: chat sessions; what a chat completes
    send, interrupt                                 act on a chat session: its next message; stop its turn
    web_token, web_sign_in, web_session             console sign-in tokens and sessions, kept in the store (console.py)
    link, link_decide                               a one-tap decision link from a notification: show it; use it once
    hook_ask*, hook_allowlist*                      coding agents' asks in the operator's queue (hookasks.py)
    firings, inbox                                  read: watcher firings with their relay outcome; the inbox
    watch_fire                                      fire an operator watcher now (`sentinel watch fire`)
    audit_quarantined                               record memory notes an operator's sync quarantined

`start`, `approve`, `deny`, `resume`, `send` and `logs` with `follow` stream `{"event": ...}` frames of
the run until its worker exits, then reply with the outcome. `show` streams a run's messages and
decisions as `{"part": ...}` frames, so no reply grows past the frame limit however long the run.

Every field is checked for its type before use (a wrong one is a usage error naming it); anything else
a handler raises becomes one error reply in server.py, never the end of the supervisor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from sentinel.engine import asks, db, lifecycle, outbox, relay
from sentinel.engine.api import Outcome, RunDetail
from sentinel.engine.events import KINDS, Translator
from sentinel.engine.records import Record
from sentinel.engine.state import JOURNAL, RunState
from sentinel.engine.rows import StoredRun
from sentinel.engine.store import Store
from sentinel.errors import Busy, NotFound, SentinelError, UsageError
from sentinel.supervisor import agentfs, children, console, flows, hookasks, layout, registry, runmodel
from sentinel.supervisor.hub import Client, Hub, caller
from sentinel.frames import failure, reply
from sentinel.worker.children import SAVE_CALL
from sentinel.engine.status import SETTLED, RunStatus

Handler = Callable[[Hub, Client, dict[str, Any]], "dict[str, Any] | None"]

MAX_ROWS = 1000            # runs listed in one reply
PART_BYTES = 2 << 20       # one `part` frame of show: items up to about this size
ITEM_BYTES = 1 << 20       # one message or decision in a show reply; longer strings are cut


@dataclass
class Watch:
    """A client following a run: gets each journal event newer than what it has seen, of the run and of the
    child runs below it (each run numbers its own events, so each is deduplicated on its own)."""

    conn: Client
    seq: int = 0
    run_id: str = ""
    children: dict[str, int] = field(default_factory=dict)

    def event(self, event: dict[str, Any]) -> None:
        """Durable events newer than the last one sent; transient ones (text deltas) as they come."""
        seq, run_id = event.get("seq"), str(event.get("run_id") or self.run_id)
        kind = KINDS.get(str(event.get("type")))
        if kind is None:
            return
        if kind.durable and isinstance(seq, int):
            own = run_id == self.run_id
            if seq <= (self.seq if own else self.children.get(run_id, 0)):
                return
            if own:
                self.seq = seq
            else:
                self.children[run_id] = seq
        self.conn.send({"event": event})


def handle(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any] | None:
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


def answer(fn: Handler, sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any] | None:
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


# -- reads ------------------------------------------------------------------------------------------

def _status(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    """What the supervisor knows; with the shared store unreachable, what it knows without it, and that."""
    store = sup.store
    doc: dict[str, Any] = {
        "mode": "system", "socket": str(sup.settings.socket_path), "state_dir": str(sup.settings.state_dir),
        "operator_group": sup.settings.group, "you": conn.peer.name if conn.peer else None,
        "store": _store_state(store), "sandbox": sup.config.sandbox, "resume_interrupted": sup.settings.resume,
        "default_model": sup.config.default_model, "muzzle": sup.muzzle_state(), "workers": sorted(sup.workers),
        "config": _config_state()}
    try:
        counts: dict[str, int] = {}
        for row in store.list_runs():
            counts[row.status] = counts.get(row.status, 0) + 1
        return reply(doc | {"default_agent": registry.default(store),
                            "agents": [a.name for a in registry.all_agents(store)], "runs": counts,
                            "pending_approvals": len(store.pending_approvals()), "model_hosts": _model_hosts(sup),
                            "unreadable": _unreadable(sup), "exposed": _exposed(sup), **_notify(sup)})
    except db.Unavailable as exc:
        return reply(doc | {"store": {**doc["store"], "reachable": False, "error": str(exc)}})


def _config_state() -> str:
    """Whether the operator's config.yaml still loads: the supervisor runs on what it read when it started, and
    an edit that broke the file shows only at its next start unless status says so now."""
    from sentinel import config as config_mod
    from sentinel.supervisor import layout

    path = layout.etc_dir() / "config.yaml"
    try:
        config_mod.load(layout.etc_dir())
    except SentinelError as exc:
        return (f"BROKEN: {exc} (the supervisor runs on the config it read when it started; fix the file before "
                "it restarts)")
    return f"ok ({path})"


def _store_state(store: Store) -> dict[str, Any]:
    if not store.shared:
        return {"backend": "sqlite", "host": store.host}
    return {"backend": "postgresql", "url": db.redact(str(store.path)), "host": store.host, "reachable": True}


def _unreadable(sup: Hub) -> list[str]:
    """Files a part of system mode (Muzzle, an agent's worker) cannot read, one line each."""
    from sentinel.supervisor import readable

    return readable.problems(sup.config, [a.user for a in registry.all_agents(sup.store)])


def _exposed(sup: Hub) -> list[str]:
    """Secrets an agent's user can read (it must not), one line each."""
    from sentinel.supervisor import readable

    return readable.exposed(sup.config, [a.user for a in registry.all_agents(sup.store)])


def _notify(sup: Hub) -> dict[str, Any]:
    """The `notify:` targets of /etc/sentinel/config.yaml, each ok or failing (the watcher child delivers)."""
    if not sup.config.notify:
        return {}
    return {"notify": outbox.target_status(sup.store.conn, [t.label for t in sup.config.notify])}


def _model_hosts(sup: Hub) -> list[dict[str, Any]]:
    """The `local/*` model hosts Muzzle runs (read from Muzzle's state directory)."""
    from sentinel.models.hosts import status
    from sentinel.muzzle.layout import system_layout

    return status(system_layout(sup.config).state_dir)


def _agents(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    return reply([a.public() for a in registry.all_agents(sup.store)])


def _runs(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    limit = _count(msg, "limit")
    rows = sup.store.list_runs(limit=min(limit or MAX_ROWS, MAX_ROWS), all_hosts=bool(msg.get("all_hosts")))
    return reply([r.to_dict() for r in rows])


def _show(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    store = sup.store
    row = _row(store, _text(msg, "run_id"))
    state = _state(store, row)
    _stream(conn, "messages", state.messages)  # the agent's conversation, as its journal has it
    full, compactions = _history(store, row, state)
    _stream(conn, "history", full)  # as it happened, before any compaction
    _stream(conn, "decisions", store.verdicts(row["id"]))  # verdicts from the supervisor's store only
    detail = RunDetail.of(row, state, status=row["status"], decisions=[], history=[], compactions=compactions,
                          children=store.children(row["id"]), pending=store.pending_listing(row["id"]))
    return reply(detail.to_dict() | {"messages": []})  # streamed above: an answer frame has a size limit


def _approvals(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    pending = sup.store.pending_listing(_text(msg, "run_id", required=False), all_hosts=bool(msg.get("all_hosts")))
    return reply([a.to_dict() for a in pending])


def _logs(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any] | None:
    store = sup.store
    run_id = _text(msg, "run_id", required=False)
    if not run_id:
        newest = store.list_runs(limit=1)
        if not newest:
            raise NotFound("no runs yet")
        run_id = newest[0].id
    row = _row(store, run_id)
    after = _count(msg, "after") or 0
    translator, last = Translator(row["id"]), after
    for record in _events(store, row):
        for event in translator.feed(record):
            if event.seq > after:
                conn.send({"event": fit(event.to_dict(), ITEM_BYTES)})
                last = event.seq
    if msg.get("follow") and children.busy(sup, row["id"]):
        sup.watch(conn, row["id"], last)
        return None
    return reply(outcome(store, row["id"]))


# -- acts -------------------------------------------------------------------------------------------

def _start(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any] | None:
    return start(sup, conn, msg)


def start(sup: Hub, conn: Client, msg: dict[str, Any], door: str = "operator") -> dict[str, Any] | None:
    """A new run; `door`: which socket asked (agentdoor.py owns what its callers started there)."""
    store = sup.store
    task = _text(msg, "task")
    if not task.strip():
        raise UsageError("TASK: must not be empty")
    agent, profile = registry.resolve(store, _text(msg, "agent", required=False))
    pw = registry.account(agent, sup.settings.group)
    model = runmodel.choose(sup.config, agent.name, profile, _text(msg, "model", required=False), pw.pw_dir,
                            pw.pw_uid)
    sentinel_home = layout.agent_sentinel_home(pw.pw_dir)
    workspace = _workspace(_text(msg, "workspace", required=False)) or str(sentinel_home / "workspace")
    skills = _skill_names(msg.get("skills"))
    run_id = store.new_run_id()
    hook = _text(msg, "hook", required=False)  # a watcher firing's id: this run is its hook session
    if hook:
        _check_hook(store, hook)
    store.create_run(run_id, agent=profile, task=task, model=model, workspace=workspace,
                     run_dir=sentinel_home / "runs" / run_id,
                     kind="hook" if hook else "chat" if msg.get("chat") else "task")
    if hook:
        relay.link(store.conn, hook, run_id)
    store.conn.execute("UPDATE runs SET user=? WHERE id=?", (agent.name, run_id))
    store.audit("run_started", {"run_id": run_id, "agent": agent.name, "profile": profile, "model": model,
                                "by": caller(conn).name, "uid": caller(conn).uid, "door": door})
    sup.launch(run_id).inbox = {"skills": skills} if skills else {}
    return _follow(sup, conn, run_id, msg)


def _workflow_start(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any] | None:
    """`sentinel workflow run`: the operator's workflow (read by the CLI from the operator's own files),
    validated whole against the roster before anything runs, then walked by the supervisor."""
    name = _text(msg, "name")
    flow = flows.parse(sup, msg.get("workflow"), _text(msg, "source", required=False) or f"workflows/{name}.yaml")

    def follow(run_id: str) -> None:
        conn.send({"started": run_id})
        sup.watch(conn, run_id)

    run_id = flows.start(sup, name, _text(msg, "input", required=False) or "", flow,
                         follow=follow if msg.get("follow") else None)
    sup.store.audit("workflow_started", {"run_id": run_id, "workflow": name, "by": caller(conn).name})
    sup.launch(run_id)  # walks to its first step; a workflow that cannot start ends here (and tells its followers)
    return None if msg.get("follow") else reply(outcome(sup.store, run_id))


def _workspace(value: Any) -> str | None:
    if not value:
        return None
    path = Path(str(value))
    if not path.is_absolute():
        raise UsageError("--workspace: must be an absolute path in system mode")
    if not path.is_dir():
        raise UsageError(f"--workspace: {path} is not a directory")
    return str(path)


def _approve(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any] | None:
    return _resolve(sup, conn, msg, approved=True)


def _deny(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any] | None:
    return _resolve(sup, conn, msg, approved=False)


def _resolve(sup: Hub, conn: Client, msg: dict[str, Any], approved: bool) -> dict[str, Any] | None:
    store = sup.store
    approval_id = store.approval_id(_text(msg, "ident"))
    reason = _text(msg, "reason", required=False) or ""
    always = approved and msg.get("always") is True
    if always:
        asks.check_always(store, approval_id)
    approval = store.resolve(approval_id, approved, caller(conn).name, reason,
                             digest=_text(msg, "digest", required=False))
    if always:
        asks.allow_always(store, approval.id, caller(conn).name)
    store.audit("approval_resolved", {"run_id": approval.run_id, "approval_id": approval.id, "approved": approved,
                                      "by": caller(conn).name, "uid": caller(conn).uid, "reason": reason,
                                      "door": caller(conn).door})
    return resume_decided(sup, conn, approval, msg)


def _link(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    """What a one-tap decision link (sentinel/notify) decides; refused (usage) when it can no longer be used."""
    return reply(outbox.link_view(sup.store, _text(msg, "secret")))


def _link_decide(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any] | None:
    """Decide with a one-tap link, once, then resume the run as `approve` and `deny` do."""
    approved = bool(msg.get("approved"))
    approval = outbox.use_link(sup.store, _text(msg, "secret"), approved,
                               _text(msg, "reason", required=False) or "", always=approved and msg.get("always") is True)
    return resume_decided(sup, conn, approval, msg)


def resume_decided(sup: Hub, conn: Client, approval: Any, msg: dict[str, Any]) -> dict[str, Any] | None:
    """After a decision: a finished subagent is kept (or not); any other run resumes. Another host's run is
    left to its own supervisor, which heard of the decision (`decided`); a follower here hears how it ends."""
    store = sup.store
    if asks.is_ask(store.get_run(approval.run_id)):  # a coding agent's ask: its hook waits; no run resumes
        asks.settle(store, store.get_approval(approval.id))
        return reply(outcome(store, approval.run_id))
    if not executes_here(store, store.get_run(approval.run_id)):
        return _follow(sup, conn, approval.run_id, msg)
    if approval.tool == "save_agent" and approval.call_id == SAVE_CALL:  # a finished subagent: keep it?
        if approval.status == "approved":
            sup.settle(approval.run_id)
        return reply(outcome(store, approval.run_id))
    return _resume_run(sup, conn, approval.run_id, msg)


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


def _resume(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any] | None:
    return _resume_run(sup, conn, _text(msg, "run_id"), msg)


def _resume_run(sup: Hub, conn: Client, run_id: str, msg: dict[str, Any]) -> dict[str, Any] | None:
    store = sup.store
    row = _row(store, run_id)
    if row["status"] in SETTLED or asks.is_ask(row):  # an idle chat session waits for `send`; an ask never runs
        return reply(outcome(store, run_id))
    if row["status"] == RunStatus.WAITING_APPROVAL and store.pending_approvals(run_id):
        return reply(outcome(store, run_id))
    if run_id in sup.workers:
        sup.workers[run_id].relaunch = True  # the pausing worker is still exiting: resume once it has
    else:
        sup.launch(run_id)
    return _follow(sup, conn, children.waiting_top(store, run_id), msg)  # a child's end carries on to its parents


def _follow(sup: Hub, conn: Client, run_id: str, msg: dict[str, Any]) -> dict[str, Any] | None:
    if not msg.get("follow"):
        return reply(outcome(sup.store, run_id))
    conn.send({"started": run_id})
    sup.watch(conn, run_id)
    return None


def _cancel(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    store = sup.store
    row = _row(store, _text(msg, "run_id"))
    lifecycle.check_cancellable(row)
    lifecycle.cancelled(store, row["id"], f"cancelled by {caller(conn).name}")
    sup.cancel(row["id"])
    store.audit("run_cancelled", {"run_id": row["id"], "by": caller(conn).name})
    return reply(outcome(store, row["id"]))


# -- chat sessions ----------------------------------------------------------------------------------

def _sessions(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    limit = _count(msg, "limit")
    return reply([r.to_dict() for r in sup.store.list_sessions(min(limit or MAX_ROWS, MAX_ROWS))])


def _send(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any] | None:
    """A chat session's next message: its worker records it (with any skills) and runs the turn."""
    store = sup.store
    row = lifecycle.session_row(store, _text(msg, "run_id"))
    text = _text(msg, "text")
    lifecycle.check_message(text)
    if row["status"] != RunStatus.IDLE or row["id"] in sup.workers:
        raise UsageError(f"session {row['id']} is {row['status']}, not waiting for a message")
    skills = _skill_names(msg.get("skills"))
    model = _text(msg, "model", required=False)
    if model:  # the operator's config decides what the session may switch to
        runmodel.allowed(sup.config, row.get("user") or "", model, f"--model: {model}")
        store.set_model(row["id"], model)
    sup.launch(row["id"]).inbox = {"message": text, "skills": skills}
    store.audit("message_sent", {"run_id": row["id"], "by": caller(conn).name, "chars": len(text)})
    return _follow(sup, conn, row["id"], msg)


def _interrupt(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    """Stop a session's turn: its worker is killed, its approvals can never be used, the session is idle."""
    store = sup.store
    row = lifecycle.session_row(store, _text(msg, "run_id"))
    lifecycle.check_stoppable(row)
    worker = sup.workers.get(row["id"])
    if worker is not None:
        worker.stopped, worker.relaunch = True, False
        sup.cancel(row["id"])
    lifecycle.stopped(store, row["id"], f"turn stopped by {caller(conn).name}")
    store.audit("turn_stopped", {"run_id": row["id"], "by": caller(conn).name})
    return reply(outcome(store, row["id"]))


def _catalog(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    """Agents, skills and workflows a chat with this agent can name (read beneath the agent's home)."""
    from sentinel.agents import catalog, skills as skill_files

    store = sup.store
    agent, _ = registry.resolve(store, _text(msg, "agent", required=False))
    pw = registry.account(agent, sup.settings.group)
    home, uid = pw.pw_dir, pw.pw_uid
    skills = {s.name: s for s in skill_files.bundled()}
    for name in filter(skill_files.NAME.match, agentfs.list_beneath(home, ".sentinel/skills", uid)):
        relative = f".sentinel/skills/{name}/SKILL.md"
        text = agentfs.read_text(home, relative, uid)
        if text is not None:
            skills[name] = skill_files.parse(name, text, Path(home, relative))
    profiles = [f"{agent.name}/{n[:-5]}" for n in agentfs.list_beneath(home, ".sentinel/agents", uid)
                if n.endswith(".yaml") and n[:-5] != agent.name]
    workflows = [n[:-5] for n in agentfs.list_beneath(home, ".sentinel/workflows", uid) if n.endswith(".yaml")]
    return reply({"agents": [{"name": n, "description": ""} for n in
                             [a.name for a in registry.all_agents(store)] + profiles],
                  "skills": catalog.listing(list(skills.values())),
                  "workflows": [{"name": n, "description": ""} for n in workflows]})


def _skill_names(value: Any) -> list[str]:
    from sentinel.agents.skills import NAME

    names = value or []
    if not isinstance(names, list) or not all(isinstance(n, str) and NAME.match(n) for n in names):
        raise UsageError("skills: must be a list of skill names")
    return names


def _trust_list(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    agent = msg.get("agent")
    return reply(sup.store.trusted_tools(str(agent) if agent else None))


def _trust_revoke(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    tool = msg.get("tool")
    if not isinstance(tool, str) or not tool:
        raise UsageError("TOOL: must not be empty")
    agent, sha = msg.get("agent"), msg.get("code_sha256")
    count = sup.store.revoke_trust(tool, agent=str(agent) if agent else None, code_sha256=str(sha) if sha else None,
                                    by=caller(conn).name)
    return reply({"revoked": count})


def _mcp_trust_get(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    return reply(sup.store.mcp_trust(_text(msg, "server")))


def _mcp_trust_set(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    """Pin a server as the operator's `sentinel mcp trust` listed it: the hash must be the listing's."""
    import json

    from sentinel.mcp.pin import digest

    server, sha, document = _text(msg, "server"), _text(msg, "sha256"), _text(msg, "document")
    try:
        ok = digest(json.loads(document)) == sha
    except ValueError:
        ok = False
    if not ok:
        raise UsageError("document: its SHA-256 is not sha256")
    sup.store.trust_mcp(server, sha, document, caller(conn).name)
    return reply(None)


def _mcp_trust_forget(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    return reply(sup.store.untrust_mcp(_text(msg, "server"), caller(conn).name))


# -- helpers ----------------------------------------------------------------------------------------

def _text(msg: dict[str, Any], name: str, *, required: bool = True) -> Any:
    """A string field (None when optional and absent); anything else is a usage error naming it."""
    value = msg.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{name}: must be a string" + ("" if value is not None else " (missing)"))
    return value


def _count(msg: dict[str, Any], name: str) -> int | None:
    value = msg.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{name}: must be a whole number, not {json.dumps(value)[:40]}")
    return value


def _stream(conn: Client, name: str, items: list[Any]) -> None:
    """Send `items` as `{"part": name, "items": [...]}` frames of about PART_BYTES each."""
    batch: list[Any] = []
    size = 0
    for item in items:
        item = fit(item, ITEM_BYTES)
        cost = len(json.dumps(item, ensure_ascii=False, default=str))
        if batch and size + cost > PART_BYTES:
            conn.send({"part": name, "items": batch})
            batch, size = [], 0
        batch.append(item)
        size += cost
    if batch:
        conn.send({"part": name, "items": batch})


def fit(item: Any, budget: int) -> Any:
    """`item` if it encodes within `budget` bytes; else a copy with its long strings cut (saying so)."""
    size = len(json.dumps(item, ensure_ascii=False, default=str))
    if size <= budget:
        return item
    cut = _cut(item, max(256, budget // 16))
    if len(json.dumps(cut, ensure_ascii=False, default=str)) <= budget:
        return cut
    note = f"[{size} bytes: too large to show here; the run's journal has it]"
    return {"role": item.get("role"), "content": note} if isinstance(item, dict) else note


def _cut(value: Any, keep: int) -> Any:
    if isinstance(value, str) and len(value) > keep:
        return value[:keep] + f"… [cut by the supervisor: {len(value) - keep} more characters]"
    if isinstance(value, dict):
        return {k: _cut(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v, keep) for v in value]
    return value


def outcome(store: Store, run_id: str) -> dict[str, Any]:
    row = _row(store, run_id)
    pending = store.pending_approvals(run_id) if row["status"] == RunStatus.WAITING_APPROVAL else []
    now = lifecycle.promoted(store, Outcome(run_id, row["status"], row.get("output"), row.get("error"),
                                            pending[0].id if pending else None))
    return {"id": now.id, "status": now.status, "output": now.output, "error": now.error,
            "approval_id": now.approval_id}


def _row(store: Store, run_id: str) -> StoredRun:
    return store.get_run(run_id)


def _owner(store: Store, row: StoredRun) -> tuple[str, int] | None:
    import pwd

    agent = registry.get(store, row.get("user") or "")
    if agent is None:
        return None
    try:
        pw = pwd.getpwnam(agent.user)
    except KeyError:
        return None
    return pw.pw_dir, pw.pw_uid


def _events(store: Store, row: StoredRun) -> list[Record]:
    if row.get("kind") == flows.KIND:  # walked by the supervisor: its journal is in the state directory
        from sentinel.engine import journal

        return journal.read(Path(row["run_dir"]) / JOURNAL)[0]
    owner = _owner(store, row)
    return agentfs.read_journal(owner[0], row["id"], owner[1])[0] if owner else []


def _state(store: Store, row: StoredRun) -> RunState:
    return agentfs.replay(_events(store, row))


def _history(store: Store, row: StoredRun, state: Any) -> tuple[list[Any], list[Any]]:
    """The conversation before compactions, and the compactions, when there were any."""
    from sentinel.engine.state import history

    if not state.compactions:
        return state.messages, []
    return history(_events(store, row))


# -- watchers (sentinel/watchers): firings and the operator's inbox -----------------------------------

def _check_hook(store: Store, firing_id: str) -> None:
    """Before anything is persisted: the firing exists and has no hook session yet."""
    if relay.get(store.conn, firing_id)["run_id"] is not None:
        raise UsageError(f"firing {firing_id} already has its hook session")


def _firings(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    rows = relay.history(sup.store.conn, _text(msg, "watcher", required=False), _count(msg, "limit") or MAX_ROWS)
    return reply([r.to_dict() for r in rows])


def _inbox(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    return reply([r.to_dict() for r in relay.inbox(sup.store.conn, _count(msg, "limit") or MAX_ROWS)])


def _watch_fire(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    """`sentinel watch fire ID` in system mode: an operator watcher fires now; its hook session is a worker
    and its relay contract is settled by the watcher child's timer."""
    from sentinel.watchers import spec
    from sentinel.watchers.runner import Runner

    watcher = spec.find(_text(msg, "id"), system=True)
    payload = msg.get("payload")

    class Starter:  # the runner's HookStarter: start the hook session as `start` does, without following it
        def start(self, task: str, *, model: str | None, agent: str | None, skills: Sequence[str],
                  hook: str | None) -> Any:
            return _start(sup, conn, {"task": task, "agent": agent, "model": model, "skills": list(skills),
                                      "hook": hook})

    firing_id = Runner(Starter(), sup.store, sup.config, [watcher], run_command=_no_command,
                       log=lambda line: None).fire(watcher, payload if payload is not None else {})
    sup.ensure_watchers()
    return reply(relay.get(sup.store.conn, firing_id))


def _no_command(argv: list[str], timeout_s: float, stdin: bytes | None) -> tuple[int | None, str]:
    """A firing made here polls no source and delivers nothing: the watcher child (its own user) does both."""
    raise UsageError("commands of a watcher run in its watcher process, not in the supervisor")


def _audit_quarantined(sup: Hub, conn: Client, msg: dict[str, Any]) -> dict[str, Any]:
    """One audit record per quarantined note, by the operator the kernel names; strings only, each bounded."""
    scope, findings = _text(msg, "scope"), msg.get("findings")
    if not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings):
        raise UsageError("findings: must be a list of objects")
    by = caller(conn).name
    for finding in findings[:MAX_ROWS]:
        fields = {k: str(finding.get(k) or "")[:1000] for k in ("note", "title", "finding")}
        sup.store.audit("memory_quarantined", {"scope": str(scope)[:200], **fields, "source": "cli", "by": by})
    return reply({"recorded": min(len(findings), MAX_ROWS)})


OPS: dict[str, Handler] = {
    "status": _status, "agents": _agents, "runs": _runs, "show": _show, "approvals": _approvals, "logs": _logs,
    "start": _start, "approve": _approve, "deny": _deny, "resume": _resume, "cancel": _cancel,
    "sessions": _sessions, "send": _send, "interrupt": _interrupt, "catalog": _catalog,
    "trust_list": _trust_list, "trust_revoke": _trust_revoke,
    "mcp_trust_get": _mcp_trust_get, "mcp_trust_set": _mcp_trust_set, "mcp_trust_forget": _mcp_trust_forget,
    "web_token": console.web_token, "web_sign_in": console.web_sign_in, "web_session": console.web_session,
    "link": _link, "link_decide": _link_decide,
    "firings": _firings, "inbox": _inbox, "watch_fire": _watch_fire, "audit_quarantined": _audit_quarantined,
    "workflow_start": _workflow_start,
    **hookasks.OPS,
}
