"""Which engine a UI talks to: the supervisor's when one answers (system mode), else this process's.

    engine = open_engine()      # sentinel.engine.api.Engine: SystemEngine or LocalEngine

SENTINEL_MODE=local forces local mode; SENTINEL_SOCKET (or SENTINEL_MODE=system) names a supervisor that
must answer; otherwise the default socket is used when it exists and answers.
"""

from __future__ import annotations

from sentinel.engine.api import Engine


def open_engine() -> Engine:
    from sentinel.supervisor.client import connect, local_note

    system = connect()
    if system is not None:
        return system
    from sentinel.local.engine import LocalEngine

    return LocalEngine(note=local_note())
