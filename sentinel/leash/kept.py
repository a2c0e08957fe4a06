"""A child the supervisor keeps running: launched through sentinel/leash/spawn.py, watched by its pidfd,
restarted with backoff when it ends. Muzzle (sentinel/supervisor/muzzled.py) and the watcher runner
(sentinel/supervisor/watchkeep.py) are each one.

    kept = KeptChild("muzzle", logs_dir, make_launch)   # make_launch(stdio) -> spawn.Launch, its profile's layers
    kept.start()        # spawn it now, stdout and stderr appended to logs_dir/muzzle.log; on failure
                        # kept.last_error says why and a restart is scheduled
    kept.pidfd          # readable once it has ended (the caller's loop selects on it), None when not running
    kept.exited()       # reap it; its exit code; a restart is scheduled
    kept.due()          # seconds until a restart is due (the loop's select timeout), or None
    kept.stop()         # end it (SIGKILL, or the signal given, then wait) and schedule nothing

The child dies with the supervisor (pdeathsig, part of every launch), so a restarted supervisor
starts its own.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Callable

from sentinel.errors import SentinelError
from sentinel.leash import spawn

BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


class KeptChild:
    def __init__(self, name: str, logs: Path, make_launch: Callable[[tuple[int, int, int]], spawn.Launch]):
        self.name = name
        self.logs = logs
        self.make_launch = make_launch
        self.child: spawn.Spawned | None = None
        self.failures = 0
        self.restart_at: float | None = None
        self.last_error: str | None = None

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    @property
    def pidfd(self) -> int | None:
        return self.child.pidfd if self.child is not None else None

    def start(self) -> int | None:
        """Spawn it; its pidfd, or None (with `last_error` set and a restart scheduled) when it could not start."""
        self.restart_at = None
        self.logs.mkdir(mode=0o700, exist_ok=True)
        log = os.open(self.logs / f"{self.name}.log",
                      os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self.child = spawn.spawn(self.make_launch((null, log, log)))
            self.last_error = None
            return self.child.pidfd
        except (OSError, SentinelError) as exc:
            self.last_error = str(exc)
            self.backoff()
            return None
        finally:
            os.close(log)
            os.close(null)

    def exited(self) -> int:
        assert self.child is not None
        code = self.child.reap()
        self.child = None
        self.last_error = f"it exited with code {code}"
        self.backoff()
        return code

    def due(self) -> float | None:
        return None if self.restart_at is None else max(0.0, self.restart_at - time.monotonic())

    def backoff(self) -> None:
        self.restart_at = time.monotonic() + BACKOFF_S[min(self.failures, len(BACKOFF_S) - 1)]
        self.failures += 1

    def stop(self, sig: int = signal.SIGKILL) -> None:
        if self.child is not None:
            if sig == signal.SIGKILL:
                self.child.kill()
            else:
                self.child.signal(sig)
            self.child.reap()
            self.child = None
        self.restart_at = None
