"""Local mode: the engine protocol run in this process, on the current user's $SENTINEL_HOME.

    engine = LocalEngine()
    outcome = engine.start("task", on_event=render)      # executes until the run pauses or ends
    session = engine.start("hi", chat=True)               # a chat session: `idle` after each answer
    engine.send(session.id, "and now?")                   # the next turn

Each operation leases the run, wires the worker's loop for it (`sentinel.worker.setup`) and executes it
here until it pauses or ends. The supervisor (system mode) runs the same loop in a worker process
instead; both sides implement `sentinel.engine.api.Engine`.
"""

from __future__ import annotations

import dataclasses
import functools
from functools import cached_property
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence, TypeVar

from sentinel import config_stamp, paths
from sentinel.engine import asks, lifecycle, relay
from sentinel.engine.api import Closing, Outcome, RunDetail
from sentinel.engine.rows import ApprovalRow, FiringRow, InboxRow, RunRow, SessionRow, StoredRun
from sentinel.engine.store import Approval, Store, new_id
from sentinel.errors import Busy, Damaged, NotFound, SentinelError, UsageError
from sentinel.engine.status import SETTLED, TERMINAL, RunStatus
from sentinel.jsontypes import JSON, JSONObject

if TYPE_CHECKING:  # the journal's records, events and runs: imported by the operations that use them, not listings
    from sentinel.agents.profile import AgentProfile
    from sentinel.engine.events import Event, Listener
    from sentinel.engine.run import Run
    from sentinel.config import Config
    from sentinel.watchers.runner import Runner
    from sentinel.watchers.spec import Watcher
    from sentinel.workflows.model import Workflow

logger = logging.getLogger("sentinel.local")
Listed = TypeVar("Listed", RunRow, SessionRow)
FOLLOW_POLL_S = 0.2
STOPPED = "turn stopped by the operator"
WAITING_HINT = {"waiting_approval": ": answer its pending approval first",
                "interrupted": ": resume its interrupted turn first", "running": ": another process is running a turn"}


def _profile(name: str | None, home: Path) -> AgentProfile:
    """An agent's profile (its pydantic model is imported by the operations that run one, not by listings)."""
    from sentinel.agents import profile as profiles

    return profiles.load(name, home)


class LocalEngine(Closing):
    mode = "local"

    def __init__(self, home: Path | None = None, store: Store | None = None, note: str | None = None):
        self.home = home or paths.home()
        self._check_config()
        self.store = store or Store.open(paths.state_dir(self.home) / "sentinel.db")
        self.note = note  # why local mode was chosen, when a supervisor exists but is out of reach

    def _check_config(self) -> None:
        """A broken config.yaml fails every command, as one line; building its models waits for a use of them
        (`status` reads the facts its last validation recorded)."""
        self.facts = checked_facts(self.home, lambda: self.config)

    @cached_property
    def config(self) -> Config:
        from sentinel import config as config_mod

        return config_mod.load(self.home)

    def close(self) -> None:
        self.store.close()

    # -- operations -------------------------------------------------------------

    def start(self, task: str, *, model: str | None = None, agent: str | None = None,
              workspace: Path | None = None, on_event: Listener | None = None, mission: str | None = None,
              parent_id: str | None = None, chat: bool = False, skills: Sequence[str] = (),
              hook: str | None = None) -> Outcome:
        if not task.strip():
            raise UsageError("TASK: must not be empty")
        profile = _profile(agent or self.config.default_agent, self.home)
        model_name = model or profile.model or self.config.default_model
        self._check(model_name, skills)  # bad input is a usage error before anything is persisted
        if hook and relay.get(self.store.conn, hook)["run_id"] is not None:
            raise UsageError(f"firing {hook} already has its hook session")
        ws = self._workspace(workspace)
        run = self.create_run(task, agent=profile.name, model=model_name, workspace=ws,
                              mission=mission or profile.mission or "", parent_id=parent_id,
                              kind="hook" if hook else "chat" if chat else "task", on_event=on_event)
        if hook:
            relay.link(self.store.conn, hook, run.state.id)
        return self._bubble(self._execute(run, profile, on_event, skills=skills), on_event)

    def run_workflow(self, name: str, input_text: str = "", *, workspace: Path | None = None,
                     on_event: Listener | None = None) -> Outcome:
        """Validate the workflow whole, then run its steps in order, each a child run of the workflow's run."""
        run = self.create_workflow_run(name, input_text, workspace=self._workspace(workspace), on_event=on_event)
        run.close()
        return self._bubble(self.advance(run.state.id, on_event), on_event)

    def _workspace(self, workspace: Path | None) -> Path:
        """Its real path; a link on the way inside a path the agent's tools may write (the Leash policy's
        `read_write`) is refused, never followed (sentinel/leash/links.py `resolve`)."""
        from sentinel.leash import links, settings_cache

        writable = links.agent_writable(settings_cache.policy_for(None, system=False).read_write)
        ws = Path(links.workspace(workspace or paths.workspace_dir(self.home), writable))
        if workspace is not None and not ws.is_dir():
            raise UsageError(f"--workspace: {ws} is not a directory")
        ws.mkdir(parents=True, exist_ok=True)
        return ws

    def create_run(self, task: str, *, agent: str, model: str, workspace: Path, mission: str = "",
                   parent_id: str | None = None, kind: str = "task", call_id: str | None = None, depth: int = 0,
                   grants: list[str] | None = None, on_event: Listener | None = None) -> Run:
        """A new run in the store and its journal, leased to this process (close it, or execute it); `on_event`
        hears its `created` as it is journaled, and every event after it while this handle is open."""
        from sentinel.engine import records
        from sentinel.engine.run import Run

        run_id = new_id("r-")
        run_dir = paths.runs_dir(self.home) / run_id
        self.store.create_run(run_id, agent=agent, task=task, model=model, workspace=workspace, run_dir=run_dir,
                              parent_id=parent_id, kind=kind, call_id=call_id, depth=depth, grants=grants)
        return Run.create(run_dir, records.Created(id=run_id, task=task, agent=agent, model=model,
                                                   workspace=str(workspace), mission=mission, parent_id=parent_id,
                                                   kind=kind), listeners=[on_event] if on_event else [])

    def create_workflow_run(self, name: str, input_text: str, *, workspace: Path | None = None,
                            parent_id: str | None = None, call_id: str | None = None, depth: int = 0,
                            grants: list[str] | None = None, flow: "Workflow | None" = None,
                            on_event: Listener | None = None) -> Run:
        """A workflow's run, with the validated workflow kept beside its journal: an edit of the file later
        never changes a workflow that already runs. `flow`: the workflow as an approval bound it (else the file)."""
        from sentinel.workflows import model as workflows, runner

        flow = flow or workflows.load(name, self.home)
        if workspace is None:
            workspace = Path(self.store.get_run(parent_id)["workspace"]) if parent_id else self._workspace(None)
        run = self.create_run(input_text, agent=f"{runner.AGENT}{name}", model="-", workspace=workspace,
                              parent_id=parent_id, kind=runner.KIND, call_id=call_id, depth=depth, grants=grants,
                              on_event=on_event)
        runner.keep(run.dir, flow)
        return run

    def send(self, run_id: str, text: str, *, skills: Sequence[str] = (), model: str | None = None,
             on_event: Listener | None = None) -> Outcome:
        from sentinel.engine.run import Run

        lifecycle.check_message(text)
        row = lifecycle.session_row(self.store, run_id)
        status = self._live_status(row)
        if status != RunStatus.IDLE:
            raise UsageError(f"session {run_id} is {status}, not waiting for a message{WAITING_HINT.get(status, '')}")
        self._check(model, skills)
        run = Run.open(Path(row["run_dir"]))
        if model:
            self.store.set_model(run_id, model)
        return self._execute(run, _profile(run.state.agent, self.home), on_event, skills=skills,
                             message=text, model=model)

    def interrupt(self, run_id: str) -> Outcome:
        from sentinel.engine import records
        from sentinel.engine.run import Run

        row = lifecycle.session_row(self.store, run_id)
        lifecycle.check_stoppable(row)
        with Run.open(Path(row["run_dir"])) as run:  # Busy while another process executes the turn
            self.store.cancel_approvals(run_id)
            if run.state.status != RunStatus.IDLE or row["status"] != RunStatus.IDLE:
                run.record(records.Status.keeping_output(RunStatus.IDLE, error=STOPPED))
                self.store.set_status(run_id, RunStatus.IDLE, error=STOPPED)
        return self._outcome_of(self.store.get_run(run_id))

    def resume(self, run_id: str, *, on_event: Listener | None = None) -> Outcome:
        """Resume a run; when it ends, the parent waiting on it resumes too, up its chain."""
        return self._bubble(self.advance(run_id, on_event), on_event)

    def advance(self, run_id: str, on_event: Listener | None = None) -> Outcome:
        """Execute one run until it pauses or ends (a child run: its parent is not resumed here)."""
        from sentinel.engine.run import Run

        row = self.store.get_run(run_id)
        if row["status"] in SETTLED or asks.is_ask(row):  # an ask's run is never executed
            return self._outcome_of(row)
        run = Run.open(Path(row["run_dir"]))
        if run.state.status in TERMINAL:  # the journal finished but the registry missed it
            run.close()
            self.store.set_status(run_id, run.state.status, output=run.state.output, error=run.state.error)
            return self._outcome_of(self.store.get_run(run_id))
        from sentinel.workflows import runner

        if row.get("kind") == runner.KIND:
            return self._advance_workflow(run, on_event)
        return self._execute(run, _profile(run.state.agent, self.home), on_event)

    def _advance_workflow(self, run: Run, on_event: Listener | None) -> Outcome:
        from sentinel.local.children import LocalChildren
        from sentinel.workflows import model as workflows, runner

        with run:
            if on_event:
                run.listeners.append(on_event)
            flow = workflows.parse_file(run.dir / runner.FILE, self.home)
            status = runner.walk(run, flow, LocalChildren(self, on_event), self.store)
            state = run.state
        self._notify()
        return Outcome(state.id, status, state.output, state.error)

    def _bubble(self, outcome: Outcome, on_event: Listener | None) -> Outcome:
        """A run that ended resumes the parent waiting on it, and so on up; a run waiting on a child reports
        the approval its descendants wait for."""
        while outcome.status in TERMINAL and (parent := lifecycle.waiting_parent(self.store, outcome.id)):
            outcome = self.advance(parent, on_event)
        return lifecycle.promoted(self.store, outcome)

    def approve(self, ident: str, *, digest: str | None = None, on_event: Listener | None = None,
                by: str | None = None, follow: bool = True, always: bool = False) -> Outcome:
        """`always`: a coding agent's ask only; its exact call joins the repository's allowlist too."""
        approval_id = self.store.approval_id(ident)
        if always:
            asks.check_always(self.store, approval_id)
        # local mode: whoever reaches this engine is the operator (their own store), so code they approve is trusted
        approval = self.store.resolve(approval_id, True, by or operator_name(), digest=digest, trusts=True)
        if always:
            asks.allow_always(self.store, approval.id, approval.resolved_by or operator_name())
        return self._decided(approval, on_event, follow)

    def deny(self, ident: str, *, reason: str = "", digest: str | None = None, on_event: Listener | None = None,
             by: str | None = None, follow: bool = True) -> Outcome:
        approval = self.store.resolve(self.store.approval_id(ident), False, by or operator_name(), reason,
                                      digest=digest)
        return self._decided(approval, on_event, follow)

    def web_token(self, listening: str | None = None) -> JSONObject:
        """The web console's kept secret path and a one-time sign-in token for this user (sentinel/web/guard.py)."""
        from sentinel.engine import outbox, websessions

        if listening is not None:
            outbox.set_console_url(self.store.conn, outbox.checked_url(listening))
        operator = operator_name()
        return {"prefix": outbox.console_prefix(self.store.conn), "operator": operator,
                "console_url": outbox.console_url(self.store.conn),
                "token": websessions.issue_sign_in(self.store.conn, operator, websessions.SIGN_IN_TTL_S)}

    def web_sign_in(self, token: str, session_ttl_s: float) -> JSONObject | None:
        from sentinel.engine import websessions

        return websessions.trade_sign_in(self.store.conn, token, session_ttl_s)

    def web_session(self, secret: str) -> JSONObject | None:
        from sentinel.engine import websessions

        return websessions.session(self.store.conn, secret)

    def link(self, secret: str) -> JSONObject:
        """What a one-tap decision link (sentinel/notify) would decide; refused when it can no longer be used."""
        from sentinel.engine import outbox

        return outbox.link_view(self.store, secret)

    def decide_link(self, secret: str, *, approved: bool, reason: str = "", on_event: Listener | None = None,
                    follow: bool = True, always: bool = False) -> Outcome:
        """Approve or deny with a one-tap link, once, then execute the run as `approve` does."""
        from sentinel.engine import outbox

        approval = outbox.use_link(self.store, secret, approved, reason, always=always and approved)
        return self._decided(approval, on_event, follow)

    def _decided(self, approval: Approval, on_event: Listener | None, follow: bool) -> Outcome:
        """A decision was recorded: a finished subagent is kept or discarded, and the run resumes. `follow`:
        here, until it pauses or ends; else on this engine's runner in the background, answering at once."""
        from sentinel.local.children import settle_save

        row = self.store.get_run(approval.run_id)
        if asks.is_ask(row):  # a coding agent's ask: its hook is waiting for this decision; no run resumes
            asks.settle(self.store, self.store.get_approval(approval.id))
            return self._outcome_of(self.store.get_run(approval.run_id))
        if settle_save(self.store.get_approval(approval.id), self.home):
            self.store.consume(approval.id, approval.digest)
        if follow:
            return self._take_up(approval.run_id, on_event)
        in_background(f"resume-{approval.run_id}", functools.partial(_take_up_in, self.home, approval.run_id))
        row = self.store.get_run(approval.run_id)
        return Outcome(approval.run_id, RunStatus.RUNNING if row["status"] not in SETTLED else row["status"],
                       row.get("output"), row.get("error"))

    def cancel(self, run_id: str) -> Outcome:
        from sentinel.engine.run import Run

        row = self.store.get_run(run_id)
        lifecycle.check_cancellable(row)
        if Run.is_leased(Path(row["run_dir"])):
            raise Busy(f"run {run_id} is being executed by another process; stop that process first")
        lifecycle.cancelled(self.store, run_id, "cancelled")
        return Outcome(run_id, RunStatus.CANCELLED, row.get("output"), "cancelled")

    def undo(self, run_id: str, to: int | None = None) -> JSONObject:
        """Put the run's workspace back as it was after checkpoint `to` (0: before its first change; None: the one
        before the latest), with what its child runs in the same workspace changed (sentinel/worker/undo.py); the
        undo is itself a checkpoint, so it can be undone too. `elsewhere`: child runs in another workspace, left
        to their own undo."""
        from sentinel.worker import undo

        row = self.store.get_run(run_id)
        below = {r["id"]: r for r in self.store.descendants(run_id)}
        here, elsewhere = undo.in_workspace(row["workspace"], list(below.values()))
        try:
            done = undo.undo_run(Path(row["run_dir"]), Path(row["workspace"]), to,
                                 children=[Path(below[i]["run_dir"]) for i in here])
        except undo.UndoError as exc:
            raise UsageError(str(exc)) from None
        return {**done, "elsewhere": [{"id": i, "workspace": below[i]["workspace"]} for i in elsewhere]}

    # -- queries --------------------------------------------------------------

    def show(self, run_id: str) -> RunDetail:
        from sentinel.engine import journal
        from sentinel.engine.state import JOURNAL, RunState, history

        row = self.store.get_run(run_id)
        run_dir = Path(row["run_dir"])
        state = RunState.load(run_dir)
        full, compactions = history(journal.read(run_dir / JOURNAL)[0]) if state.compactions else (state.messages, [])
        return RunDetail.of(row, state, status=self._live_status(row),
                            decisions=self.store.verdicts(run_id),  # as recorded, never as the journal retells
                            history=full, compactions=compactions, children=self.store.children(run_id),
                            pending=self.store.pending_listing(run_id, user=operator_name()))

    def runs(self, *, status: str | None = None, limit: int | None = None,
             all_hosts: bool = False) -> list[RunRow]:  # local mode: one host
        wanted = [status] if status and status != RunStatus.INTERRUPTED else [RunStatus.RUNNING] if status else None
        rows = [self._live(row) for row in self.store.list_runs(limit=limit, status=wanted)]
        return [r for r in rows if not status or r.status == status]

    def pending(self, *, all_hosts: bool = False) -> list[ApprovalRow]:
        return self.store.pending_listing(user=operator_name())  # local mode's tools run as this user

    def sessions(self, *, limit: int | None = None) -> list[SessionRow]:
        return [self._live(row) for row in self.store.list_sessions(limit)]

    def catalog(self, agent: str | None = None) -> dict[str, list[dict[str, str]]]:
        from sentinel.agents import catalog

        return catalog.catalog(self.home)

    def events(self, run_id: str | None = None, *, after: int = 0, follow: bool = False) -> Iterator[Event]:
        from sentinel.engine import journal
        from sentinel.engine.events import Translator
        from sentinel.engine.run import Run
        from sentinel.engine.state import JOURNAL

        run_dir = self._run_dir(run_id)
        translator, offset, last = Translator(run_dir.name), 0, None
        while True:
            records, offset = journal.read(run_dir / JOURNAL, offset)
            for record in records:
                for event in translator.feed(record):
                    if event.seq > after:
                        yield event
            if not follow:
                return
            last = records[-1].type if records else last
            if not Run.is_leased(run_dir) and (last in ("status", "paused") or not records):
                return  # paused, ended, or nobody executes it any more (interrupted)
            time.sleep(FOLLOW_POLL_S)

    def firings(self, *, watcher: str | None = None, limit: int | None = None) -> list[FiringRow]:
        return relay.history(self.store.conn, watcher, limit)

    def inbox(self, *, limit: int | None = None) -> list[InboxRow]:
        return relay.inbox(self.store.conn, limit)

    def roster(self) -> list[str] | None:
        return None  # any agent profile here

    def trust_list(self, agent: str | None = None) -> list[JSONObject]:
        return self.store.trusted_tools(agent)

    def trust_revoke(self, tool: str, *, agent: str | None = None, code_sha256: str | None = None) -> int:
        return self.store.revoke_trust(tool, agent=agent, code_sha256=code_sha256, by=operator_name())

    def mcp_trust(self, server: str) -> JSONObject | None:
        pin: JSONObject | None = self.store.mcp_trust(server)
        return pin

    def mcp_trust_set(self, server: str, sha256: str, document: str) -> None:
        self.store.trust_mcp(server, sha256, document, operator_name())

    def mcp_trust_forget(self, server: str) -> None:
        self.store.untrust_mcp(server, operator_name())

    def fire_watcher(self, ident: str, payload: JSON, *, on_event: Listener | None = None) -> FiringRow:
        """One of this user's watchers fires in this process: its hook session runs here, then its relay."""
        from sentinel.watchers import spec

        watcher = spec.find(ident)
        runner = self.watcher_runner([watcher], on_event)
        return FiringRow.from_dict(runner.wait(runner.fire(watcher, payload)))

    def watcher_runner(self, watchers: list[Watcher], on_event: Listener | None = None) -> Runner:
        """A runner of local mode's watchers on this engine (`sentinel watch run` runs it in the foreground);
        `on_event` hears the hook sessions' events."""
        import functools
        from types import SimpleNamespace

        from sentinel.mcp.launch import make_workdir
        from sentinel.watchers.deliver import command_runner
        from sentinel.watchers import runner
        from sentinel.watchers.spec import user_dir

        run_command = command_runner(self.config, self.config.default_agent, paths.workspace_dir(self.home),
                                     make_workdir(user_dir(self.home)))
        starter = SimpleNamespace(start=functools.partial(self.start, on_event=on_event)) if on_event else self
        return runner.Runner(starter, self.store, self.config, watchers, run_command)

    def audit_quarantined(self, scope: str, findings: list[JSONObject]) -> None:
        for finding in findings:
            self.store.audit("memory_quarantined", {"scope": scope, **finding, "source": "cli"})

    def status(self) -> JSONObject:
        counts: dict[str, int] = {}
        for r in self.runs():
            counts[r.status] = counts.get(r.status, 0) + 1
        facts = self.facts
        data: JSONObject = {
            "mode": "local", "home": str(self.home), "default_model": facts.default_model,
            "default_agent": facts.default_agent, "sandbox": facts.sandbox, "tools": facts.tools,
            "leash": leash_summary(),
            "muzzle": "in-process, on first run (local mode)" if facts.muzzle else "disabled (no inspection)",
            "runs": dict[str, JSON](counts), "pending_approvals": len(self.store.pending_approvals()),
            "model_hosts": list[JSON](model_hosts(Path(facts.hosts_dir)))}
        if facts.notify:
            from sentinel.engine import outbox

            data["notify"] = list[JSON](outbox.target_status(self.store.conn, facts.notify))
        if self.note:
            data["note"] = self.note
        return data

    # -- internals ------------------------------------------------------------

    def _run_dir(self, run_id: str | None) -> Path:
        if run_id is None:
            newest = self.store.list_runs(limit=1)
            if not newest:
                raise NotFound("no runs yet")
            run_id = newest[0].id
        return Path(self.store.get_run(run_id)["run_dir"])

    def _live(self, row: Listed) -> Listed:
        """A listed run or session as it stands: one marked running whose process is gone is interrupted."""
        if row.status != RunStatus.RUNNING:
            return row
        return dataclasses.replace(row, status=self._live_status(self.store.get_run(row.id)))

    def _live_status(self, row: StoredRun) -> str:
        """A run marked running whose process is gone is `interrupted` (resume it)."""
        from sentinel.engine.run import Run

        if row["status"] == RunStatus.RUNNING and not Run.is_leased(Path(row["run_dir"])):
            return "interrupted"
        return str(row["status"])

    def _take_up(self, run_id: str, on_event: Listener | None) -> Outcome:
        """Resume a run whose approval was just resolved; when another process took it up first (a chat that
        was asking about that approval), follow that process until the run stops."""
        try:
            return self.resume(run_id, on_event=on_event)
        except Busy:
            seen = max((e.seq for e in self.events(run_id)), default=0)
            for event in self.events(run_id, after=seen, follow=True):
                if on_event:
                    on_event(event)
        row = self.store.get_run(run_id)
        approval = next(iter(a.id for a in self.store.pending_approvals(run_id)), None)
        return Outcome(run_id, self._live_status(row), row.get("output"), row.get("error"), approval)

    def _check(self, model: str | None, skills: Sequence[str]) -> None:
        from sentinel.agents import skills as skill_files
        from sentinel.models import split

        if model:
            provider, name = split(model)
            if provider == "local":
                from sentinel.models.weights import check_name

                check_name(name, self.config.muzzle.local_models)
        for name in skills:
            if skill_files.get(name, self.home) is None:
                raise UsageError(f"skill {name!r}: no skills/{name}/SKILL.md here or bundled")

    def _execute(self, run: Run, profile: AgentProfile, on_event: Listener | None, *,
                 skills: Sequence[str] = (), message: str | None = None, model: str | None = None) -> Outcome:
        from sentinel.local.children import LocalChildren
        from sentinel.worker.execute import execute_run

        deps = execute_run(run, self.home, self.config, profile, self.store, listener=on_event, message=message,
                           skills=skills, model=model, children=LocalChildren(self, on_event),
                           grants=self.store.grants_of(run.state.id), defer_curator=True)
        state = run.state
        if deps.keeper is not None and deps.keeper.deferred:
            from sentinel.worker import curate

            curate.start(self.home, state.id)  # the curator model's call, after this command has exited
        self._notify()
        approval = next(iter(a.id for a in self.store.pending_approvals(state.id)), None)
        return Outcome(state.id, state.status, state.output, state.error, approval)

    def _notify(self) -> None:
        """A run paused or ended: the detached deliverer sends what `notify:` asks for (sentinel/notify)."""
        if self.config.notify:
            import sqlite3

            from sentinel.notify.dispatch import kick

            try:
                kick(self.store, self.config, self.home)
            except (OSError, sqlite3.Error, Damaged) as exc:  # the run stands; its notification waits for the next kick
                print(f"warning: notify: could not queue or start the deliverer: {exc}", file=sys.stderr)

    def _outcome_of(self, row: StoredRun) -> Outcome:
        return Outcome(row["id"], row["status"], row.get("output"), row.get("error"))


def _take_up_in(home: Path, run_id: str) -> None:
    """Resume a decided run on a LocalEngine of this thread's own (a SQLite connection belongs to its thread)."""
    with LocalEngine(home) as engine:
        engine._take_up(run_id, None)


def in_background(label: str, work: Callable[[], None]) -> None:
    """Local mode's runner: `work` in a daemon thread of this process, so whoever handed it over (the web
    console, answering a decision) returns at once. What it raises is logged, never lost. A process that exits
    mid-run leaves the run `interrupted`, for `sentinel resume`."""
    def run() -> None:
        try:
            work()
        except SentinelError as exc:  # the decision stands; the run waits for `sentinel resume`
            logger.warning("%s: %s", label, exc)
        except Exception:  # a harness bug: the log has the traceback; the run waits for `sentinel resume`
            logger.exception("%s failed", label)

    threading.Thread(target=run, name=f"sentinel-{label}", daemon=True).start()


def model_hosts(state_dir: Path) -> list[JSONObject]:
    """The `local/*` model hosts this user's runs use (model, pid, RSS, state), by Muzzle's state directory."""
    from sentinel.models.hosts import status

    return status(state_dir)


def checked_facts(home: Path, load: Callable[[], Config] | None = None) -> config_stamp.Facts:
    """What `status` shows of config.yaml: as its last validation recorded them when it is unchanged since, else
    validated now (a ConfigError names the field) and recorded. `load`: the validation (default config.load)."""
    digest = config_stamp.current(home)
    facts = config_stamp.facts(home, digest)
    if facts is None:
        if load is None:
            from sentinel import config as config_mod

            facts = config_facts(config_mod.load(home), home)
        else:
            facts = config_facts(load(), home)
        config_stamp.record(home, digest, facts=facts)
    return facts


def config_facts(config: Config, home: Path) -> config_stamp.Facts:
    """What `status` shows of a validated config, recorded beside its stamp."""
    from sentinel.muzzle.layout import local_layout

    return config_stamp.Facts(
        default_model=config.default_model, default_agent=config.default_agent, sandbox=config.sandbox,
        tools=config.leash.tools, muzzle=config.muzzle.enabled, hosts_dir=str(local_layout(config, home).state_dir),
        notify=[t.label for t in config.notify], gate=config.gate.enabled, rules_dir=config.gate.rules_dir)


def leash_summary() -> str:
    """What the kernel here lets Leash enforce (`sentinel leash check` has the details)."""
    from sentinel.leash import cgroups, lsm

    abi = lsm.abi_version()
    landlock = f"Landlock ABI {abi}" if abi else "no Landlock"
    return f"{landlock}; cgroups {cgroups.describe()}"


def operator_name() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())
