"""`python -m sentinel.worker RUN_ID`: one run's agent loop, as the agent's user, spawned by the supervisor.

The supervisor execs it from an interpreter this user cannot read, so the kernel made it non-dumpable
at execve (no other process of this uid can trace it, read its memory or take its descriptors); it
makes sure of that before anything secret arrives. It hands over one end of a socket pair as fd
SENTINEL_SUPERVISOR_FD (0). The worker moves it off stdin and asks the supervisor what to run
(`hello`): the run as the supervisor fixed it (task, model, workspace), the operator's settings to
run under (the agent's own config.yaml is not read), and Muzzle's URL with the run token. It creates
or reopens the run under its own $SENTINEL_HOME/runs/<id>/ (every file written as this user), runs the
loop with a RemoteStore, relays each journal event, and exits when the run pauses, finishes or fails.

`python -m sentinel.worker --undo RUN_ID`: `sentinel undo` (and a chat's /undo) of a system-mode run, started by
the supervisor through Leash as the agent's user with the undo profile (it writes the run's directory and its
workspace, nothing else, and reaches no network). Its `hello` names the run directory, the workspace and the
checkpoint as the supervisor fixed them; it restores with sentinel/worker/undo.py, as local mode does, and answers
`undone` with what it put back, or with why it could not.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentinel.errors import SentinelError
from sentinel.engine.status import ANSWERED

if TYPE_CHECKING:
    from sentinel.agents.profile import AgentProfile
    from sentinel.config import Config
    from sentinel.engine.events import Listener
    from sentinel.engine.run import Run
    from sentinel.worker.remote import Channel

# untyped (`spec`, each function below that says so): the `hello` answer, JSON that root's supervisor built
# (sentinel/supervisor/workers.py `greeting`), read field by field as that function writes them


def _channel() -> "Channel":
    from sentinel.worker.remote import Channel

    fd = int(os.environ.get("SENTINEL_SUPERVISOR_FD", "0"))
    sock = socket.socket(fileno=os.dup(fd))  # os.dup: close-on-exec, so tools never inherit the channel
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, fd)
    os.close(null)
    return Channel(sock)


FIXED = ("id", "task", "workspace", "parent_id")  # what the supervisor fixed; the journal only claims it (and model)


def _undumpable() -> None:
    """Be sure no other process of this uid can trace this one before the run token arrives."""
    from sentinel.leash import privs

    if not privs.set_undumpable():
        raise SentinelError("the worker could not make itself non-dumpable; refusing to take the run token")


# untyped: `spec`, the supervisor's `hello` answer
def _open_run(spec: dict[str, Any], home: Path, config: "Config",
              listener: "Listener") -> tuple["Run", "AgentProfile", bool]:
    """The run the supervisor fixed, reopened or created here; `listener` hears a new run's `created` live."""
    from sentinel import paths
    from sentinel.engine.records import Created
    from sentinel.engine.run import Run
    from sentinel.engine.state import JOURNAL

    run_dir = paths.runs_dir(home) / spec["id"]
    if (run_dir / JOURNAL).exists():
        run = Run.open(run_dir)
        for key in FIXED:  # the journal is the agent's file: what it says of these is a claim
            setattr(run.state, key, spec[key] if key != "workspace" else str(_workspace(spec, home)))
        return run, _profile(spec, home, config), False
    profile = _profile(spec, home, config)
    workspace = _workspace(spec, home)
    workspace.mkdir(parents=True, exist_ok=True)
    paths.runs_dir(home).mkdir(parents=True, exist_ok=True, mode=0o700)
    run = Run.create(run_dir, Created(id=spec["id"], task=spec["task"], agent=profile.name, model=spec["model"],
                                      workspace=str(workspace), mission=spec.get("mission") or profile.mission or "",
                                      parent_id=spec.get("parent_id"), kind=spec.get("kind") or "task"),
                     listeners=[listener])
    return run, profile, True


# untyped: `spec`, the supervisor's `hello` answer
def _profile(spec: dict[str, Any], home: Path, config: "Config") -> "AgentProfile":
    """The run's agent profile: its file, or for a temporary subagent what its approved spawn said."""
    from sentinel.agents import profile as profiles

    sub = spec.get("subagent")
    if not sub:
        return profiles.load(spec["profile"], home, config=config, check_model=False)
    return profiles.AgentProfile(name=spec["profile"], description=str(sub.get("description") or ""),
                                 model=spec["model"], tools=list(spec.get("grants") or []),
                                 skills=[str(s) for s in sub.get("skills") or []])


# untyped: `spec`, the supervisor's `hello` answer
def _keep(spec: dict[str, Any], profile: "AgentProfile", home: Path) -> None:
    """Save a temporary subagent into its user's roster (agents/<name>.yaml and its soul), as this user."""
    from sentinel.agents import profile as profiles

    profiles.save(profile, home, soul=str(spec["subagent"]["soul"]))


def _workspace(spec: dict[str, Any], home: Path) -> Path:  # untyped: `spec`, the supervisor's `hello` answer
    from sentinel import paths

    return Path(spec["workspace"]) if spec.get("workspace") else paths.workspace_dir(home)


# untyped: `spec`, the supervisor's `hello` answer
def _settings(spec: dict[str, Any]) -> tuple["Config", tuple[str, str]]:
    """The operator's settings and Muzzle's endpoint, as the supervisor sent them."""
    from pydantic import ValidationError

    from sentinel.config import Config

    endpoint = spec.get("endpoint") or {}
    if not endpoint.get("base_url") or not endpoint.get("token"):
        raise SentinelError("the supervisor gave no Muzzle endpoint: start Muzzle (sentinel muzzle serve --system) "
                            "or let sentinel supervisor start it")
    try:
        return Config.model_validate(spec["config"]), (endpoint["base_url"], endpoint["token"])
    except ValidationError as exc:
        raise SentinelError(f"the supervisor's settings are not valid here: {exc.errors()[0]['msg']}") from None


def execute(run_id: str) -> int:
    from sentinel import paths
    from sentinel.leash import settings_cache
    from sentinel.worker.execute import execute_run
    from sentinel.worker.remote import RemoteChildren, RemoteStore

    channel = _channel()
    try:
        _undumpable()
        spec = channel.call("hello")
        if spec["id"] != run_id:
            raise SentinelError(f"supervisor sent run {spec['id']}, expected {run_id}")
        config, endpoint = _settings(spec)
        settings_cache.pin(config.leash)  # its tools' leash: the operator's settings, root's policy file
        home = paths.home()
        (home / "tmp").mkdir(parents=True, exist_ok=True, mode=0o700)
        if spec.get("settle"):  # an operator approved keeping this finished subagent: nothing else runs
            _keep(spec, _profile(spec, home, config), home)
            return 0
        run, profile, fresh = _open_run(spec, home, config, channel.emit)
        sub = spec.get("subagent")
        execute_run(run, home, config, profile, RemoteStore(channel, run_id), listener=channel.emit,
                    message=str(spec["message"]) if spec.get("message") and not fresh else None,
                    skills=[str(s) for s in spec.get("skills") or []], model=spec["model"], endpoint=endpoint,
                    operator=True, children=RemoteChildren(channel), grants=spec.get("grants"),
                    soul=(sub or {}).get("soul"))
        if sub and run.state.status in ANSWERED and config.orchestration.temporary == "save":
            _keep(spec, profile, home)
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


def undo(run_id: str) -> int:
    """Restore the run's workspace as this user and tell the supervisor what was done (or why not)."""
    from sentinel.errors import Busy
    from sentinel.worker.undo import UndoError, undo_run

    channel = _channel()
    try:
        spec = channel.call("hello")
        if not isinstance(spec, dict) or spec.get("id") != run_id:
            raise SentinelError(f"the supervisor sent no undo of run {run_id}")
        to, kids = spec.get("to"), spec.get("children")
        children = [Path(k) for k in kids if isinstance(k, str)] if isinstance(kids, list) else []
        try:
            done = undo_run(Path(str(spec["run_dir"])), Path(str(spec["workspace"])),
                            to if isinstance(to, int) else None, channel.emit, children)
        except UndoError as exc:
            channel.call("undone", refused="usage", message=str(exc))
            return 1
        except Busy as exc:
            channel.call("undone", refused="busy", message=str(exc))
            return 1
        except OSError as exc:
            channel.call("undone", refused="error", message=f"run {run_id}: its checkpoints cannot be read "
                                                            f"({exc.strerror or exc})")
            return 1
        channel.call("undone", result=done)
        return 0
    except (SentinelError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        channel.close()


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--undo":
        return undo(argv[1])
    if len(argv) != 1:
        print("usage: python -m sentinel.worker RUN_ID | --undo RUN_ID", file=sys.stderr)
        return 2
    return execute(argv[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
