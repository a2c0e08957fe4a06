"""One execution of a run, whoever hosts it: local mode in its own process, system mode in a spawned worker.

    deps = execute_run(run, home, config, profile, store, listener=render)   # until the run pauses or ends

The steps are the same on both sides; only what hosts the run differs (the store it reports to, the child
runs it may make, Muzzle's endpoint, whether the operator's settings are applied on top of the agent's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from sentinel.agents import profile as profiles
from sentinel.config import Config
from sentinel.engine.events import Listener
from sentinel.engine.run import Run
from sentinel.engine.runstore import RunStore
from sentinel.worker.children import Children
from sentinel.worker.loop import AgentLoop, Deps
from sentinel.worker.setup import build_deps, initial_messages
from sentinel.worker.turn import begin_turn


def execute_run(run: Run, home: Path, config: Config, profile: profiles.AgentProfile, store: RunStore, *,
                listener: Listener | None = None, message: str | None = None, skills: Sequence[str] = (),
                model: str | None = None, children: Children | None = None, grants: list[str] | None = None,
                endpoint: tuple[str, str] | None = None, operator: bool = False, soul: str | None = None,
                defer_curator: bool = False) -> Deps:
    """Execute `run` (leased: closed here, whatever happens) until it pauses or ends; `run.state` then says how.

    `listener` hears every event (once, even when the run was created with it); `message`: a chat session's
    next message, joined with `skills` and `model` before the turn runs; `model`: the run's model from now
    on, as its host fixed it (the journal only claims one). The rest wires the loop (see `build_deps`)."""
    with run:
        if listener is not None and listener not in run.listeners:
            run.listeners.append(listener)
        if message is not None:
            begin_turn(run, home, message, skills=skills, model=model)
        if model:
            run.state.model = model
        deps = build_deps(config, home, profile, run.state, store, endpoint=endpoint, operator=operator,
                          children=children, grants=grants, soul=soul, defer_curator=defer_curator)
        if not run.state.messages:  # new, or stopped between `created` and its first messages
            run.record(*initial_messages(home, profile, deps, run.state.task, skills))
        AgentLoop(run, deps).execute()
    return deps
