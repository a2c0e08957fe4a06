"""`sentinel watch ...` (watchers: list, show, test, fire, history, run) and `sentinel inbox`.

Watcher files are read here (they are the operator's or the user's files); firings and the inbox come
from the engine (the supervisor's database in system mode, the state database in local mode). In local
mode `sentinel watch run` runs the watchers in the foreground; in system mode the supervisor does.
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any, Optional

import typer

from sentinel.ui.render import Progress, print_json
from sentinel.ui.escape import visible
from sentinel.errors import UsageError

if TYPE_CHECKING:
    from sentinel.engine.api import Engine
    from sentinel.watchers.spec import Watcher
    from sentinel.watchers.strategies import RunCommand

app = typer.Typer(no_args_is_help=True, help="Watchers: events that start hook sessions.")


def _engine() -> "Engine":
    from sentinel.connect import open_engine

    return open_engine()


def _system() -> bool:
    from sentinel.connect import supervisor_answers

    return supervisor_answers()


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json")) -> None:
    """List watchers: id, strategy, event, endpoint. A bad file gets one line naming its field."""
    from sentinel.watchers import spec

    good, bad = spec.load_all(system=_system())
    if as_json:
        print_json({"watchers": [_row(w) for w in good], "errors": [str(e) for e in bad]})
    else:
        if not good and not bad:
            print(f"no watchers (add one in {spec.user_dir()}/<id>.yaml)")
        for w in good:
            print(f"{w.id:<24} {w.strategy.type:<10} {w.eventName:<28} {w.endpoint or ''}")
    for exc in bad:
        print(f"error: {exc}", file=sys.stderr)
    if bad:
        raise typer.Exit(2)


def _row(w: "Watcher") -> dict[str, object]:
    return {"id": w.id, "strategy": w.strategy.type, "eventName": w.eventName, "endpoint": w.endpoint,
            "skillId": w.skillId, "priority": w.priority, "tags": w.tags, "enabled": w.enabled}


@app.command("show")
def show(ident: str = typer.Argument(..., metavar="ID"), as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one watcher as validated (defaults filled in)."""
    from sentinel.watchers import spec

    data = spec.find(ident, system=_system()).model_dump(mode="json")
    if as_json:
        return print_json(data)
    import yaml

    print(yaml.safe_dump(data, sort_keys=False).rstrip())


@app.command("test")
def test(ident: str = typer.Argument(..., metavar="ID"), as_json: bool = typer.Option(False, "--json")) -> None:
    """Poll the watcher once and show the data and whether its match holds; fires nothing, remembers nothing."""
    from sentinel.watchers import spec
    from sentinel.watchers.match import Missing, holds, render
    from sentinel.watchers.envelope import context
    from sentinel.watchers.strategies import SourceError, make_source

    watcher = spec.find(ident, system=_system())
    if watcher.strategy.type in ("webhook", "file", "schedule"):
        raise UsageError(f"watch test: a {watcher.strategy.type} watcher has nothing to poll; "
                         f"use `sentinel watch fire {ident} --payload JSON`")
    source = make_source(watcher, _command_runner())
    try:
        data = source.poll(time.time())[0]
    except SourceError as exc:
        raise UsageError(f"watcher {ident}: {exc}") from None
    ok, found = holds(watcher.match, data)
    value = None if isinstance(found, Missing) else found
    result = {"data": data, "value": value, "holds": ok,
              "dedupeKey": render(watcher.dedupeKey, context(watcher, data, value, time.time()))}
    if as_json:
        return print_json(result)
    print(f"data: {json.dumps(data)[:500]}")
    print(f"value: {json.dumps(result['value'])}  match holds: {'yes' if ok else 'no'}  dedupeKey: {result['dedupeKey']}")


def _command_runner() -> "RunCommand":
    """The leashed command runner local mode's watchers use."""
    from sentinel import paths
    from sentinel.local.engine import LocalEngine
    from sentinel.mcp.launch import make_workdir
    from sentinel.watchers.deliver import command_runner
    from sentinel.watchers.spec import user_dir

    with LocalEngine() as engine:
        return command_runner(engine.config, engine.config.default_agent, paths.workspace_dir(engine.home),
                              make_workdir(user_dir(engine.home)))


# untyped: local mode's watcher runner, which sentinel/local/engine.py returns untyped
def _local_runner(watchers: "list[Watcher]") -> Any:
    if _system():
        raise UsageError("a supervisor is running: it runs the watchers (`sentinel watch history` shows firings)")
    from sentinel.local.engine import LocalEngine

    return LocalEngine().watcher_runner(watchers)


@app.command("fire")
def fire(ident: str = typer.Argument(..., metavar="ID"),
         payload: Optional[str] = typer.Option(None, "--payload", help="JSON data the firing carries (default {})."),
         as_json: bool = typer.Option(False, "--json")) -> None:
    """Fire the watcher now (no match, dedupe or cooldown) and wait for its relay outcome."""
    try:
        data = json.loads(payload) if payload is not None else {}
    except ValueError as exc:
        raise UsageError(f"--payload: not valid JSON ({exc})") from None
    with Progress(False if as_json else None) as progress, _engine() as engine:
        firing = engine.fire_watcher(ident, data, on_event=progress)
    if as_json:
        return print_json(firing.to_dict())
    print(f"{firing.id}: {firing.status} (session {firing.run_id or '-'})")


@app.command("history")
def history(watcher: Optional[str] = typer.Option(None, "--watcher", "-w", help="Only this watcher's firings."),
            limit: int = typer.Option(50, "--limit", "-n", min=1),
            as_json: bool = typer.Option(False, "--json")) -> None:
    """Firings, newest first, with their hook session and relay outcome."""
    rows = _engine().firings(watcher=watcher, limit=limit)
    if as_json:
        return print_json([r.to_dict() for r in rows])
    if not rows:
        print("no firings yet")
    for r in rows:
        why = (r.outcome or {}).get("reason") or (r.outcome or {}).get("by") or ""
        print(f"{_when(r.fired_at)}  {r.id}  {r.watcher:<20} {r.status:<10} {r.run_id or '-':<14} {visible(why)}")


@app.command("run")
def run() -> None:
    """Run the watchers in the foreground (local mode) until Ctrl-C."""
    from sentinel.watchers import spec

    good, bad = spec.load_all()
    for exc in bad:
        print(f"error: {exc} (skipped)", file=sys.stderr)
    if not good:
        raise UsageError(f"no valid watchers in {spec.user_dir()}")
    runner = _local_runner(good)
    print(f"watching: {', '.join(w.id for w in good)} (Ctrl-C stops)", file=sys.stderr)
    try:
        runner.run()
    except KeyboardInterrupt:
        pass


def inbox(limit: int = typer.Option(50, "--limit", "-n", min=1), as_json: bool = typer.Option(False, "--json")) -> None:
    """The operator's inbox: what hook sessions and relay fallbacks delivered, newest first."""
    rows = _engine().inbox(limit=limit)
    if as_json:
        return print_json([r.to_dict() for r in rows])
    if not rows:
        print("inbox is empty")
    for r in rows:
        print(f"{_when(r.t)}  {r.kind:<9} {r.watcher or '-':<20} {visible(r.message)}")


def register(root: typer.Typer) -> None:
    root.command("inbox")(inbox)

