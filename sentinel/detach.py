"""Start a Python module detached from the caller, its stderr appended to a log.

    detach("sentinel.notify", ["--home", str(home)], log=home / "state" / "notify.log")

Local mode's after-run work (delivering notifications, the curator's model call) must never hold the command
that printed the run's answer. One fork of /bin/sh backgrounds the module in a new session and exits at once,
so there is no child to wait for and no zombie. It is a plain-profile launch (sentinel/leash/plain.py): from `/`,
with the operator's environment less loader variables (the module is the operator's own: the curator's model
call and the notification commands need their keys and logins), `-I` on top.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sentinel.leash import plain

_SH = 'exec >/dev/null 2>>"$SENTINEL_DETACHED_LOG" </dev/null; "$@" &'


def detach(module: str, args: list[str], *, log: Path, env: dict[str, str] | None = None) -> None:
    argv = [sys.executable, "-I", "-m", module, *args]
    plain.run(["/bin/sh", "-c", _SH, "sh", *argv], cwd="/", stdout=None, stderr=None, new_session=True,
              env=plain.operator_env(os.environ, {**(env or {}), "SENTINEL_DETACHED_LOG": str(log)}))
