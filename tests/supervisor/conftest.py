"""System-mode fixtures; see sx_helpers.py. `worker`: a worker of run r-mine as the supervisor's channel
handlers see it (no process behind it), for tests that attack the channel ops directly."""

import pytest

from sentinel.supervisor import registry
from sentinel.supervisor.workers import Worker
from sx_helpers import fresh_system, make_agent, sentinel_cmd, supervisor, system  # noqa: F401


@pytest.fixture
def worker():
    agent = registry.Agent("a", "A", "a", 1234, "/home/a", "setup", 0.0)
    return Worker("r-mine", agent, 1234, "/home/a", spawned=None)  # type: ignore[arg-type]
