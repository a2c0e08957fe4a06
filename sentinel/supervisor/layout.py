"""Where system mode keeps its state, and the environment overrides tests use.

    /var/lib/sentinel/sentinel.db   supervisor database (root, 0600 in a 0700 directory)
    /var/lib/sentinel/logs/         worker stdout/stderr, one file per run (root)
    /run/sentinel/sentinel.sock     operator socket (root:sentinel 0660 in a 0750 directory)
    /run/sentinel-agent/agent.sock  the agent door (0666 in a root 0755 directory): an agent's own user
                                    chats with its agent through it (sentinel/supervisor/agentdoor.py)
    /etc/sentinel/                  system config and Leash policies

Overrides: SENTINEL_SYSTEM_DIR (state), SENTINEL_SOCKET (socket; the agent door goes beside its
directory, in DIR-agent/agent.sock), SENTINEL_AGENT_SOCKET, SENTINEL_OPERATOR_GROUP,
SENTINEL_AGENT_HOME_BASE (where `sentinel setup` puts agent homes). The socket paths and the operator
group are the operator side's (sentinel/client/paths.py): clients find the supervisor where it listens.
"""

from __future__ import annotations

import os
from pathlib import Path

from sentinel.client.paths import agent_socket_path, operator_group, socket_path

__all__ = ["agent_socket_path", "operator_group", "socket_path", "state_dir", "db_path", "home_base", "etc_dir",
           "agent_sentinel_home"]

STATE_DIR = Path("/var/lib/sentinel")
ETC_DIR = Path("/etc/sentinel")
HOME_BASE = Path("/home")


def state_dir() -> Path:
    return Path(os.environ.get("SENTINEL_SYSTEM_DIR") or STATE_DIR)


def db_path(state: Path | None = None) -> Path:
    return (state or state_dir()) / "sentinel.db"


def home_base() -> Path:
    return Path(os.environ.get("SENTINEL_AGENT_HOME_BASE") or HOME_BASE)


def etc_dir() -> Path:
    return Path(os.environ.get("SENTINEL_ETC_DIR") or ETC_DIR)


def agent_sentinel_home(home: str | Path) -> Path:
    """An agent's state tree (docs/architecture.md, State)."""
    return Path(home) / ".sentinel"
