"""Muzzle kept answering for workers: the one on muzzle.host:muzzle.port when it answers, else one the
supervisor starts as Muzzle's own system user and restarts with backoff when it dies.

    keeper = MuzzleKeeper(config, logs_dir)
    keeper.url(wait_s=10)     # "http://127.0.0.1:8787/v1" once Muzzle answers, starting it if need be; or None
    keeper.exited()           # its process ended (the loop watches keeper.child.pidfd): restart later
    keeper.due()              # seconds until a restart is due (the loop's select timeout), or None

A machine without systemd needs only `sentinel supervisor`; with systemd, sentinel-muzzle.service usually
answers first and the keeper just uses it. The child dies with the supervisor (pdeathsig), so a
restarted supervisor starts its own. It is a KeptChild (sentinel/leash/kept.py) with the service
profile: its own cgroup, rlimits, no capabilities and no_new_privs; it is no agent, so it gets no
Landlock domain or seccomp filter (it must reach any upstream).
"""

from __future__ import annotations

import os
import pwd
import select
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from sentinel.errors import SentinelError
from sentinel.leash import spawn
from sentinel.leash.kept import KeptChild

if TYPE_CHECKING:
    from sentinel.config import Config

PROBE_S = 0.5


class MuzzleDown(SentinelError):
    """No Muzzle answers, so no worker can reach a model."""


class MuzzleKeeper:
    def __init__(self, config: "Config", logs: Path):
        self.config = config
        self.logs = logs
        self.base = f"http://{config.muzzle.host}:{config.muzzle.port}"
        self.kept = KeptChild("muzzle", logs, self._launch)

    @property
    def child(self) -> spawn.Spawned | None:
        return self.kept.child

    # -- asking -----------------------------------------------------------------------------------

    def url(self, wait_s: float = 0.0) -> str | None:
        """Muzzle's /v1 URL once it answers (starting ours if none does and none of ours is running)."""
        override = os.environ.get("SENTINEL_MUZZLE_URL")
        if override:
            return override
        if self.answers():
            return f"{self.base}/v1"
        if self.child is None and self.config.system.start_muzzle and self.config.muzzle.enabled:
            self.start()
        deadline = time.monotonic() + wait_s
        while self.child is not None and time.monotonic() < deadline:
            if self.answers():
                return f"{self.base}/v1"
            if select.select([self.child.pidfd], [], [], 0.1)[0]:
                break  # it exited: the supervisor's loop reaps it and schedules the restart
        return None

    def require(self, wait_s: float = 10.0) -> str:
        """The URL, or MuzzleDown with one line saying what to start."""
        url = self.url(wait_s)
        if url is not None:
            return url
        raise MuzzleDown(self.why_down())

    def why_down(self) -> str:
        where = f"{self.base} (muzzle.host, muzzle.port in the operator's config.yaml)"
        if not self.config.muzzle.enabled:
            return ("muzzle.enabled is false in the operator's config.yaml: system mode needs Muzzle, since workers "
                    "never hold model credentials; set it to true")
        if not self.config.system.start_muzzle:
            return f"no Muzzle answers on {where}: start it (systemctl start sentinel-muzzle, or sentinel muzzle " \
                   "serve --system as its user), or set system.start_muzzle: true"
        detail = f" ({self.kept.last_error})" if self.kept.last_error else ""
        return f"no Muzzle answers on {where}; the supervisor's own did not come up{detail}: see " \
               f"{self.logs / 'muzzle.log'}, and run `sentinel muzzle setup-system` once as root"

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/healthz", timeout=PROBE_S) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def describe(self) -> str:
        state = "answering" if self.answers() else "not answering"
        own = f", started by the supervisor (pid {self.child.pid})" if self.child else ""
        return f"{self.base}/v1 {state}{own}"

    # -- its process (a KeptChild) -------------------------------------------------------------------

    def start(self) -> None:
        self.kept.start()

    def exited(self) -> int:
        return self.kept.exited()

    def due(self) -> float | None:
        return self.kept.due()

    def tick(self) -> None:
        """Restart Muzzle if a restart is due and still none answers."""
        kept = self.kept
        if kept.restart_at is not None and time.monotonic() >= kept.restart_at and kept.child is None:
            if self.answers():
                kept.restart_at = None
                kept.failures = 0
            else:
                kept.start()

    def stop(self) -> None:
        self.kept.stop()

    def _launch(self, stdio: tuple[int, int, int]) -> spawn.Launch:
        from sentinel.leash.profile import service_profile
        from sentinel.muzzle.layout import system_layout, system_user

        user = system_user()
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            raise MuzzleDown(f"Muzzle's user {user!r} does not exist: run `sentinel setup` or "
                             "`sentinel muzzle setup-system` once as root") from None
        state = system_layout(self.config).state_dir
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(state), "USER": user}
        for name in ("SENTINEL_ETC_DIR", "SENTINEL_MUZZLE_USER"):
            if os.environ.get(name):
                env[name] = os.environ[name]
        argv = [sys.executable, "-I", "-B", "-m", "sentinel", "muzzle", "serve", "--system"]
        return spawn.Launch(argv, env, pw.pw_uid, pw.pw_gid, "/", service_profile("muzzle"), stdio,
                            name="sentinel-muzzle")
