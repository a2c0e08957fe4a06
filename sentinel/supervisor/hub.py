"""What the supervisor's handlers may use of it: the narrow interface below server.py.

    ops/        answers an operator client through a Hub
    workers.py  answers a worker's channel with the store alone

server.py implements Hub (the Supervisor) and Client (its framed connections); the handlers never
import it, so nothing below the loop depends on the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Protocol

from sentinel.errors import SentinelError
from sentinel.jsontypes import JSONObject
from sentinel.supervisor import layout

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.engine.store import Store
    from sentinel.supervisor.auth import Peer


@dataclass
class Settings:
    state_dir: Path = field(default_factory=layout.state_dir)
    socket_path: Path = field(default_factory=layout.socket_path)
    group: str = field(default_factory=layout.operator_group)
    resume: bool = True
    model_ports: list[int] = field(default_factory=list)


class Client(Protocol):
    """One framed connection as a handler sees it."""

    peer: "Peer | None"
    closed: bool

    def send(self, message: Mapping[str, object]) -> None: ...

    def finish(self, message: Mapping[str, object]) -> None:
        """Send a final reply and close once it is written."""
        ...


def caller(conn: Client) -> "Peer":
    """Who asked on an operator or agent-door connection (always known there: the door checked it)."""
    if conn.peer is None:
        raise SentinelError("permission denied: unknown peer")
    return conn.peer


class Running(Protocol):
    """A run's live worker as a handler sees it."""

    relaunch: bool
    stopped: bool
    inbox: JSONObject  # a chat session's next message and skills, for the worker's `hello`


class Hub(Protocol):
    settings: Settings
    config: "Config"

    @property
    def workers(self) -> Mapping[str, Running]: ...

    @property
    def store(self) -> "Store": ...

    def launch(self, run_id: str) -> Running | None:
        """Start the run's worker (None: a workflow run, which has none)."""
        ...

    def watch(self, client: Client, run_id: str, since_seq: int = 0) -> None: ...

    def cancel(self, run_id: str) -> bool: ...

    def undo(self, run_id: str, to: int | None, client: Client) -> None:
        """Start the undo of a run that no worker executes, as its agent's user; `client` gets the answer when it
        ends (Busy while the run's worker or another undo runs)."""
        ...

    def settle(self, run_id: str) -> None:
        """Keep a finished temporary subagent: its user's worker writes it into the roster."""
        ...

    def relay(self, run_id: str, event: JSONObject) -> None:
        """Hand a run's event to whoever follows it."""
        ...

    def release(self, run_id: str) -> None:
        """Give a run's followers its outcome now (a run waiting on a child that paused)."""
        ...

    def muzzle_state(self) -> str:
        """Where workers reach Muzzle and whether it answers (for `status`)."""
        ...

    def ensure_watchers(self) -> None:
        """A firing is open: the watcher child, which runs its relay timer, must be running."""
        ...
