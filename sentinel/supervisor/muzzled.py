"""Muzzle kept answering for workers: the one on muzzle.host:muzzle.port when it answers, else one the
supervisor starts as Muzzle's own system user and restarts with backoff when it dies.

    keeper = MuzzleKeeper(config, logs_dir)
    keeper.url(wait_s=10)     # "http://127.0.0.1:8787/v1" once Muzzle answers, starting it if need be; or None
    keeper.exited()           # its process ended (the loop watches keeper.child.pidfd): restart later
    keeper.due()              # seconds until a restart is due (the loop's select timeout), or None

A machine without systemd needs only `sentinel supervisor`; with systemd, sentinel-muzzle.service usually
answers first and the keeper just uses it. The child dies with the supervisor (pdeathsig), so a
restarted supervisor starts its own. The child runs with no capabilities and no_new_privs; it is no
agent, so it gets no Landlock domain or seccomp filter (it must reach any upstream).
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
from sentinel.supervisor import spawn

if TYPE_CHECKING:
    from sentinel.config import Config

BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
PROBE_S = 0.5


class MuzzleDown(SentinelError):
    """No Muzzle answers, so no worker can reach a model."""


class MuzzleKeeper:
    def __init__(self, config: "Config", logs: Path):
        self.config = config
        self.logs = logs
        self.base = f"http://{config.muzzle.host}:{config.muzzle.port}"
        self.child: spawn.Spawned | None = None
        self.failures = 0
        self.restart_at: float | None = None
        self.last_error: str | None = None

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
        detail = f" ({self.last_error})" if self.last_error else ""
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

    # -- its process --------------------------------------------------------------------------------

    def start(self) -> None:
        self.restart_at = None
        self.logs.mkdir(mode=0o700, exist_ok=True)
        log = os.open(self.logs / "muzzle.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                      0o600)
        null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self.child = spawn.spawn(self._launch((null, log, log)))
            self.last_error = None
        except (OSError, SentinelError) as exc:
            self.last_error = str(exc)
            self._backoff()
        finally:
            os.close(log)
            os.close(null)

    def exited(self) -> int:
        assert self.child is not None
        code = self.child.reap()
        self.child = None
        self.last_error = f"it exited with code {code}"
        self._backoff()
        return code

    def due(self) -> float | None:
        return None if self.restart_at is None else max(0.0, self.restart_at - time.monotonic())

    def tick(self) -> None:
        """Restart Muzzle if a restart is due and still none answers."""
        if self.restart_at is not None and time.monotonic() >= self.restart_at and self.child is None:
            if self.answers():
                self.restart_at = None
                self.failures = 0
            else:
                self.start()

    def stop(self) -> None:
        if self.child is not None:
            self.child.kill()
            self.child.reap()
            self.child = None

    def _backoff(self) -> None:
        self.restart_at = time.monotonic() + BACKOFF_S[min(self.failures, len(BACKOFF_S) - 1)]
        self.failures += 1

    def _launch(self, stdio: tuple[int, int, int]) -> spawn.Launch:
        from sentinel.leash.profile import Profile
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
        profile = Profile("muzzle", [], [], rlimits={"RLIMIT_CORE": 0})
        return spawn.Launch(argv, env, pw.pw_uid, pw.pw_gid, "/", profile, stdio, name="sentinel-muzzle",
                            confine=False)
