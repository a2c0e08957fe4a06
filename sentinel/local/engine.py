"""Local-mode operations on runs: start, resume, approve, deny (the engine the CLI calls).

Each operation leases the run, builds the loop's dependencies from config and
the agent profile, and executes the run in this process until it pauses or ends.
The supervisor (system mode) runs the same loop in a worker process instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sentinel import config as config_mod
from sentinel import paths
from sentinel.agents import profile as profiles
from sentinel.engine.run import Run
from sentinel.engine.state import RunState
from sentinel.engine.store import TERMINAL, Store, new_id
from sentinel.errors import UsageError

Listener = Callable[[dict[str, Any]], None]


@dataclass
class Outcome:
    id: str
    status: str
    output: str | None = None
    error: str | None = None
    approval_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "output": self.output, "error": self.error,
                "approval_id": self.approval_id}


class Engine:
    def __init__(self, home: Path | None = None, store: Store | None = None):
        self.home = home or paths.home()
        self.config = config_mod.load(self.home)
        self.store = store or Store.open(paths.state_dir(self.home) / "sentinel.db")

    def close(self) -> None:
        self.store.close()

    # -- operations -------------------------------------------------------------

    def start(self, task: str, *, model: str | None = None, agent: str | None = None,
              workspace: Path | None = None, listener: Listener | None = None, mission: str | None = None,
              parent_id: str | None = None) -> Outcome:
        if not task.strip():
            raise UsageError("TASK: must not be empty")
        profile = profiles.load(agent or self.config.default_agent, self.home)
        model_name = model or profile.model or self.config.default_model
        from sentinel.models import split

        split(model_name)  # a bad name is a usage error before anything is persisted
        ws = (workspace or paths.workspace_dir(self.home)).expanduser().resolve()
        if workspace is not None and not ws.is_dir():
            raise UsageError(f"--workspace: {ws} is not a directory")
        ws.mkdir(parents=True, exist_ok=True)
        run_id = new_id("r-")
        run_dir = paths.runs_dir(self.home) / run_id
        self.store.create_run(run_id, agent=profile.name, task=task, model=model_name, workspace=ws,
                              run_dir=run_dir, parent_id=parent_id)
        run = Run.create(run_dir, {"id": run_id, "task": task, "agent": profile.name, "model": model_name,
                                   "workspace": str(ws), "mission": mission or profile.mission or "",
                                   "parent_id": parent_id})
        return self._execute(run, profile, listener)

    def resume(self, run_id: str, listener: Listener | None = None) -> Outcome:
        row = self.store.get_run(run_id)
        if row["status"] in TERMINAL:
            return self._outcome_of(row)
        run = Run.open(Path(row["run_dir"]))
        if run.state.status in TERMINAL:  # the journal finished but the registry missed it
            run.close()
            self.store.set_status(run_id, run.state.status, output=run.state.output, error=run.state.error)
            return self._outcome_of(self.store.get_run(run_id))
        return self._execute(run, profiles.load(run.state.agent, self.home), listener)

    def approve(self, ident: str, *, by: str, listener: Listener | None = None) -> Outcome:
        approval = self.store.resolve(self.approval_id(ident), True, by)
        return self.resume(approval.run_id, listener)

    def deny(self, ident: str, *, by: str, reason: str = "", listener: Listener | None = None) -> Outcome:
        approval = self.store.resolve(self.approval_id(ident), False, by, reason)
        return self.resume(approval.run_id, listener)

    def approval_id(self, ident: str) -> str:
        """An approval id, or a run id with exactly one pending approval."""
        if ident.startswith("a-"):
            return ident
        pending = self.store.pending_approvals(ident)
        if not pending:
            self.store.get_run(ident)  # NotFound for an unknown id
            raise UsageError(f"run {ident} has no pending approval")
        if len(pending) > 1:
            raise UsageError(f"run {ident} has {len(pending)} pending approvals; name one: "
                             + ", ".join(a.id for a in pending))
        return pending[0].id

    # -- queries --------------------------------------------------------------

    def show(self, run_id: str) -> dict[str, Any]:
        row = self.store.get_run(run_id)
        state = RunState.load(Path(row["run_dir"]))
        status = self._live_status(row)
        decisions = [{"call_id": d["call_id"], "tool": d["tool"], "arguments": d.get("arguments"),
                      "outcome": d["outcome"], "reason": d["reason"], "layers": d.get("layers", []),
                      "approval": state.resolved.get(d["call_id"])}
                     for d in state.decisions.values()]
        return {"id": run_id, "status": status, "task": row["task"], "agent": row["agent"], "model": row["model"],
                "workspace": row["workspace"], "output": state.output, "error": state.error, "steps": state.steps,
                "created_at": row["created_at"], "messages": state.messages, "decisions": decisions,
                "pending_approvals": [a.public() for a in self.store.pending_approvals(run_id)]}

    def runs(self) -> list[dict[str, Any]]:
        rows = self.store.list_runs()
        for row in rows:
            if row["status"] == "running":
                row["status"] = self._live_status(self.store.get_run(row["id"]))
        return rows

    def _live_status(self, row: dict[str, Any]) -> str:
        """A run marked running whose process is gone is `interrupted` (resume it)."""
        if row["status"] == "running" and not Run.is_leased(Path(row["run_dir"])):
            return "interrupted"
        return row["status"]

    # -- internals ------------------------------------------------------------

    def _execute(self, run: Run, profile: profiles.AgentProfile, listener: Listener | None) -> Outcome:
        from sentinel.worker.setup import build_deps, initial_messages
        from sentinel.worker.loop import AgentLoop

        with run:
            if listener:
                run.listeners.append(listener)
            deps = build_deps(self.config, self.home, profile, run.state, self.store)
            if not run.state.messages:  # new, or stopped between `created` and its first messages
                run.record(*initial_messages(self.home, profile, deps, run.state.task))
            AgentLoop(run, deps).execute()
            state = run.state
        approval = next(iter(a.id for a in self.store.pending_approvals(state.id)), None)
        return Outcome(state.id, state.status, state.output, state.error, approval)

    def _outcome_of(self, row: dict[str, Any]) -> Outcome:
        return Outcome(row["id"], row["status"], row.get("output"), row.get("error"))


def operator_name() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())
