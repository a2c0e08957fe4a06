"""Run commands: run, runs, show, approvals, approve, deny, resume, logs, status.

Each command is a thin call into the engine (local mode) or the supervisor's
socket (system mode); exit codes follow DESIGN section 8: 0 done, 3 paused
waiting for approval, 1 failed, 2 bad usage or input.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer

from sentinel.cli.render import STATUS_EXIT, Progress, plain, print_json


def _engine() -> Any:
    """The supervisor's client when one answers (system mode), else the in-process engine (local mode)."""
    from sentinel.supervisor.client import connect

    system = connect()
    if system is not None:
        return system
    from sentinel.engine.runner import Engine

    return Engine()


def _system(engine: Any) -> bool:
    return getattr(engine, "mode", "local") == "system"


def _finish(outcome: Any, as_json: bool) -> None:
    if as_json:
        print_json({"id": outcome.id, "status": outcome.status, "output": outcome.output,
                    **({"error": outcome.error} if outcome.error else {}),
                    **({"approval_id": outcome.approval_id} if outcome.approval_id else {})})
    elif outcome.status == "done":
        print(outcome.output or "")
    elif outcome.status == "waiting_approval":
        print(f"run {outcome.id} is waiting for approval {outcome.approval_id}: "
              f"sentinel approve {outcome.approval_id}  |  sentinel deny {outcome.approval_id}", file=sys.stderr)
    else:
        print(f"run {outcome.id} {outcome.status}: {outcome.error or ''}", file=sys.stderr)
    raise typer.Exit(STATUS_EXIT.get(outcome.status, 1))


def run(task: str = typer.Argument(..., help="What the agent should do."),
        model: Optional[str] = typer.Option(None, "--model", "-m", help="provider/model, e.g. local/smollm2-135m."),
        agent: Optional[str] = typer.Option(None, "--agent", "-a", help="Agent profile to run."),
        workspace: Optional[Path] = typer.Option(None, "--workspace", "-w", help="Directory the agent works in."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document: id, status, output.")) -> None:
    """Run an agent task until it finishes or pauses for approval."""
    engine = _engine()
    try:
        outcome = engine.start(task, model=model, agent=agent, workspace=workspace,
                               listener=Progress(False if as_json else None))
    finally:
        engine.close()
    _finish(outcome, as_json)


def runs(as_json: bool = typer.Option(False, "--json")) -> None:
    """List runs, newest first."""
    engine = _engine()
    try:
        rows = engine.runs()
    finally:
        engine.close()
    if as_json:
        return print_json(rows)
    from rich.console import Console
    from rich.table import Table

    table = Table("id", "status", "agent", "model", "created", "task", box=None)
    for r in rows:
        table.add_row(r["id"], r["status"], r["agent"], r["model"],
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created_at"])), r["task"][:60])
    Console().print(table)


def show(run_id: str = typer.Argument(..., help="Run id."), as_json: bool = typer.Option(False, "--json")) -> None:
    """Show a run: status, messages and every decision with its reason."""
    engine = _engine()
    try:
        data = engine.show(run_id)
    finally:
        engine.close()
    if as_json:
        return print_json(data)
    from rich.console import Console

    console = Console(highlight=False)
    console.print(f"[bold]{data['id']}[/] {data['status']}  agent={data['agent']} model={data['model']}")
    console.print(f"task: {data['task']}")
    for d in data["decisions"]:
        console.print(f"  {d['tool']} {d['call_id']}: [bold]{d['outcome']}[/] — {d['reason']}")
    if data["output"]:
        console.print(f"output: {data['output']}")
    if data["error"]:
        console.print(f"[red]error[/]: {data['error']}")


def approvals(as_json: bool = typer.Option(False, "--json")) -> None:
    """List pending approvals."""
    engine = _engine()
    try:
        pending = engine.pending() if _system(engine) else [a.public() for a in engine.store.pending_approvals()]
    finally:
        engine.close()
    if as_json:
        return print_json([{k: a[k] for k in ("id", "run_id", "tool", "arguments", "reason")} for a in pending])
    if not pending:
        print("no pending approvals")
    for a in pending:
        print(f"{a['id']}  run {a['run_id']}  {a['tool']} {a['arguments']}  — {a['reason']}")


def approve(ident: str = typer.Argument(..., help="Approval id, or a run id with one pending approval."),
            as_json: bool = typer.Option(False, "--json")) -> None:
    """Approve a pending tool call; the run resumes in the foreground."""
    from sentinel.engine.runner import operator_name

    engine = _engine()
    try:
        outcome = engine.approve(ident, by=operator_name(), listener=Progress(False if as_json else None))
    finally:
        engine.close()
    _finish(outcome, as_json)


def deny(ident: str = typer.Argument(..., help="Approval id, or a run id with one pending approval."),
         reason: str = typer.Option("", "--reason", "-r", help="Told to the agent as the tool result."),
         as_json: bool = typer.Option(False, "--json")) -> None:
    """Deny a pending tool call; the run resumes with the denial as the tool result."""
    from sentinel.engine.runner import operator_name

    engine = _engine()
    try:
        outcome = engine.deny(ident, by=operator_name(), reason=reason, listener=Progress(False if as_json else None))
    finally:
        engine.close()
    _finish(outcome, as_json)


def resume(run_id: str = typer.Argument(...), as_json: bool = typer.Option(False, "--json")) -> None:
    """Resume an interrupted or paused run (a finished run just reports its status)."""
    engine = _engine()
    try:
        outcome = engine.resume(run_id, listener=Progress(False if as_json else None))
    finally:
        engine.close()
    if outcome.status in ("done", "failed", "cancelled") and not as_json:
        print(f"run {outcome.id} is {outcome.status}" + (f": {outcome.error}" if outcome.error else ""),
              file=sys.stderr)
        if outcome.status == "done":
            print(outcome.output or "")
        raise typer.Exit(0)
    if outcome.status in ("done", "failed", "cancelled"):
        print_json(outcome.to_dict())
        raise typer.Exit(0)
    _finish(outcome, as_json)


def logs(run_id: Optional[str] = typer.Argument(None, help="Run id (default: the newest run)."),
         follow: bool = typer.Option(False, "--follow", "-f", help="Keep streaming until the run pauses or ends."),
         as_json: bool = typer.Option(False, "--json", help="One JSON event per line.")) -> None:
    """Print a run's events from its journal."""
    import json

    from sentinel.engine import journal
    from sentinel.engine.run import Run
    from sentinel.errors import NotFound

    engine = _engine()
    if _system(engine):
        return engine.logs(run_id, follow, lambda e: print(json.dumps(e, ensure_ascii=False) if as_json
                                                            else plain(e), flush=True))
    try:
        if run_id is None:
            newest = engine.store.list_runs(limit=1)
            if not newest:
                raise NotFound("no runs yet")
            run_id = newest[0]["id"]
        run_dir = Path(engine.store.get_run(run_id)["run_dir"])
    finally:
        engine.close()
    offset = 0
    while True:
        events, offset = journal.read(run_dir / "journal.jsonl", offset)
        for e in events:
            print(json.dumps(e, ensure_ascii=False) if as_json else plain(e), flush=True)
        if not follow:
            return
        last = events[-1]["type"] if events else None
        if last in ("status", "paused") and not Run.is_leased(run_dir):
            return
        time.sleep(0.2)


def status(as_json: bool = typer.Option(False, "--json")) -> None:
    """Mode (system: the supervisor answers; local: this process runs the engine), home, defaults, runs."""
    engine = _engine()
    try:
        data = engine.status() if _system(engine) else _local_status(engine)
    finally:
        engine.close()
    from sentinel.muzzle import model_hosts

    data["model_hosts"] = model_hosts(system=_system(engine))
    if as_json:
        return print_json(data)
    for key, value in data.items():
        print(f"{key}: {value}")
    if data.get("sandbox") == "best_effort":
        print("warning: sandbox is best_effort: a sandbox layer that cannot be applied does not stop a launch")


def _local_status(engine: Any) -> dict[str, Any]:
    from sentinel import paths
    from sentinel.supervisor.client import local_note

    counts: dict[str, int] = {}
    for r in engine.store.list_runs():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    cfg = engine.config
    data = {"mode": "local", "home": str(paths.home()), "default_model": cfg.default_model,
            "default_agent": cfg.default_agent, "sandbox": cfg.sandbox, "tools": cfg.leash.tools,
            "leash": _leash_summary(),
            "muzzle": "in-process, on first run (local mode)" if cfg.muzzle.enabled else "disabled (no inspection)",
            "runs": counts, "pending_approvals": len(engine.store.pending_approvals())}
    note = local_note()
    if note:
        data["note"] = note
    return data


def _leash_summary() -> str:
    """What the kernel here lets Leash enforce (`sentinel leash check` has the details)."""
    from sentinel.leash import cgroups, lsm

    abi = lsm.abi_version()
    landlock = f"Landlock ABI {abi}" if abi else "no Landlock"
    return f"{landlock}; cgroups {cgroups.describe()}"


def cancel(run_id: str = typer.Argument(..., help="Run id."), as_json: bool = typer.Option(False, "--json")) -> None:
    """Cancel a run: its worker is stopped and its pending approvals can never be used."""
    engine = _engine()
    try:
        outcome = engine.cancel(run_id) if _system(engine) else _local_cancel(engine, run_id)
    finally:
        engine.close()
    if as_json:
        return print_json(outcome.to_dict())
    print(f"run {outcome.id} is {outcome.status}", file=sys.stderr)


def _local_cancel(engine: Any, run_id: str) -> Any:
    from sentinel.engine.run import Run
    from sentinel.engine.runner import Outcome
    from sentinel.engine.store import TERMINAL
    from sentinel.errors import Busy, UsageError
    from sentinel.supervisor.ops import cancel_approvals

    row = engine.store.get_run(run_id)
    if row["status"] in TERMINAL:
        raise UsageError(f"run {run_id} is already {row['status']}")
    if Run.is_leased(Path(row["run_dir"])):
        raise Busy(f"run {run_id} is being executed by another process; stop that process first")
    engine.store.set_status(run_id, "cancelled", error="cancelled")
    cancel_approvals(engine.store, run_id)
    return Outcome(run_id, "cancelled", row.get("output"), "cancelled")


def register(app: typer.Typer) -> None:
    for fn in (run, runs, show, approvals, approve, deny, resume, logs, status, cancel):
        app.command(fn.__name__)(fn)
