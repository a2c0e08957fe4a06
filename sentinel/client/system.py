"""The CLI's side of the operator socket: find the supervisor, send one request, render its stream.

    connect() -> SystemEngine | None     None means local mode
    system_mode() -> bool                the same rule, for commands that work on files

Mode: SENTINEL_MODE=local forces local mode; SENTINEL_SOCKET (or SENTINEL_MODE=system) names a
supervisor that must answer; SENTINEL_HOME set (and neither of those) keeps local mode on that home;
otherwise the default socket is used when it exists and answers, and the command says so in one line on
stderr (a running supervisor never takes a command over silently). A user
the socket's directory hides from (not root, not in the operator group) gets local mode, with a note in
`status`, or, when a supervisor was asked for, one line saying why not; never a traceback.
SystemEngine (sentinel/client/remote.py) implements the engine protocol (`sentinel.engine.api.Engine`) over the
socket; it is imported when a supervisor answers, so local mode never loads the wire's declarations.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sentinel.client import paths
from sentinel.client.refusals import Denied
from sentinel.errors import SentinelError, UsageError

if TYPE_CHECKING:
    from sentinel.client.remote import SystemEngine

__all__ = ["Denied", "SystemEngine", "connect", "connect_agent", "hidden", "local_note", "system_mode"]


def __getattr__(name: str) -> object:
    """`SystemEngine`, imported when first named: local mode never loads the wire (sentinel/client/remote.py)."""
    if name == "SystemEngine":
        from sentinel.client.remote import SystemEngine

        return SystemEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _explicit() -> bool:
    return bool(os.environ.get("SENTINEL_SOCKET")) or os.environ.get("SENTINEL_MODE", "") == "system"


def _local_asked() -> bool:
    return os.environ.get("SENTINEL_MODE", "") == "local" or bool(os.environ.get("SENTINEL_HOME") and not _explicit())


def system_mode() -> bool:
    """The mode rule, without asking the supervisor anything: system mode when it is asked for, or when
    nothing asks for local mode and this user can see the socket. Commands that work on files rather than
    through the socket (`sentinel mcp add`: /etc/sentinel's config.yaml or $SENTINEL_HOME's) choose by it."""
    if _local_asked():
        return False
    return _explicit() or bool(_visible(paths.socket_path()))


def connect() -> "SystemEngine | None":
    explicit = _explicit()
    if _local_asked():
        return None
    path = paths.socket_path()
    seen = _visible(path)
    if not explicit and not seen:
        return None
    if seen is None:
        raise Denied(_not_yours(path))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except PermissionError:
        sock.close()
        raise Denied(_not_yours(path)) from None
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        sock.close()
        if explicit:
            raise UsageError(f"no supervisor is listening on {path} (start it: sentinel supervisor)") from None
        return None
    sock.close()
    if not explicit:
        print(f"sentinel: system mode: the supervisor on {path} runs this (SENTINEL_MODE=local or "
              "SENTINEL_HOME=DIR for local mode)", file=sys.stderr, flush=True)
    from sentinel.client.remote import SystemEngine

    return SystemEngine(path)


def connect_agent() -> "SystemEngine | None":
    """The agent door (sentinel/supervisor/agentdoor.py), for an agent's own user: its chat runs under the
    supervisor. None when there is no door, local mode is asked for, or the supervisor says this user is
    no agent's (then local mode, as before)."""
    mode = os.environ.get("SENTINEL_MODE", "")
    if mode == "local" or (os.environ.get("SENTINEL_HOME") and not os.environ.get("SENTINEL_AGENT_SOCKET")):
        return None
    path = paths.agent_socket_path()
    if not _visible(path):
        return None
    from sentinel.client.remote import SystemEngine

    engine = SystemEngine(path)
    try:
        status = engine.status()
    except SentinelError:  # Denied: not a registered agent's user; or no supervisor behind a stale door
        return None
    print(f"sentinel: system mode: the supervisor runs this chat as agent {status.get('agent')} "
          f"(through {path}; SENTINEL_MODE=local for local mode)", file=sys.stderr, flush=True)
    return engine


def local_note() -> str | None:
    """Why local mode was chosen on a machine that has a supervisor directory, if it does."""
    path = paths.socket_path()
    seen = _visible(path)
    if seen is None:
        return (f"a supervisor runs system mode here, for root and members of group {paths.operator_group()!r} "
                "only; you are in local mode, in your own account")
    if not seen and _visible(path.parent):
        return "a supervisor directory exists but its socket is missing (is `sentinel supervisor` running?)"
    return None


def hidden() -> bool:
    """Whether this machine's supervisor hides its socket from this user: they are not an operator."""
    return _visible(paths.socket_path()) is None


def _visible(path: Path) -> bool | None:
    """Whether `path` exists; None when a directory on the way hides it from this user."""
    try:
        os.stat(path)
        return True
    except PermissionError:
        return None
    except OSError:
        return False


def _not_yours(path: Path) -> str:
    return (f"permission denied on the supervisor socket {path}: only root and members of group "
            f"{paths.operator_group()!r} may use it (SENTINEL_MODE=local for local mode)")
