"""Where an operator finds the supervisor: its socket, its agent door, the operator group.

    /run/sentinel/sentinel.sock     operator socket (root:sentinel 0660 in a 0750 directory)
    /run/sentinel-agent/agent.sock  the agent door (0666 in a root 0755 directory): an agent's own user
                                    chats with its agent through it

Overrides: SENTINEL_SOCKET (socket; the agent door goes beside its directory, in DIR-agent/agent.sock),
SENTINEL_AGENT_SOCKET, SENTINEL_OPERATOR_GROUP. The supervisor listens on the same paths
(sentinel/supervisor/layout.py uses these functions).
"""

from __future__ import annotations

import os
from pathlib import Path

SOCKET = Path("/run/sentinel/sentinel.sock")
OPERATOR_GROUP = "sentinel"


def socket_path() -> Path:
    return Path(os.environ.get("SENTINEL_SOCKET") or SOCKET)


def agent_socket_path() -> Path:
    """The agent door: <operator socket's directory>-agent/agent.sock unless SENTINEL_AGENT_SOCKET names it."""
    env = os.environ.get("SENTINEL_AGENT_SOCKET")
    if env:
        return Path(env)
    run = socket_path().parent
    return run.with_name(f"{run.name}-agent") / "agent.sock"


def operator_group() -> str:
    return os.environ.get("SENTINEL_OPERATOR_GROUP") or OPERATOR_GROUP
