"""The CLI's side of the operator socket: find the supervisor, send one request, render its stream.

    connect() -> SystemEngine | None     None means local mode

Mode: SENTINEL_MODE=local forces local mode; SENTINEL_SOCKET (or SENTINEL_MODE=system) names a
supervisor that must answer; otherwise the default socket is used when it exists and answers.
SystemEngine mirrors the local Engine's calls the CLI makes, so each command stays one call.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, Callable

from sentinel.errors import Busy, NotFound, SentinelError, UsageError
from sentinel.supervisor import layout, protocol

Listener = Callable[[dict[str, Any]], None]
ERRORS: dict[str, type[SentinelError]] = {"usage": UsageError, "not_found": NotFound, "busy": Busy}


class Denied(SentinelError):
    """The supervisor refused the caller (not an operator)."""

    exit_code = 2


def connect() -> "SystemEngine | None":
    mode = os.environ.get("SENTINEL_MODE", "")
    if mode == "local":
        return None
    explicit = bool(os.environ.get("SENTINEL_SOCKET")) or mode == "system"
    path = layout.socket_path()
    if not explicit and not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except PermissionError:
        sock.close()
        raise Denied(f"permission denied on the supervisor socket {path}: only root and members of group "
                     f"{layout.operator_group()!r} may use it (SENTINEL_MODE=local for local mode)") from None
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        sock.close()
        if explicit:
            raise UsageError(f"no supervisor is listening on {path} (start it: sentinel supervisor)") from None
        return None
    sock.close()
    return SystemEngine(path)


def local_note() -> str | None:
    """Why local mode was chosen on a machine that has a supervisor directory, if it does."""
    path = layout.socket_path()
    if path.parent.exists() and not path.exists():
        return "a supervisor directory exists but its socket is missing or not accessible to you"
    return None


class SystemEngine:
    mode = "system"

    def __init__(self, path: Path):
        self.path = path

    def close(self) -> None:
        pass

    # -- transport --------------------------------------------------------------------------------

    def call(self, op: str, listener: Listener | None = None, **args: Any) -> Any:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(self.path))
            protocol.send(sock, {"op": op, **args})
            return _answer(sock, listener)
        except (ConnectionError, protocol.ProtocolError) as exc:
            raise SentinelError(f"lost the supervisor connection ({exc})") from None
        finally:
            sock.close()

    # -- the Engine calls the CLI makes --------------------------------------------------------------

    def start(self, task: str, *, model: str | None = None, agent: str | None = None,
              workspace: Path | None = None, listener: Listener | None = None) -> Any:
        ws = str(workspace.expanduser().resolve()) if workspace else None
        return _outcome(self.call("start", listener, task=task, model=model, agent=agent, workspace=ws,
                                  follow=True))

    def resume(self, run_id: str, listener: Listener | None = None) -> Any:
        return _outcome(self.call("resume", listener, run_id=run_id, follow=True))

    def approve(self, ident: str, *, by: str = "", listener: Listener | None = None) -> Any:
        return _outcome(self.call("approve", listener, ident=ident, follow=True))

    def deny(self, ident: str, *, by: str = "", reason: str = "", listener: Listener | None = None) -> Any:
        return _outcome(self.call("deny", listener, ident=ident, reason=reason, follow=True))

    def cancel(self, run_id: str) -> Any:
        return _outcome(self.call("cancel", run_id=run_id))

    def show(self, run_id: str) -> dict[str, Any]:
        return self.call("show", run_id=run_id)

    def runs(self) -> list[dict[str, Any]]:
        return self.call("runs")

    def pending(self) -> list[dict[str, Any]]:
        return self.call("approvals")

    def logs(self, run_id: str | None, follow: bool, emit: Listener) -> None:
        self.call("logs", emit, run_id=run_id, follow=follow)

    def status(self) -> dict[str, Any]:
        return self.call("status")


def _answer(sock: socket.socket, listener: Listener | None) -> Any:
    while True:
        message = protocol.recv(sock)
        if message is None:
            raise ConnectionError("the supervisor closed the connection")
        if "event" in message:
            if listener is not None:
                listener(message["event"])
            continue
        if "started" in message:
            continue
        if message.get("ok"):
            return message.get("result")
        kind = message.get("kind", "error")
        if kind == "denied":
            raise Denied(message.get("error", "permission denied"))
        raise ERRORS.get(kind, SentinelError)(message.get("error", "the supervisor refused"))


def _outcome(data: dict[str, Any]) -> Any:
    from sentinel.engine.runner import Outcome

    return Outcome(data["id"], data["status"], data.get("output"), data.get("error"), data.get("approval_id"))
