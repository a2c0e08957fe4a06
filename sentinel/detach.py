"""Start a Python module detached from the caller, its stderr appended to a log.

    detach("sentinel.notify", ["--home", str(home)], log=home / "state" / "notify.log")

Local mode's after-run work (delivering notifications, the curator's model call) must never hold the command
that printed the run's answer. One fork of /bin/sh backgrounds the module in a new session and exits at once,
so there is no child to wait for and no zombie.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_SH = 'exec >/dev/null 2>>"$SENTINEL_DETACHED_LOG" </dev/null; "$@" &'


def detach(module: str, args: list[str], *, log: Path, env: dict[str, str] | None = None) -> None:
    argv = [sys.executable, "-I", "-m", module, *args]
    subprocess.run(["/bin/sh", "-c", _SH, "sh", *argv],
                   env={**os.environ, **(env or {}), "SENTINEL_DETACHED_LOG": str(log)},
                   start_new_session=True, check=False)
