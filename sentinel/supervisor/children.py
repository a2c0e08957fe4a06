"""Child runs in system mode: the supervisor's answers to a worker's child ops, and what a run's end wakes.

    child_plan       what a `delegate` call would make: the agent and model as the operator allows, the grants
    child_for_call   the child run a call of the worker's own run made, if any
    child_start      make and launch the child of a call decided (and approved) as exactly that plan
    child_advance    where the child stands; an interrupted child is launched again

The child runs as its own agent's user, in its own worker, under its own run token. Under a session
started at the agent door, a child runs only as the door user's own uid (doorscope.py): a delegation or
workflow step naming another agent is refused when planned and again when made. The worker's word is
never the child: child_start takes the plan from the decision the store holds for the call, requires the
approval that decision needed to be consumed for exactly that plan, and grants the child only tools the
parent was granted (the store's record of it) and the child's profile names. `carry_on` (on every worker
exit) keeps a waiting parent's followers until its child ends, then launches the parent again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping, Protocol, TypedDict

from sentinel.engine import lifecycle
from sentinel.engine.rows import StoredRun
from sentinel.engine.store import Store, call_digest, new_id
from sentinel.errors import NotFound, SentinelError, UsageError
from sentinel.frames import failure, reply
from sentinel.jsontypes import JSON, JSONObject
from sentinel.engine.state import RunState
from sentinel.engine.status import ANSWERED, TERMINAL, ApprovalStatus, RunStatus
from sentinel.supervisor import agentfs, doorscope, flows, layout, registry, runmodel
from sentinel.supervisor.hub import Hub
from sentinel.tools import ToolError
from sentinel.worker.children import (CHILD_TOOLS, SAVE_CALL, TEMPORARY, check_depth, grants, handoff,
                                      temporary_description)



class Refused(SentinelError):
    pass


class Subagent(TypedDict):
    """A temporary subagent's soul, skills and description, as its approved spawn planned them."""

    soul: str
    skills: list[JSON]
    description: str


class Asker(Protocol):
    """The worker a child op comes from (sentinel/supervisor/workers.py's Worker): whose run, as which agent."""

    run_id: str
    agent: registry.Agent
    uid: int
    home: str
    stopped: bool


def handle(sup: Hub, worker: Asker, msg: JSONObject) -> Mapping[str, object]:
    fn = OPS[str(msg["op"])]
    if worker.stopped:  # killed by `interrupt`: what it sent before dying starts nothing
        return failure("denied", f"an operator stopped the turn of run {worker.run_id}")
    try:
        return reply(fn(sup, worker, msg))
    except Refused as exc:
        sup.store.audit("worker_refused", {"run_id": worker.run_id, "op": msg["op"], "reason": str(exc)})
        return failure("denied", str(exc))
    except NotFound as exc:
        return failure("not_found", str(exc))
    except (UsageError, ToolError, KeyError, TypeError, ValueError) as exc:
        return failure("usage", str(exc))


def _plan(sup: Hub, worker: Asker, msg: JSONObject) -> JSONObject:
    tool, args = str(msg["tool"]), msg["arguments"]
    if tool not in CHILD_TOOLS or not isinstance(args, dict):
        raise UsageError(f"{tool} makes no child run")
    granted = _names(msg.get("granted"))
    if tool == "run_workflow":
        return plan_workflow(sup, worker, str(args["name"]), str(args["input"]), granted)
    if tool == "spawn":
        return plan_spawn(sup, worker, args, granted)
    return plan_delegation(sup, worker.run_id, own_profile(worker, str(args["agent"])), str(args["task"]), granted)


def own_profile(worker: Asker, ident: str) -> str:
    """A bare name that is a profile of the delegating agent (the roster its prompt lists) names that profile,
    never a registered agent of the same name: another Linux user, whom the approval would name ambiguously."""
    from sentinel.agents.profile import NAME

    if "/" in ident or ident == worker.agent.name or not NAME.match(ident):
        return ident
    fd = agentfs.open_beneath(worker.home, f".sentinel/agents/{ident}.yaml", worker.uid)
    if fd is None:
        return ident
    os.close(fd)
    return f"{worker.agent.name}/{ident}"


def plan_delegation(sup: Hub, parent_id: str, ident: str, task: str, granted: list[str] | None) -> JSONObject:
    """What a delegation (or a workflow step) would make. `granted`: the parent's tools (None: a workflow the
    operator started, whose steps get what their profiles grant)."""
    store = sup.store
    check_depth(_depth(store, parent_id) + 1, sup.config.orchestration.max_depth)
    agent, profile = registry.resolve(store, ident)
    doorscope.check_runs_as(store, parent_id, agent)
    pw = registry.account(agent, sup.settings.group)
    model = runmodel.choose(sup.config, agent.name, profile, None, pw.pw_dir, pw.pw_uid)
    have = _held(store, parent_id, granted)
    tools = _profile_tools(pw.pw_dir, profile, pw.pw_uid)
    if have is None:
        given = _array(sorted(tools)) if tools is not None else None
        return {"agent": ident, "task": task, "model": model, "grants": given}
    return {"agent": ident, "task": task, "model": model, "grants": _array(grants(have, tools))}


def _held(store: Store, run_id: str, claimed: list[str] | None) -> set[str] | None:
    """The tools a run holds: what its worker (or plan) says, never more than the store's record of what its
    parent granted it (a head run has none: the claim stands). None: no claim and no record."""
    stored = store.grants_of(run_id)
    if claimed is None:
        return set(stored) if stored is not None else None
    return set(claimed) & set(stored) if stored is not None else set(claimed)


def plan_spawn(sup: Hub, worker: Asker, args: JSONObject, granted: list[str]) -> JSONObject:
    """A temporary subagent: it runs as the spawning agent's own user, in its workspace, granted only tools
    the spawning run has (asking for more refuses the call), on a model the operator allows that agent."""
    from sentinel.agents import skills as skill_files

    store = sup.store
    check_depth(_depth(store, worker.run_id) + 1, sup.config.orchestration.max_depth)
    model = str(args.get("model") or sup.config.system.default_for(worker.agent.name, sup.config.default_model))
    try:
        runmodel.allowed(sup.config, worker.agent.name, model, f"model {model}")
    except UsageError as exc:
        raise ToolError(str(exc)) from None
    wanted = args.get("skills") or []
    if not isinstance(wanted, list):
        raise ToolError("skills: a list of skill names")
    known = {*(s.name for s in skill_files.bundled()), *agentfs.list_beneath(worker.home, ".sentinel/skills", worker.uid)}
    for name in wanted:
        if name not in known:
            raise ToolError(f"skills: no skill {name!r} (available: {', '.join(sorted(known)) or 'none'})")
    have = _held(store, worker.run_id, granted) or set()
    return {"agent": "(temporary subagent)", "task": str(args["task"]), "soul": str(args["soul"]), "model": model,
            "skills": [str(n) for n in wanted],
            "grants": _array(grants(have, _wanted_tools(args.get("tools")), strict=True))}


def plan_workflow(sup: Hub, worker: Asker, name: str, input_text: str, granted: list[str]) -> JSONObject:
    """A `run_workflow` call: the agent's saved workflow, read from its home without following anything it
    planted, validated against the roster; the plan carries every step, so the approval binds them all."""
    from sentinel.workflows import model as workflows

    store = sup.store
    check_depth(_depth(store, worker.run_id) + 2, sup.config.orchestration.max_depth)  # the steps run a level below
    workflows.check_name(name)
    source = f"~{worker.agent.user}/.sentinel/workflows/{name}.yaml"
    text = agentfs.read_text(worker.home, f".sentinel/workflows/{name}.yaml", worker.uid, runmodel.PROFILE_BYTES)
    if text is None:
        raise ToolError(f"no workflow {name!r} ({source} does not exist)")
    flow = flows.parse(sup, _yaml(text, source), source)
    for step in flow.steps:  # every step, before any runs: a door session's workflow names its own agent only
        doorscope.check_runs_as(store, worker.run_id, registry.resolve(store, step.agent)[0])
    return {"workflow": name, "input": input_text, "steps": [s.model_dump() for s in flow.steps],
            "grants": _array(sorted(_held(store, worker.run_id, granted) or ()))}


def _yaml(text: str, source: str) -> object:  # any value: flows.parse checks it whole
    import yaml

    from sentinel.errors import ConfigError

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(source, f"not valid YAML ({str(exc).splitlines()[0]})") from None


def _child_for_call(sup: Hub, worker: Asker, msg: JSONObject) -> StoredRun | None:
    return sup.store.child_for_call(worker.run_id, str(msg["call_id"]))


def _start(sup: Hub, worker: Asker, msg: JSONObject) -> str:
    store, call_id = sup.store, str(msg["call_id"])
    existing = store.child_for_call(worker.run_id, call_id)
    if existing is not None:
        return str(existing["id"])
    decided = store.decision_for_call(worker.run_id, call_id)
    tool = decided.get("tool") if decided else None
    plan = decided.get("arguments") if decided else None
    if decided is None or not isinstance(tool, str) or tool not in CHILD_TOOLS or not isinstance(plan, dict) \
            or decided.get("outcome") == "deny":
        raise Refused(f"call {call_id[:64]} was not decided as a delegation that may run")
    if decided["outcome"] != "needs_approval" and _operator_outcome(sup, tool) != "auto":
        raise Refused(f"call {call_id[:64]}: {tool} needs an operator's approval by the operator's policy")
    if decided["outcome"] != "auto":
        approval = store.approval_for_call(worker.run_id, call_id)
        if approval is None or approval.status != ApprovalStatus.CONSUMED or approval.digest != call_digest(tool, plan):
            raise Refused(f"call {call_id[:64]}: no approval of exactly this {tool} was consumed")
    if tool == "run_workflow":
        return _start_workflow(sup, worker, call_id, plan)
    if tool == "spawn":
        return _start_spawn(sup, worker, call_id, plan)
    fresh = plan_delegation(sup, worker.run_id, str(plan["agent"]), str(plan["task"]), _names(plan.get("grants")))
    runmodel.allowed(sup.config, registry.resolve(store, str(plan["agent"]))[0].name, str(plan["model"]),
                     f"delegate: model {plan['model']}")
    return create(sup, worker.run_id, call_id, {**plan, "grants": fresh["grants"]})


def _start_workflow(sup: Hub, worker: Asker, call_id: str, plan: JSONObject) -> str:
    """The approved workflow, exactly as its plan carried it (the file may have changed since)."""
    store = sup.store
    flow = flows.parse(sup, {"steps": plan.get("steps")}, f"run_workflow {plan.get('workflow')!r}")
    given = sorted(_held(store, worker.run_id, _names(plan.get("grants"))) or ())
    depth = _depth(store, worker.run_id) + 1
    check_depth(depth + 1, sup.config.orchestration.max_depth)
    run_id = flows.start(sup, str(plan["workflow"]), str(plan["input"]), flow, parent_id=worker.run_id,
                         call_id=call_id, depth=depth, grants=given)
    sup.launch(run_id)
    return run_id


def _start_spawn(sup: Hub, worker: Asker, call_id: str, plan: JSONObject) -> str:
    """The subagent exactly as approved: its profile and soul stay in the store (the decision's plan) and
    reach its worker in `hello`; it is a profile `sub-<id>` of the spawning agent's user."""
    stored = sup.store.grants_of(worker.run_id)
    wanted = _names(plan.get("grants"))
    given = grants(set(stored) if stored is not None else set(wanted), wanted, strict=True)
    runmodel.allowed(sup.config, worker.agent.name, str(plan["model"]), f"spawn: model {plan['model']}")
    ident = f"{worker.agent.name}/{new_id(TEMPORARY)}"
    workspace = sup.store.get_run(worker.run_id)["workspace"]
    return create(sup, worker.run_id, call_id, {**plan, "agent": ident, "grants": _array(given)},
                  workspace=Path(workspace) if workspace else None)


def subagent(store: Store, row: StoredRun) -> Subagent | None:
    """A temporary subagent's soul, skills and description, from the approved spawn that made it (the
    supervisor's store); None for any other run."""
    parent_id, call_id = row["parent_id"], row["call_id"]
    if not row["agent"].startswith(TEMPORARY) or not parent_id or not call_id:
        return None
    decided = store.decision_for_call(parent_id, call_id)
    if decided is None or decided.get("tool") != "spawn":
        return None
    plan = decided.get("arguments")
    if not isinstance(plan, dict):
        return None
    skills = plan.get("skills")
    return {"soul": str(plan.get("soul") or ""), "skills": skills if isinstance(skills, list) else [],
            "description": temporary_description(str(plan.get("task") or ""))}


def settle_temporary(sup: Hub, run_id: str) -> None:
    """A subagent's run ended: with `orchestration.temporary: ask`, the operator is asked whether to keep it
    (approving starts a worker, as its user, that writes it into the roster). `save` was done by its worker;
    `discard` needs nothing: it never was a file."""
    store = sup.store
    row = store.get_run(run_id)
    if (row["status"] not in ANSWERED or sup.config.orchestration.temporary != "ask" or subagent(store, row) is None
            or store.approval_for_call(run_id, SAVE_CALL) is not None):
        return
    store.submit_approval(run_id, SAVE_CALL, "save_agent", {"agent": f"{row.get('user')}/{row['agent']}"},
                          "orchestration.temporary is ask: keep this temporary subagent in the roster?")


def create(sup: Hub, parent_id: str, call_id: str, plan: JSONObject, *, task: str | None = None,
           workspace: Path | None = None) -> str:
    """Make and launch the child run of a plan. `task`: a workflow step's task, as rendered (else the hand-off
    with the head run's request); `workspace`: else the agent's own."""
    store = sup.store
    agent, profile = registry.resolve(store, str(plan["agent"]))
    doorscope.check_runs_as(store, parent_id, agent)  # whichever path planned it: never another uid under the door
    pw = registry.account(agent, sup.settings.group)
    home = layout.agent_sentinel_home(pw.pw_dir)
    if task is None:
        chain = store.parent_chain(parent_id)
        task = handoff(str(plan["task"]), store.get_run(chain[-1] if chain else parent_id)["task"])
    child_id = store.new_run_id()
    store.create_run(child_id, agent=profile, task=task, model=str(plan["model"]),
                     workspace=workspace or home / "workspace", run_dir=home / "runs" / child_id, parent_id=parent_id,
                     call_id=call_id, depth=_depth(store, parent_id) + 1,
                     grants=None if plan["grants"] is None else _names(plan["grants"]))
    store.conn.execute("UPDATE runs SET user=? WHERE id=?", (agent.name, child_id))
    store.audit("run_started", {"run_id": child_id, "agent": agent.name, "profile": profile, "model": plan["model"],
                                "parent_id": parent_id, "grants": plan["grants"]})
    sup.launch(child_id)
    return child_id


def _advance(sup: Hub, worker: Asker, msg: JSONObject) -> dict[str, object]:
    row = sup.store.get_run(str(msg["child_id"]))
    if row.get("parent_id") != worker.run_id:
        raise Refused(f"run {row['id']} is no child of run {worker.run_id}")
    return nudge(sup, row["id"])


def nudge(sup: Hub, child_id: str) -> dict[str, object]:
    """Where a child stands; one interrupted (a crash, a restart) or approved meanwhile is launched again."""
    store = sup.store
    row = store.get_run(child_id)
    stalled = row["status"] in (RunStatus.RUNNING, RunStatus.INTERRUPTED) or (
        row["status"] == RunStatus.WAITING_APPROVAL and not store.pending_approvals(row["id"]))
    if row["id"] not in sup.workers and stalled:
        sup.launch(row["id"])
        row = store.get_run(row["id"])
    return {"id": row["id"], "status": row["status"], "output": row.get("output"), "error": row.get("error")}


class Steps:
    """workflows.runner.Steps over the supervisor: each step a child run of the workflow run, made like a
    delegation the operator (or the approved `run_workflow` call) gave."""

    def __init__(self, sup: Hub):
        self.sup = sup

    def child_for_call(self, parent_id: str, call_id: str) -> StoredRun | None:
        return self.sup.store.child_for_call(parent_id, call_id)

    def start_step(self, workflow_run: RunState, key: str, agent: str, task: str) -> str:
        plan = plan_delegation(self.sup, workflow_run.id, agent, task, self.sup.store.grants_of(workflow_run.id))
        return create(self.sup, workflow_run.id, key, plan, task=task)

    def advance(self, child_id: str) -> dict[str, object]:
        return nudge(self.sup, child_id)


def busy(sup: Hub, run_id: str) -> bool:
    """Whether a run is being carried on: its worker runs, or (a run without a worker: a workflow) the child
    it waits on is."""
    if run_id in sup.workers:
        return True
    row = sup.store.get_run(run_id)
    kids = sup.store.children(run_id) if row["status"] == RunStatus.WAITING_CHILD else []
    return bool(kids) and busy(sup, kids[-1]["id"])


def carry_on(sup: Hub, run_id: str) -> bool:
    """After a worker exits: True when the run's followers stay (it waits on a child that still runs, or it
    was launched again because its child ended). A child that ended launches its waiting parent; a child
    that paused lets the followers of its waiting ancestors have their outcome."""
    store = sup.store
    row = store.get_run(run_id)
    if row["status"] == RunStatus.WAITING_CHILD:
        kids = store.children(run_id)
        if kids and busy(sup, kids[-1]["id"]):
            return True
        if kids and kids[-1]["status"] in TERMINAL:
            sup.launch(run_id)
            return True
        return False
    parent = lifecycle.waiting_parent(store, run_id)
    if parent is None or parent in sup.workers:
        return False
    if row["status"] in TERMINAL and store.children(parent)[-1]["id"] == run_id:
        sup.launch(parent)  # its followers follow the new worker
    elif row["status"] not in TERMINAL:  # paused: whoever follows the runs waiting above it hears so now
        while parent and parent not in sup.workers and store.get_run(parent)["status"] == RunStatus.WAITING_CHILD:
            sup.release(parent)
            parent = store.get_run(parent).get("parent_id")
    return False


def waiting_top(store: Store, run_id: str) -> str:
    """The outermost run waiting on this one through its chain: what resuming (approving) this one carries
    on to, so an operator's `approve` of a child follows its head run to the end."""
    top = run_id
    for parent in store.parent_chain(run_id):
        if store.get_run(parent)["status"] != RunStatus.WAITING_CHILD:
            break
        top = parent
    return top


def _operator_outcome(sup: Hub, tool: str) -> str:
    """What the operator's policy says of `delegate` or `run_workflow` (the worker's decision is the agent's
    claim: a child runs as another agent's user, so the supervisor asks for the approval itself)."""
    from sentinel.policy import action_policy

    policy = action_policy.load(("the operator's config.yaml policy", sup.config.policy))
    return policy.tools.get(tool, policy.default)


def _depth(store: Store, run_id: str) -> int:
    return int(store.get_run(run_id).get("depth") or 0)


def _wanted_tools(value: JSON) -> list[str] | None:
    """A spawn's `tools`: None (the spawning run's own), or tool names."""
    if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ToolError("tools: a list of tool names")
    return None if value is None else [str(v) for v in value]


def _array(names: Iterable[str]) -> list[JSON]:
    """Tool or skill names as a JSON array of a plan (a plan is JSON: it is what the approval binds)."""
    return list(names)


def _names(value: JSON) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError("grants must be a list of tool names")
    return [str(v) for v in value]


def _profile_tools(home: str, profile: str, uid: int) -> list[str] | None:
    """The `tools` an agent's profile grants, read as root without following anything the agent planted;
    an unreadable or broken profile grants nothing."""
    import yaml

    text = agentfs.read_text(home, f".sentinel/agents/{profile}.yaml", uid, runmodel.PROFILE_BYTES)
    if text is None:
        return None  # no profile file: the child's worker reports it when it loads the profile
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    tools = data.get("tools") if isinstance(data, dict) else []
    if tools is None:
        return None
    return [t for t in tools if isinstance(t, str)] if isinstance(tools, list) else []


OPS = {"child_plan": _plan, "child_for_call": _child_for_call, "child_start": _start, "child_advance": _advance}
