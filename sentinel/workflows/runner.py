"""Advancing a workflow run: each step a child run of the workflow's run, started once, in order.

    status = advance(run, workflow, steps)      # done, failed, or waiting_child (a step paused or stopped)

A step's child is keyed on the workflow run and `step:<name>`, so advancing again (after an approval, a
crash, a resume) finds the steps already made and starts nothing twice; the outputs of finished steps come
from their runs, and the next step's task is rendered from them. The workflow run's journal records each
step's child run and the end, like a run's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from sentinel.engine import journal, records
from sentinel.engine.rows import StoredRun
from sentinel.engine.run import Run
from sentinel.engine.state import RunState
from sentinel.engine.store import Store
from sentinel.workflows.model import Workflow, render
from sentinel.engine.status import ANSWERED, TERMINAL, RunStatus

KIND = "workflow"             # the kind of a workflow's run
AGENT = "workflow:"           # the agent column of a workflow's run: workflow:<name>
FILE = "workflow.yaml"        # the validated workflow, kept beside the run's journal


def keep(run_dir: Path, flow: Workflow) -> None:
    """Keep the validated workflow beside its run's journal: an edit of the file later never changes a
    workflow that already runs."""
    import yaml

    from sentinel import paths

    paths.write_atomic(run_dir / FILE, yaml.safe_dump(flow.model_dump(exclude_none=True)), 0o600)


class Steps(Protocol):
    """Where a workflow's steps run (local mode's children, the supervisor's). The rows they answer are the
    engine's run rows, as `Store.child_for_call` and the children's `advance` return them."""

    def child_for_call(self, parent_id: str, call_id: str) -> StoredRun | None: ...

    def start_step(self, workflow_run: RunState, key: str, agent: str, task: str) -> str: ...

    # untyped: the engine's run row, as above
    def advance(self, child_id: str) -> dict[str, Any]: ...


def step_key(name: str) -> str:
    return f"step:{name}"


def walk(run: Run, workflow: Workflow, steps: Steps, store: Store) -> str:
    """Advance a workflow run as far as it goes now, its row in `store` following: `running` while it walks,
    then the status `advance` reached (local mode and the supervisor both walk a workflow this way)."""
    store.set_status(run.state.id, RunStatus.RUNNING)
    status = advance(run, workflow, steps)
    state = run.state
    store.set_status(state.id, status, output=state.output if status in ANSWERED else None,
                     error=state.error if status != RunStatus.DONE else None)
    run.snapshot()
    return status


def advance(run: Run, workflow: Workflow, steps: Steps) -> str:
    state = run.state
    journaled = {r.call_id for r in journal.read(run.journal.path)[0] if isinstance(r, records.ChildFinished)}
    outputs: dict[str, str] = {}
    previous: str | None = None
    unverified: list[str] = []
    for step in workflow.steps:
        key = step_key(step.name)
        child = steps.child_for_call(state.id, key)
        if child is None:
            task = render(step.task, state.task, outputs, previous)
            child_id = steps.start_step(state, key, step.agent, task)
            run.record(records.ChildStarted(child_id=child_id, agent=step.agent, task=task, call_id=key))
        else:
            child_id = child["id"]
        ended = steps.advance(child_id)
        if ended["status"] not in TERMINAL:
            return RunStatus.WAITING_CHILD
        if key not in journaled:
            run.record(records.ChildFinished(child_id=child_id, status=ended["status"], output=ended.get("output"),
                                             call_id=key))
        if ended["status"] not in ANSWERED:
            error = f"step {step.name} ({child_id}) {ended['status']}: {ended.get('error') or 'no output'}"
            run.record(records.Status(status=RunStatus.FAILED, output=None, error=error))
            return RunStatus.FAILED
        outputs[step.name] = previous = ended.get("output") or ""
        if ended["status"] == RunStatus.DONE_UNVERIFIED:
            unverified.append(f"step {step.name} ({child_id})")
    if unverified:  # the workflow is only as checked as its steps
        why = f"not verified: {', '.join(unverified)} ended done_unverified"
        run.record(records.Status(status=RunStatus.DONE_UNVERIFIED, output=previous, error=why))
        return RunStatus.DONE_UNVERIFIED
    run.record(records.Status(status=RunStatus.DONE, output=previous, error=None))
    return RunStatus.DONE
