"""`sentinel workflow`: create, list, show and run saved workflows (`$SENTINEL_HOME/workflows/<name>.yaml`).

A workflow is validated whole before it is saved and again before its first step runs; a problem is one
line naming the file and the step's field. `run` prints and exits like `sentinel run`: 0 done, 3 a step
paused for approval (`sentinel approve ID` continues the workflow to its end), 1 failed.
"""

from __future__ import annotations

from pathlib import Path

import typer

from sentinel.ui.render import Progress, print_json
from sentinel.ui.escape import visible

app = typer.Typer(no_args_is_help=True, help="Saved workflows: linear steps, each its own supervised run.")


def _roster() -> list[str] | None:
    """The agents a step may name: the supervisor's (system mode), or None for the profiles here (local mode)."""
    from sentinel.connect import open_engine

    with open_engine() as engine:
        return engine.roster()


def _describe(name: str) -> dict[str, object]:
    from sentinel.workflows import model as workflows

    flow = workflows.load(name, roster=_roster())
    return {"name": name, "file": str(workflows.workflow_path(name)), **flow.model_dump(exclude_none=True)}


@app.command("create")
def create(name: str = typer.Argument(..., help="Workflow name: lowercase letters, digits, _ or -."),
           file: Path = typer.Option(..., "--file", "-f", help="The workflow YAML (description, steps)."),
           force: bool = typer.Option(False, "--force", help="Replace a workflow of that name."),
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Validate a workflow file and save it as workflows/NAME.yaml."""
    from sentinel import paths
    from sentinel.errors import UsageError
    from sentinel.workflows import model as workflows

    target = workflows.workflow_path(name)
    if target.exists() and not force:
        raise UsageError(f"workflow {name!r} already exists ({target}); pass --force to replace it")
    if not file.is_file():
        raise UsageError(f"--file: {file} is not a file")
    workflows.parse_file(file, roster=_roster())
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths.write_atomic(target, file.read_text(encoding="utf-8"), 0o600)
    if as_json:
        return print_json(_describe(name))
    print(f"created workflow {name} ({target})")


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the saved workflows."""
    from sentinel.workflows import model as workflows

    rows, roster = [], _roster()
    for name in workflows.names():
        flow = workflows.load(name, roster=roster)
        rows.append({"name": name, "description": flow.description or "", "steps": [s.name for s in flow.steps]})
    if as_json:
        return print_json(rows)
    if not rows:
        print("no workflows yet: sentinel workflow create NAME --file F")
    for row in rows:
        print(visible(f"{row['name']:<20} {' → '.join(row['steps']):<40} {row['description']}".rstrip()))


@app.command("show")
def show(name: str = typer.Argument(...), as_json: bool = typer.Option(False, "--json")) -> None:
    """Show a workflow's steps: agent and task of each."""
    from sentinel.workflows import model as workflows

    if as_json:
        return print_json(_describe(name))
    flow = workflows.load(name, roster=_roster())
    print(f"{name}: {flow.description or ''}".rstrip(": "))
    for i, step in enumerate(flow.steps, 1):
        print(visible(f"  {i}. {step.name} ({step.agent}): {step.task}"))


@app.command("run")
def run(name: str = typer.Argument(...),
        input_text: str = typer.Option("", "--input", "-i", help="The workflow's input: {{input}} in its steps."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document: id, status, output.")) -> None:
    """Run a workflow: each step a run under the workflow's run, until it finishes or a step pauses."""
    from sentinel.cli.runs import _engine, _finish

    with _engine() as engine, Progress(False if as_json else None) as progress:
        outcome = engine.run_workflow(name, input_text, workspace=Path.cwd() if engine.mode == "local" else None,
                                      on_event=progress)
    _finish(outcome, as_json, progress)
