"""Child runs in local mode: made in the same store and executed in this process, under the same loop.

    children = LocalChildren(engine)      # deps.children of every run LocalEngine executes

`plan` resolves what a `delegate`, `spawn` or `run_workflow` call would make (the approval shows it);
`start` makes the child run once per call; `advance` executes it until it pauses or ends, never
resuming its parent (the parent is the one asking). A temporary subagent's profile lives in the roster
while it runs (`agents/sub-<id>.yaml`) and ends per `orchestration.temporary`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sentinel.agents import profile as profiles
from sentinel.engine.api import Outcome
from sentinel.engine.events import Listener
from sentinel.engine.run import Run
from sentinel.engine.rows import StoredRun
from sentinel.engine.state import RunState
from sentinel.engine.store import Approval, Store, new_id
from sentinel.engine.status import TERMINAL
from sentinel.jsontypes import JSONObject
from sentinel.tools import ToolError
from sentinel.worker.children import (SAVE_CALL, TEMPORARY, check_depth, grants, handoff,
                                      temporary_description)
from sentinel.workflows import model as workflows

if TYPE_CHECKING:
    from sentinel.config import Config


class Maker(Protocol):
    """What children need of the LocalEngine (sentinel/local/engine.py): its store, and making and advancing runs."""

    home: Path
    store: Store

    @property
    def config(self) -> Config: ...

    def create_run(self, task: str, *, agent: str, model: str, workspace: Path, mission: str = "",
                   parent_id: str | None = None, kind: str = "task", call_id: str | None = None, depth: int = 0,
                   grants: list[str] | None = None, on_event: Listener | None = None) -> Run: ...

    def create_workflow_run(self, name: str, input_text: str, *, workspace: Path | None = None,
                            parent_id: str | None = None, call_id: str | None = None, depth: int = 0,
                            grants: list[str] | None = None, flow: workflows.Workflow | None = None,
                            on_event: Listener | None = None) -> Run: ...

    def advance(self, run_id: str, on_event: Listener | None = None) -> Outcome: ...


class LocalChildren:
    def __init__(self, engine: Maker, on_event: Listener | None = None):
        self.engine = engine  # the LocalEngine: create_run, create_workflow_run, advance
        self.on_event = on_event  # the parent's listener: it hears its children live
        self.store = engine.store
        self.home = engine.home
        self.config = engine.config

    # -- what a call would make ---------------------------------------------------------------

    # untyped: the call's arguments and its plan (model JSON the tool's schema checked; worker/children.py's interface)
    def plan(self, tool: str, args: dict[str, Any], parent: RunState, granted: frozenset[str]) -> dict[str, Any]:
        check_depth(self._depth(parent.id) + 1, self.config.orchestration.max_depth)
        if tool == "delegate":
            profile = profiles.load(str(args["agent"]), self.home)
            return {"agent": profile.name, "task": args["task"], "model": profile.model or self.config.default_model,
                    "grants": grants(granted, profile.tools)}
        if tool == "spawn":
            return self._spawn_plan(args, granted)
        workflow = workflows.load(str(args["name"]), self.home)
        return {"workflow": args["name"], "input": args["input"],  # every step: the approval binds them all
                "steps": [s.model_dump() for s in workflow.steps], "grants": sorted(granted)}

    def _spawn_plan(self, args: dict[str, Any], granted: frozenset[str]) -> dict[str, Any]:  # untyped: as plan
        from sentinel.agents import skills as skill_mod

        model = args.get("model") or self.config.default_model
        problem = profiles.model_problem(model, self.config)
        if problem:
            raise ToolError(f"model: {problem}")
        known = skill_mod.names(self.home)
        for name in args.get("skills") or []:
            if name not in known:
                raise ToolError(f"skills: no skill {name!r} (available: {', '.join(sorted(known)) or 'none'})")
        return {"agent": "(temporary subagent)", "task": args["task"], "soul": args["soul"], "model": model,
                "skills": list(args.get("skills") or []), "grants": grants(granted, args.get("tools"), strict=True)}

    # -- making and advancing children ----------------------------------------------------------

    def child_for_call(self, parent_id: str, call_id: str) -> StoredRun | None:
        return self.store.child_for_call(parent_id, call_id)

    # untyped: the plan `plan` made, as the approval recorded it
    def start(self, parent: RunState, call_id: str, tool: str, plan: dict[str, Any], granted: frozenset[str]) -> str:
        depth = self._depth(parent.id) + 1
        check_depth(depth, self.config.orchestration.max_depth)
        given = grants(granted, plan["grants"], strict=True)  # checked again: the parent's grants now
        if tool == "run_workflow":
            flow = workflows.parse({"steps": plan["steps"]}, f"run_workflow {plan['workflow']!r}", self.home)
            run = self.engine.create_workflow_run(str(plan["workflow"]), str(plan["input"]), parent_id=parent.id,
                                                  call_id=call_id, depth=depth, grants=given, flow=flow)
        else:
            agent = self._temporary(plan, given) if tool == "spawn" else str(plan["agent"])
            run = self.engine.create_run(handoff(str(plan["task"]), self._request(parent)), agent=agent,
                                         model=str(plan["model"]), workspace=Path(parent.workspace),
                                         mission=str(plan["task"]), parent_id=parent.id, call_id=call_id,
                                         depth=depth, grants=given)
        run.close()  # made, not executed: `advance` leases it
        return run.state.id

    def start_step(self, workflow_run: RunState, key: str, agent: str, task: str) -> str:
        """A workflow step: a run of `agent` under the workflow run, granted what the workflow run was."""
        profile = profiles.load(agent, self.home)
        run = self.engine.create_run(task, agent=agent, model=profile.model or self.config.default_model,
                                     workspace=Path(workflow_run.workspace), parent_id=workflow_run.id, call_id=key,
                                     depth=self._depth(workflow_run.id) + 1, grants=self.store.grants_of(workflow_run.id))
        run.close()
        return run.state.id

    def advance(self, child_id: str) -> JSONObject:
        outcome = self.engine.advance(child_id, self.on_event)
        row = self.store.get_run(child_id)
        if outcome.status in TERMINAL and row["agent"].startswith(TEMPORARY):
            self._end_temporary(row)
        return {"id": child_id, "status": outcome.status, "output": outcome.output, "error": outcome.error}

    # -- internals --------------------------------------------------------------------------------

    def _depth(self, run_id: str) -> int:
        return int(self.store.get_run(run_id).get("depth") or 0)

    def _request(self, parent: RunState) -> str:
        """The head run's task: the operator's original request, however deep the parent is."""
        chain = self.store.parent_chain(parent.id)
        return str(self.store.get_run(chain[-1])["task"]) if chain else parent.task

    def _temporary(self, plan: dict[str, Any], given: list[str]) -> str:  # untyped: as start
        """Write the spawned subagent's profile and soul into the roster for its run."""
        name = new_id(TEMPORARY)
        profile = profiles.AgentProfile(name=name, description=temporary_description(str(plan["task"])),
                                        model=str(plan["model"]), tools=given, skills=list(plan.get("skills") or []))
        profiles.save(profile, self.home, soul=str(plan["soul"]))
        return name

    def _end_temporary(self, row: StoredRun) -> None:
        """Per orchestration.temporary: discard the profile, keep it, or ask (an approval to keep it)."""
        how, name = self.config.orchestration.temporary, row["agent"]
        if how == "save" or not profiles.profile_path(name, self.home).exists():
            return
        if how == "discard":
            return discard(name, self.home)
        if self.store.approval_for_call(row["id"], SAVE_CALL) is None:
            self.store.submit_approval(row["id"], SAVE_CALL, "save_agent", {"agent": name},
                                       "orchestration.temporary is ask: keep this temporary subagent in the roster?")


def discard(name: str, home: Path) -> None:
    for path in (profiles.profile_path(name, home), profiles.soul_path(name, home)):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def settle_save(approval: Approval, home: Path) -> bool:
    """An approval of `save_agent` was resolved: keep the subagent (approved) or discard it. True if it was one."""
    if approval.tool != "save_agent" or approval.call_id != SAVE_CALL:
        return False
    if approval.status not in ("approved", "consumed"):
        discard(str(approval.arguments.get("agent")), home)
    return True

