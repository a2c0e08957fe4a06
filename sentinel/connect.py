"""Which engine a UI talks to: the supervisor's when one answers (system mode), else this process's.

    engine = open_engine()      # sentinel.engine.api.Engine: SystemEngine or LocalEngine
    supervisor_answers()        # whether open_engine() would pick the supervisor (system mode)

SENTINEL_MODE=local forces local mode; SENTINEL_SOCKET (or SENTINEL_MODE=system) names a supervisor that
must answer; otherwise the default socket is used when it exists and answers.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sentinel.engine.api import Engine

if TYPE_CHECKING:  # mypy checks that both engines implement every operation of the protocol, as declared
    from sentinel.client.remote import SystemEngine
    from sentinel.local.engine import LocalEngine

    def _both_engines(local: LocalEngine, system: SystemEngine) -> tuple[Engine, Engine]:
        return local, system


def open_engine(*, local_if_refused: bool = False, agent_door: bool = False) -> Engine:
    """`local_if_refused`: a user the supervisor refuses (an agent's own user is never an operator) works in
    local mode on their own $SENTINEL_HOME instead of failing, unless SENTINEL_SOCKET or SENTINEL_MODE=system
    demands the supervisor. `agent_door`: a user who is no operator but a registered agent's own user
    (`sudo -u AGENT sentinel chat`) goes through the supervisor's agent door instead of local mode."""
    from sentinel.client.system import Denied, connect, connect_agent, local_note

    note: str | None
    try:
        system = connect()
    except Denied as exc:
        if not local_if_refused or os.environ.get("SENTINEL_SOCKET") or os.environ.get("SENTINEL_MODE") == "system":
            raise
        system, note = None, f"local mode ({exc})"
    else:
        note = local_note()
    if system is None and agent_door:
        system = connect_agent()
    if system is not None:
        return system
    from sentinel.local.engine import LocalEngine

    return LocalEngine(note=note)


def supervisor_answers() -> bool:
    """Whether a supervisor runs this user's commands (system mode), as open_engine() would decide it."""
    from sentinel.client.system import connect

    client = connect()
    if client is not None:
        client.close()
    return client is not None
