"""The watcher runner as a child of the supervisor: started at start-up, restarted with backoff.

    keeper = WatchKeeper(state_dir, socket_path, logs_dir)
    keeper.start()         # `python -m sentinel.watchers --system` as root; the loop watches keeper.pidfd
    keeper.exited()        # it ended: restart later
    keeper.due()           # seconds until a restart is due (the loop's select timeout), or None

Why a child and not the supervisor's own loop: polls, commands under Leash and deliveries block (an
endpoint that hangs for its whole timeout, a command, a webhook target), and the supervisor's loop is
single-threaded and must keep answering operators and workers. The child holds no state of its own:
relay contracts, deliveries and what each watcher remembers are rows in the supervisor's database, so a
child that dies (or a supervisor killed with -9, which takes the child with it through pdeathsig) loses
nothing, and the next child's relay timer settles every firing past its deadline exactly once. It stays
root (it starts hook sessions through the operator socket and runs watcher commands under the agent's
Leash profile, which needs the launcher's privileges); it runs only the operator's /etc watchers. Being root,
it never runs a watcher command as root (whatever `leash.tools` says: sentinel/watchers/deliver.py), and opens what
a watcher names by path (a file source, an operatorGoalFile, a file target) through no link an agent could have
made, a regular file only, reads capped (sentinel/tools/rootpath.py). It is a KeptChild
(sentinel/leash/kept.py) with the root service profile: a new session and pdeathsig, no layer.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from sentinel.leash import spawn
from sentinel.leash.kept import KeptChild
from sentinel.leash.profile import root_service_profile


class WatchKeeper(KeptChild):
    def __init__(self, state_dir: Path, socket_path: Path, logs: Path):
        super().__init__("watchers", logs, self._launch)
        self.state_dir = state_dir
        self.socket_path = socket_path

    def stop(self, sig: int = signal.SIGTERM) -> None:
        super().stop(sig)

    def _launch(self, stdio: tuple[int, int, int]) -> spawn.Launch:
        argv = [sys.executable, "-I", "-B", "-m", "sentinel.watchers", "--system", "--state-dir", str(self.state_dir)]
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
               "HOME": "/root", "SENTINEL_SOCKET": str(self.socket_path), "SENTINEL_MODE": "system"}
        for name in ("SENTINEL_ETC_DIR", "SENTINEL_OPERATOR_GROUP", "SENTINEL_MUZZLE_URL"):
            if os.environ.get(name):
                env[name] = os.environ[name]
        return spawn.Launch(argv, env, None, None, os.getcwd(), root_service_profile("watchers"), stdio,
                            name="sentinel-watchers")
