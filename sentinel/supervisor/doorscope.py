"""Who a run under the agent door may run as: only the Linux user of the person at the door.

    opener = door_opener(store, run_id)           # who started the door session a run is (under), or None
    check_runs_as(store, parent_id, agent)        # ToolError (audited) if a run as `agent` would cross users
    runs_as(store, row, uid, agent)               # whether a run executes as that door user (or as no one)

A door session is a chat an agent's own user started at the agent door (agentdoor.py); that user answers
its approvals y/N. Everything it starts (a delegation, a spawned subagent, a workflow and its steps) would
be a run under that session, so a run under it must execute as the door user's own uid: a delegation to
another agent, or a workflow step naming one, is refused when it is planned, with the reason the model
reads, and again when the child run would be made. The door user never sees, approves nor starts work
as another Linux user; an operator may still run that agent (`sudo sentinel run --agent B`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sentinel.engine.rows import StoredRun
from sentinel.engine.store import Store
from sentinel.supervisor import registry
from sentinel.tools import ToolError
from sentinel.workflows.runner import KIND as WORKFLOW

DOOR = "agent"


@dataclass(frozen=True)
class Opener:
    """The door user who started a session: its uid, its Linux name and the agent it is the user of."""

    uid: int
    user: str
    agent: str


def door_opener(store: Store, run_id: str) -> Opener | None:
    """Who started, at the agent door, the session `run_id` is or runs under (its head run's `run_started`)."""
    chain = store.parent_chain(run_id)
    top = chain[-1] if chain else run_id
    row = store.conn.execute("SELECT record FROM audit WHERE run_id=? AND kind='run_started' ORDER BY id LIMIT 1",
                             (top,)).fetchone()
    if row is None:
        return None
    started = json.loads(row[0])
    if started.get("door") != DOOR or not isinstance(started.get("uid"), int):
        return None
    return Opener(started["uid"], str(started.get("by") or ""), str(started.get("agent") or ""))


def same_user(opener: Opener, agent: registry.Agent) -> bool:
    """An agent is its Linux user: the door's own agent, under the uid it was registered with."""
    return agent.name == opener.agent and agent.uid == opener.uid


def check_runs_as(store: Store, parent_id: str, agent: registry.Agent) -> None:
    """Refuse (ToolError, audited) a run as `agent` under `parent_id` when that is a door session of another
    user: the door user decides only for its own uid."""
    opener = door_opener(store, parent_id)
    if opener is None or same_user(opener, agent):
        return
    store.audit("door_cross_user_refused", {"run_id": parent_id, "agent": agent.name, "user": agent.user,
                                            "door_user": opener.user, "door_uid": opener.uid})
    raise ToolError(f"refused: agent {agent.name} runs as Linux user {agent.user}, and this session was started "
                    f"at the agent door by user {opener.user or opener.uid}, who may start runs only as itself "
                    f"(its own agent {opener.agent} or one of its profiles); do this part yourself, or ask an "
                    f"operator to run agent {agent.name} (sudo sentinel run ... --agent {agent.name})")


def runs_as(store: Store, row: StoredRun, uid: int, agent: str) -> bool:
    """Whether a run executes as this door user: its worker's user is `agent` under `uid`. A workflow run has
    no worker (the supervisor walks it; each step is a run of its own, checked by itself)."""
    if row.get("kind") == WORKFLOW:
        return True
    registered = registry.get(store, str(row.get("user") or ""))
    return registered is not None and registered.name == agent and registered.uid == uid
