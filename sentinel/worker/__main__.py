"""`python -m sentinel.worker RUN_ID`: one run's agent loop, as the agent's user, spawned by the supervisor.

The supervisor hands over one end of a socket pair as fd SENTINEL_SUPERVISOR_FD (0). The worker moves
it off stdin, asks the supervisor what to run (`hello`), creates or reopens the run under its own
$SENTINEL_HOME/runs/<id>/ (every file written as this user), runs the loop with a RemoteStore, relays
each journal event, and exits when the run pauses, finishes or fails. Model calls go where
`sentinel.muzzle.model_for_run` says (Muzzle's URL and run token when the supervisor passed them).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

from sentinel.errors import SentinelError


def _channel() -> Any:
    from sentinel.worker.remote import Channel

    fd = int(os.environ.get("SENTINEL_SUPERVISOR_FD", "0"))
    sock = socket.socket(fileno=os.dup(fd))  # os.dup: close-on-exec, so tools never inherit the channel
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, fd)
    os.close(null)
    return Channel(sock)


def _open_run(channel: Any, spec: dict[str, Any], home: Path, config: Any) -> tuple[Any, Any, bool]:
    from sentinel import paths
    from sentinel.agents import profile as profiles
    from sentinel.engine.run import Run
    from sentinel.models import split

    run_dir = paths.runs_dir(home) / spec["id"]
    if (run_dir / "journal.jsonl").exists():
        run = Run.open(run_dir)
        return run, profiles.load(run.state.agent, home), False
    profile = profiles.load(spec["profile"], home)
    model = spec.get("model") or profile.model or config.default_model
    split(model)
    workspace = Path(spec["workspace"]) if spec.get("workspace") else paths.workspace_dir(home)
    workspace.mkdir(parents=True, exist_ok=True)
    channel.call("created", model=model, workspace=str(workspace))
    paths.runs_dir(home).mkdir(parents=True, exist_ok=True, mode=0o700)
    run = Run.create(run_dir, {"id": spec["id"], "task": spec["task"], "agent": profile.name, "model": model,
                               "workspace": str(workspace), "mission": spec.get("mission") or profile.mission or "",
                               "parent_id": spec.get("parent_id")})
    return run, profile, True


def execute(run_id: str) -> int:
    from sentinel import config as config_mod
    from sentinel import paths
    from sentinel.worker.loop import AgentLoop
    from sentinel.worker.remote import RemoteStore
    from sentinel.worker.setup import build_deps, initial_messages

    channel = _channel()
    try:
        spec = channel.call("hello", pid=os.getpid())
        if spec["id"] != run_id:
            raise SentinelError(f"supervisor sent run {spec['id']}, expected {run_id}")
        home = paths.home()
        (home / "tmp").mkdir(parents=True, exist_ok=True, mode=0o700)
        config = config_mod.load(home)
        run, profile, fresh = _open_run(channel, spec, home, config)
        with run:
            if fresh:  # `created` was journaled before anyone listened
                from sentinel.engine import journal
                from sentinel.engine.events import Translator

                for event in Translator(run_id).feed(journal.read(run.journal.path)[0][0]):
                    channel.emit(event)
            run.listeners.append(channel.emit)
            store = RemoteStore(channel, run_id)
            deps = build_deps(config, home, profile, run.state, store)  # type: ignore[arg-type]
            if fresh:
                run.record(*initial_messages(home, profile, deps, spec["task"]))
            AgentLoop(run, deps).execute()
        return 0
    except SentinelError as exc:
        try:
            channel.call("error", message=str(exc))
        except (SentinelError, OSError):
            pass
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        channel.close()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m sentinel.worker RUN_ID", file=sys.stderr)
        return 2
    return execute(argv[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
