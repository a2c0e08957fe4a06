"""Child runs in system mode: the supervisor's answers to a worker's child ops, and what a run's end wakes.

    child_plan       what a `delegate` call would make: the agent and model as the operator allows, the grants
    child_for_call   the child run a call of the worker's own run made, if any
    child_start      make and launch the child of a call decided (and approved) as exactly that plan
    child_advance    where the child stands; an interrupted child is launched again

The child runs as its own agent's user, in its own worker, under its own run token. The worker's word is
never the child: child_start takes the plan from the decision the store holds for the call, requires the
approval that decision needed to be consumed for exactly that plan, and grants the child only tools the
parent was granted (the store's record of it) and the child's profile names. `carry_on` (on every worker
exit) keeps a waiting parent's followers until its child ends, then launches the parent again.
"""

from __future__ import annotations

from typing import Any

from sentinel.engine.store import TERMINAL, Store, call_digest, new_id
from sentinel.errors import NotFound, SentinelError, UsageError
from sentinel.frames import failure, reply
from sentinel.supervisor import agentfs, layout, registry, runmodel
from sentinel.supervisor.hub import Hub
from sentinel.tools import ToolError
from sentinel.worker.children import WAITING, check_depth, grants, handoff

LOCAL_ONLY = ("spawn", "run_workflow")


class Refused(SentinelError):
    pass


def handle(sup: Hub, worker: Any, msg: dict[str, Any]) -> dict[str, Any]:
    fn = OPS[msg["op"]]
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


def _plan(sup: Hub, worker: Any, msg: dict[str, Any]) -> dict[str, Any]:
    tool, args = str(msg["tool"]), msg["arguments"]
    if tool in LOCAL_ONLY:
        raise UsageError(f"{tool} is not available in system mode yet; delegate to an agent of the roster")
    if tool != "delegate" or not isinstance(args, dict):
        raise UsageError(f"{tool} makes no child run")
    return plan_delegation(sup, worker.run_id, str(args["agent"]), str(args["task"]), _names(msg.get("granted")))


def plan_delegation(sup: Hub, parent_id: str, ident: str, task: str, granted: list[str]) -> dict[str, Any]:
    store = sup.store
    check_depth(_depth(store, parent_id) + 1, sup.config.orchestration.max_depth)
    agent, profile = registry.resolve(store, ident)
    pw = registry.account(agent, sup.settings.group)
    model = runmodel.choose(sup.config, agent.name, profile, None, pw.pw_dir, pw.pw_uid)
    stored = store.grants_of(parent_id)  # a child parent: never more than its own parent granted it
    have = set(granted) & set(stored) if stored is not None else set(granted)
    return {"agent": ident, "task": task, "model": model,
            "grants": grants(have, _profile_tools(pw.pw_dir, profile, pw.pw_uid))}


def _child_for_call(sup: Hub, worker: Any, msg: dict[str, Any]) -> dict[str, Any] | None:
    return sup.store.child_for_call(worker.run_id, str(msg["call_id"]))


def _start(sup: Hub, worker: Any, msg: dict[str, Any]) -> str:
    store, call_id = sup.store, str(msg["call_id"])
    existing = store.child_for_call(worker.run_id, call_id)
    if existing is not None:
        return existing["id"]
    decided = store.decision_for_call(worker.run_id, call_id)
    if decided is None or decided.get("tool") != "delegate" or decided.get("outcome") == "deny":
        raise Refused(f"call {call_id[:64]} was not decided as a delegation that may run")
    plan = decided["arguments"]
    if decided["outcome"] != "needs_approval" and _operator_outcome(sup) != "auto":
        raise Refused(f"call {call_id[:64]}: delegate needs an operator's approval by the operator's policy")
    if decided["outcome"] != "auto":
        approval = store.approval_for_call(worker.run_id, call_id)
        if approval is None or approval.status != "consumed" or approval.digest != call_digest("delegate", plan):
            raise Refused(f"call {call_id[:64]}: no approval of exactly this delegation was consumed")
    fresh = plan_delegation(sup, worker.run_id, str(plan["agent"]), str(plan["task"]), _names(plan.get("grants")))
    runmodel.allowed(sup.config, registry.resolve(store, str(plan["agent"]))[0].name, str(plan["model"]),
                     f"delegate: model {plan['model']}")
    return _create(sup, worker.run_id, call_id, {**plan, "grants": fresh["grants"]})


def _create(sup: Hub, parent_id: str, call_id: str, plan: dict[str, Any]) -> str:
    store = sup.store
    agent, profile = registry.resolve(store, str(plan["agent"]))
    pw = registry.account(agent, sup.settings.group)
    home = layout.agent_sentinel_home(pw.pw_dir)
    chain = store.parent_chain(parent_id)
    request = store.get_run(chain[-1] if chain else parent_id)["task"]
    child_id = new_id("r-")
    store.create_run(child_id, agent=profile, task=handoff(str(plan["task"]), request), model=str(plan["model"]),
                     workspace=home / "workspace", run_dir=home / "runs" / child_id, parent_id=parent_id,
                     call_id=call_id, depth=_depth(store, parent_id) + 1, grants=plan["grants"])
    store.conn.execute("UPDATE runs SET user=? WHERE id=?", (agent.name, child_id))
    store.audit("run_started", {"run_id": child_id, "agent": agent.name, "profile": profile, "model": plan["model"],
                                "parent_id": parent_id, "grants": plan["grants"]})
    sup.launch(child_id)
    return child_id


def _advance(sup: Hub, worker: Any, msg: dict[str, Any]) -> dict[str, Any]:
    store = sup.store
    row = store.get_run(str(msg["child_id"]))
    if row.get("parent_id") != worker.run_id:
        raise Refused(f"run {row['id']} is no child of run {worker.run_id}")
    stalled = row["status"] in ("running", "interrupted") or (
        row["status"] == "waiting_approval" and not store.pending_approvals(row["id"]))
    if row["id"] not in sup.workers and stalled:
        sup.launch(row["id"])  # interrupted (a crash, a restart) or approved meanwhile: it carries on
        row = store.get_run(row["id"])
    return {"id": row["id"], "status": row["status"], "output": row.get("output"), "error": row.get("error")}


def carry_on(sup: Hub, run_id: str) -> bool:
    """After a worker exits: True when the run's followers stay (it waits on a child that still runs, or it
    was launched again because its child ended). A child that ended launches its waiting parent; a child
    that paused lets the followers of its waiting ancestors have their outcome."""
    store = sup.store
    row = store.get_run(run_id)
    if row["status"] == WAITING:
        kids = store.children(run_id)
        if kids and kids[-1]["id"] in sup.workers:
            return True
        if kids and kids[-1]["status"] in TERMINAL:
            sup.launch(run_id)
            return True
        return False
    parent = row.get("parent_id")
    if not parent or parent in sup.workers or store.get_run(parent)["status"] != WAITING:
        return False
    if row["status"] in TERMINAL and store.children(parent)[-1]["id"] == run_id:
        sup.launch(parent)  # its followers follow the new worker
    elif row["status"] not in TERMINAL:  # paused: whoever follows the runs waiting above it hears so now
        while parent and parent not in sup.workers and store.get_run(parent)["status"] == WAITING:
            sup.release(parent)
            parent = store.get_run(parent).get("parent_id")
    return False


def waiting_top(store: Store, run_id: str) -> str:
    """The outermost run waiting on this one through its chain: what resuming (approving) this one carries
    on to, so an operator's `approve` of a child follows its head run to the end."""
    top = run_id
    for parent in store.parent_chain(run_id):
        if store.get_run(parent)["status"] != WAITING:
            break
        top = parent
    return top


def _operator_outcome(sup: Hub) -> str:
    """What the operator's policy says of `delegate` (the worker's decision is the agent's claim: a child
    runs as another agent's user, so the supervisor asks for the approval itself)."""
    from sentinel.policy import action

    policy = action.load(("the operator's config.yaml policy", sup.config.policy))
    return policy.tools.get("delegate", policy.default)


def _depth(store: Store, run_id: str) -> int:
    return int(store.get_run(run_id).get("depth") or 0)


def _names(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError("grants must be a list of tool names")
    return value


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
