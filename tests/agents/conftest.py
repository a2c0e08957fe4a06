"""System-mode fixtures shared with tests/supervisor (see tests/supervisor/sx_helpers.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "supervisor"))

from sx_helpers import make_agent, sentinel_cmd, supervisor, system  # noqa: E402,F401
