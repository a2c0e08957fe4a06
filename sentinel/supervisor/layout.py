"""Where system mode keeps its state, and the environment overrides tests use.

    /var/lib/sentinel/sentinel.db   supervisor database (root, 0600 in a 0700 directory)
    /var/lib/sentinel/logs/         worker stdout/stderr, one file per run (root)
    /run/sentinel/sentinel.sock     operator socket (root:sentinel 0660 in a 0750 directory)
    /run/sentinel-agent/agent.sock  the agent door (0666 in a root 0755 directory): an agent's own user
                                    chats with its agent through it (sentinel/supervisor/agentdoor.py)
    /etc/sentinel/                  system config and Leash policies

Overrides: SENTINEL_SYSTEM_DIR (state), SENTINEL_SOCKET (socket; the agent door goes beside its
directory, in DIR-agent/agent.sock), SENTINEL_AGENT_SOCKET, SENTINEL_OPERATOR_GROUP,
SENTINEL_AGENT_HOME_BASE (where `sentinel setup` puts agent homes).
"""

from __future__ import annotations

import os
from pathlib import Path

STATE_DIR = Path("/var/lib/sentinel")
SOCKET = Path("/run/sentinel/sentinel.sock")
ETC_DIR = Path("/etc/sentinel")
OPERATOR_GROUP = "sentinel"
HOME_BASE = Path("/home")


def state_dir() -> Path:
    return Path(os.environ.get("SENTINEL_SYSTEM_DIR") or STATE_DIR)


def db_path(state: Path | None = None) -> Path:
    return (state or state_dir()) / "sentinel.db"


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


def home_base() -> Path:
    return Path(os.environ.get("SENTINEL_AGENT_HOME_BASE") or HOME_BASE)


def etc_dir() -> Path:
    return Path(os.environ.get("SENTINEL_ETC_DIR") or ETC_DIR)


def agent_sentinel_home(home: str | Path) -> Path:
    """An agent's state tree (docs/architecture.md, State)."""
    return Path(home) / ".sentinel"
