"""Delivery targets other than the inbox (which the relay writes in its own transaction), and the
leashed command runner the command strategy and command targets share.

    deliver(target, message, firing, run_command)   # DeliveryError: retried with backoff, then the inbox

command: argv under the agent's Leash profile (in system mode whatever `leash.tools` says: never as root), the
message on stdin and in $SENTINEL_MESSAGE; file: one JSON line appended (sentinel/tools/rootpath.py: as root, through
no link another user could have made); webhook: POST of the same JSON document.

A command (a command source's or a command target's) is the operator's, so it never starts from what the
agent can write: its working directory and HOME are the watchers' directory (where the watcher files are,
the operator's), the executable is absolute (found on a PATH of system directories; a relative one or a
relative script against the watchers' directory), the environment is minimal with PYTHONSAFEPATH and no
PYTHONPATH/NODE_PATH (sentinel.mcp.launch.trusted). The agent's workspace is `{workspace}` in its arguments
and $SENTINEL_WORKSPACE.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the notification deliverer imports this module and must start fast
    from sentinel.config import Config
    from sentinel.jsontypes import JSON, JSONObject
    from sentinel.watchers.strategies import RunCommand

WEBHOOK_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 30.0


class DeliveryError(Exception):
    pass


def document(target: JSONObject, message: str, firing: JSONObject, kind: str) -> JSONObject:
    return {"t": time.time(), "firing": firing["id"], "watcher": firing["watcher"], "kind": kind,
            "target": target.get("name") or target.get("type"), "message": message}


def deliver(target: JSONObject, message: str, firing: JSONObject, kind: str, run_command: RunCommand) -> None:
    doc = document(target, message, firing, kind)
    kind_of = target.get("type")
    if kind_of == "file":
        append_jsonl(Path(os.path.expanduser(str(target["path"]))), doc)
    elif kind_of == "webhook":
        post_json(str(target["url"]), doc)
    elif kind_of == "command":
        argv = _argv(target["argv"])
        code, out = run_command(argv, COMMAND_TIMEOUT_S, message.encode())
        if code != 0:
            raise DeliveryError(f"{argv[0]} exited {code}: {out.strip()[:200]}")
    else:
        raise DeliveryError(f"unknown target type {kind_of!r}")


def _argv(value: JSON) -> list[str]:
    """A command target's argv (validated as a list of strings when its watcher was loaded)."""
    if not isinstance(value, list) or not value:
        raise DeliveryError("the command target has no argv")
    return [str(a) for a in value]


def append_jsonl(path: Path, doc: JSONObject) -> None:
    """One JSON line at the end of `path` (a watcher's or a notification's `file` target), written as
    sentinel/tools/rootpath.py writes: as root, no link another user could have made is followed, on the file
    or on a directory above it, and only a regular file is appended to."""
    from sentinel.tools import rootpath

    try:
        rootpath.append(str(path), (json.dumps(doc, sort_keys=True) + "\n").encode())
    except OSError as exc:
        raise DeliveryError(f"{path}: {exc.strerror}") from None


def post_json(url: str, doc: JSONObject, timeout_s: float = WEBHOOK_TIMEOUT_S,
              headers: dict[str, str] | None = None, shown: str | None = None) -> None:
    post(url, json.dumps(doc).encode(), {"Content-Type": "application/json", **(headers or {})}, timeout_s, shown)


def post(url: str, body: bytes, headers: dict[str, str], timeout_s: float = WEBHOOK_TIMEOUT_S,
         shown: str | None = None) -> None:
    """POST `body`; any answer but 2xx (or none within `timeout_s`) is a DeliveryError naming `shown` (the URL)."""
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            answer.read(1024)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DeliveryError(f"POST {shown or url}: {getattr(exc, 'reason', None) or exc}") from None


def command_runner(config: Config, agent: str | None, workspace: Path, home: Path | None = None, *,
                   make_workspace: bool = True) -> RunCommand:
    """Run argv under the agent's Leash tool profile, from `home` (default: the watchers' directory), never from
    the workspace (see the module docstring). `leash.tools: plain` makes it a plain subprocess in local mode only,
    as for the agent's own tools there.
    `make_workspace=False` (system mode, the watcher child, root): the workspace lies in the agent's home, which
    root never writes (a link the agent put on the way would have root create a directory wherever it points);
    `sentinel setup` made it, as the agent's user, and Leash refuses a link the agent could have changed on the way
    to it. And Leash launches the command whatever `leash.tools` says, so it runs as the agent's user (its groups,
    no capabilities, no new privileges), never as root: the uid drop stays in Leash's one confinement sequence, as
    for every non-plain watcher command, rather than in a second one beside the plain profile."""

    def run(argv: list[str], timeout_s: float, stdin: bytes | None) -> tuple[int | None, str]:
        from sentinel.errors import SentinelError, UsageError
        from sentinel.mcp.launch import trusted

        try:
            own = home if home is not None else _watchers_dir()
        except UsageError as exc:
            return None, f"the watchers' directory {exc}"
        extra = {"SENTINEL_MESSAGE": stdin.decode(errors="replace")} if stdin is not None else {}
        if make_workspace:
            workspace.mkdir(parents=True, exist_ok=True)
        elif not os.path.isdir(workspace):
            return None, f"{workspace}: the agent's workspace is missing (sentinel setup --name {agent} makes it)"
        try:
            argv, env = trusted(argv, own, workspace, extra)
        except UsageError as exc:
            return None, f"{argv[0] if argv else 'command'}: {exc}"
        if config.leash.tools == "plain" and make_workspace:  # local mode only: see the docstring
            from sentinel.leash import plain

            try:
                proc = plain.run(argv, cwd=own, input=stdin or b"", timeout=timeout_s, env=env)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return None, str(exc)
            return proc.returncode, proc.stdout.decode(errors="replace")
        from sentinel.leash.launch import run_tool

        try:
            res = run_tool(argv, cwd=own, workspace=workspace, timeout_s=timeout_s, env=env, agent=agent,
                           sandbox=config.sandbox, stdin=stdin, extra_read=[str(own)])
        except SentinelError as exc:  # a layer missing under `sandbox: enforce`, a launcher down: a failed command
            return None, f"{argv[0]}: {exc}"
        return res.exit_code, res.output

    return run


def _watchers_dir() -> Path:
    """$SENTINEL_HOME/watchers (the operator's watcher files), created 0755 when missing; system mode passes
    /etc/sentinel/watchers."""
    from sentinel.mcp.launch import make_workdir
    from sentinel.watchers import spec

    return make_workdir(spec.user_dir())
