"""Workflow runs in system mode: the supervisor itself walks the steps, each step a child run of an agent.

    run_id = start(sup, name, input, doc, source=...)   # validate against the roster, make the run, start step 1
    status = advance(sup, run_id, children.Steps(sup))  # when a step ended (or on resume): start the next one

A workflow run has no worker and no agent user: its journal and its copy of the workflow live in the
supervisor's state directory (`workflows/<run id>/`), where no agent can write, so an edit of the file (or
a forged journal) never changes a workflow that already runs. Each step is a child run keyed on the
workflow run and `step:<name>` (started once, however often the workflow is advanced), run by its agent's
own worker as its agent's user, granted what the workflow run was granted ∩ its profile's tools. A step
that ends wakes the workflow run (`children.carry_on`), which starts the next step or ends; a step paused
for approval pauses the workflow, and approving it continues the workflow to its end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from sentinel.config import read_yaml
from sentinel.engine.events import Listener
from sentinel.engine.records import Created
from sentinel.engine.run import Run
from sentinel.supervisor import registry
from sentinel.supervisor.hub import Hub
from sentinel.workflows import model as workflows, runner

KIND = runner.KIND


def roster(sup: Hub) -> list[str]:
    return [a.name for a in registry.all_agents(sup.store)]


def parse(sup: Hub, doc: object, source: str) -> workflows.Workflow:
    """A workflow document checked whole against the roster: one ConfigError naming the field, or the workflow."""
    return workflows.parse(doc, source, roster=roster(sup))


def start(sup: Hub, name: str, input_text: str, flow: workflows.Workflow, *, parent_id: str | None = None,
          call_id: str | None = None, depth: int = 0, grants: list[str] | None = None,
          follow: Callable[[str], None] | None = None) -> str:
    """Make the workflow's run and start its first step; the run's id. `follow(run_id)` is called once the run
    has its id, before its journal begins: whoever it sets to watch the run hears its `created` live."""
    workflows.check_name(name)
    run_id = sup.store.new_run_id()
    run_dir = sup.settings.state_dir / "workflows" / run_id
    run_dir.parent.mkdir(mode=0o700, exist_ok=True)
    agent = f"{runner.AGENT}{name}"
    sup.store.create_run(run_id, agent=agent, task=input_text, model="-", workspace=Path("/"),
                         run_dir=run_dir, parent_id=parent_id, kind=KIND, call_id=call_id, depth=depth, grants=grants)
    listeners: list[Listener] = []
    if follow is not None:
        follow(run_id)
        listeners.append(lambda event: sup.relay(run_id, event.to_dict()))
    with Run.create(run_dir, Created(id=run_id, task=input_text, agent=agent, model="-", workspace="",
                                     parent_id=parent_id, kind=KIND), listeners):
        runner.keep(run_dir, flow)
    sup.store.audit("run_started", {"run_id": run_id, "workflow": name, "parent_id": parent_id,
                                    "steps": [s.name for s in flow.steps]})
    return run_id


def advance(sup: Hub, run_id: str, steps: runner.Steps) -> str:
    """Walk the workflow run as far as it goes now: its status (`waiting_child` while a step runs or waits).
    `steps`: how a step's child run is made and carried on (children.Steps)."""
    row = sup.store.get_run(run_id)
    with Run.open(Path(row["run_dir"])) as run:
        run.listeners.append(lambda event: sup.relay(run_id, event.to_dict()))
        flow = workflows.Workflow.model_validate(read_yaml(Path(row["run_dir"]) / runner.FILE))
        return runner.walk(run, flow, steps, sup.store)

