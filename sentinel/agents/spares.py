"""The spare: a confined runner started ahead of this process's next authored-tool call.

    start(call, idle_s)          give up the spare held now (if any) and start one shaped like `call`
    hand_over(key, payload)      the call's result from the spare, or None: launch it cold

A spare is a Leash launch (sentinel.leash.launch.start) of sentinel/agents/toolrun.py under exactly
the profile, limits, identity, environment, workspace and sandbox mode a call will need, with its
stdin a pipe this process holds. The runner imports and sets up what it can, then blocks reading
that pipe: until the call it holds no code and no arguments. A call whose `key` (a hash of all of
the above) matches writes its payload and closes the pipe; Leash's wall-clock timeout starts then.
A call that does not match gives the spare up (the runner reads EOF and exits; the keeper kills
what is left) and launches cold. Each spare runs one call only, like a cold launch.

One spare per process (a worker, or a local-mode run); it dies with the process (its pipe closes)
and at its idle bound (`tools.authored.spare_idle_s`) if no call comes.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sentinel.leash.launch import Identity, Pending, ToolResult
    from sentinel.leash.profile import Profile

_lock = threading.Lock()
_held: tuple[str, int, Pending] | None = None  # (key, owning pid, the launch)


@dataclass(frozen=True)
class Call:
    """One leashed launch of the runner, as launch() and start() take it; `key` says which spare fits it."""

    argv: list[str]
    prof: Profile
    cwd: Path
    env: dict[str, str]
    timeout_s: float
    who: Identity
    sandbox: str
    capture: int
    key: str


def start(call: Call, idle_s: float) -> None:
    """Start a spare for calls like `call`, replacing the one held. Raises SentinelError when Leash refuses."""
    from sentinel.leash.launch import start as launch_ahead

    discard()
    pending = launch_ahead(call.argv, call.prof, cwd=call.cwd, env=call.env, timeout_s=call.timeout_s,
                           idle_s=idle_s, who=call.who, sandbox=call.sandbox, output_max_chars=call.capture)
    global _held
    with _lock:
        old, _held = _held, (call.key, os.getpid(), pending)
    if old is not None:
        old[2].close()


def hand_over(key: str, payload: bytes) -> ToolResult | None:
    """Run the call on the spare if one fits `key` and is still waiting; None when the call must launch
    cold: no spare, another shape, or a spare gone before it read anything (so the code never ran)."""
    held = _take()
    if held is None:
        return None
    shape, pending = held
    if shape != key or pending.ended():
        pending.close()
        return None
    try:
        res = pending.hand_over(payload)
    except OSError:
        return None  # the spare died with its stdin still open: it never read to the end, so never ran
    return None if res.unused else res


def _take() -> tuple[str, Pending] | None:
    """Take the spare out (it serves one call at most); a spare inherited through fork is not ours."""
    global _held
    with _lock:
        held, _held = _held, None
    if held is None or held[1] != os.getpid():
        return None
    return held[0], held[2]


def discard() -> None:
    """Give up the spare held, if any."""
    held = _take()
    if held is not None:
        held[1].close()
