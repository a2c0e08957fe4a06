"""The watcher runner as a child of the supervisor: started at start-up, restarted with backoff.

    keeper = WatchKeeper(state_dir, socket_path, logs_dir)
    keeper.start()         # fork + execve `python -m sentinel.watchers --system` as root; the loop watches its pidfd
    keeper.exited()        # it ended: restart later
    keeper.due()           # seconds until a restart is due (the loop's select timeout), or None

Why a child and not the supervisor's own loop: polls, commands under Leash and deliveries block (an
endpoint that hangs for its whole timeout, a command, a webhook target), and the supervisor's loop is
single-threaded and must keep answering operators and workers. The child holds no state of its own:
relay contracts, deliveries and what each watcher remembers are rows in the supervisor's database, so a
child that dies (or a supervisor killed with -9, which takes the child with it through pdeathsig) loses
nothing, and the next child's relay timer settles every firing past its deadline exactly once. It stays
root (it starts hook sessions through the operator socket and runs watcher commands under the agent's
Leash profile, which needs the launcher's privileges); it runs only the operator's /etc watchers.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from sentinel.leash import privs

BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


class WatchKeeper:
    def __init__(self, state_dir: Path, socket_path: Path, logs: Path):
        self.state_dir = state_dir
        self.socket_path = socket_path
        self.logs = logs
        self.pid: int | None = None
        self.pidfd: int | None = None
        self.failures = 0
        self.restart_at: float | None = None

    def start(self) -> None:
        self.restart_at = None
        self.logs.mkdir(mode=0o700, exist_ok=True)
        log = os.open(self.logs / "watchers.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                      0o600)
        argv = [sys.executable, "-I", "-B", "-m", "sentinel.watchers", "--system", "--state-dir", str(self.state_dir)]
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
               "HOME": "/root", "SENTINEL_SOCKET": str(self.socket_path), "SENTINEL_MODE": "system"}
        for name in ("SENTINEL_ETC_DIR", "SENTINEL_OPERATOR_GROUP", "SENTINEL_MUZZLE_URL"):
            if os.environ.get(name):
                env[name] = os.environ[name]
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            _exec_child(argv, env, log, parent)
        os.close(log)
        self.pid, self.pidfd = pid, os.pidfd_open(pid)

    def exited(self) -> int:
        assert self.pid is not None and self.pidfd is not None
        _, status = os.waitpid(self.pid, 0)
        os.close(self.pidfd)
        self.pid = self.pidfd = None
        self.restart_at = time.monotonic() + BACKOFF_S[min(self.failures, len(BACKOFF_S) - 1)]
        self.failures += 1
        return os.waitstatus_to_exitcode(status)

    def due(self) -> float | None:
        return None if self.restart_at is None else max(0.0, self.restart_at - time.monotonic())

    def stop(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            self.exited()
            self.restart_at = None


def _exec_child(argv: list[str], env: dict[str, str], log: int, parent: int) -> None:
    """In the forked child (single-threaded supervisor): die with the supervisor, then exec."""
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.closerange(3, 1 << 16)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        privs.set_pdeathsig(signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)
        os.execve(argv[0], argv, env)
    finally:
        os._exit(127)
