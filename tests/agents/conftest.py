"""System-mode fixtures shared with tests/supervisor (see tests/supervisor/sx_helpers.py)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "supervisor"))

from sx_helpers import make_agent, sentinel_cmd, supervisor, system  # noqa: E402,F401


@pytest.fixture(autouse=True)
def no_spare_left():
    """Each test starts and ends without a spare interpreter held (sentinel/agents/spares.py)."""
    from sentinel.agents import spares

    spares.discard()
    yield
    spares.discard()
