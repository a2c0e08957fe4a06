"""System-mode fixtures; see sx_helpers.py."""

from sx_helpers import make_agent, sentinel_cmd, supervisor, system  # noqa: F401
