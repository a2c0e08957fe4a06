"""`python -m sentinel.watchers --system --state-dir DIR`: the supervisor's watcher child (watchkeep.py).

Runs the operator's watchers (/etc/sentinel/watchers) and the relay's timers on the supervisor's
database, starting hook sessions through the operator socket ($SENTINEL_SOCKET). Bad watcher files
are logged one line each and skipped; SIGTERM stops it. With `notify:` in the operator's config, a thread
here is the supervisor's notification deliverer (sentinel/notify: the supervisor's own loop never blocks).
"""

from __future__ import annotations

import argparse
import os
import pwd
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.watchers.strategies import RunCommand


def _run_command(config: Config) -> RunCommand:
    """Watcher commands run as the operator's default agent, under its Leash tool profile, never as root."""
    from sentinel.supervisor import layout
    from sentinel.watchers.deliver import command_runner

    agent = config.default_agent
    if not agent:
        def refuse(argv: list[str], timeout_s: float, stdin: bytes | None) -> tuple[int | None, str]:
            return None, "system mode runs watcher commands as an agent: set default_agent in the operator's config"
        return refuse
    from sentinel.errors import UsageError
    from sentinel.mcp.launch import make_workdir
    from sentinel.watchers import spec

    try:
        workspace = layout.agent_sentinel_home(pwd.getpwnam(agent).pw_dir) / "workspace"
    except KeyError:
        missing = f"default_agent {agent!r} has no Linux user here (sentinel setup makes it): no command runs"
        return lambda argv, timeout_s, stdin: (None, missing)
    try:
        own = make_workdir(spec.system_dir())
    except UsageError as exc:
        failed = f"the watchers' directory {exc}"
        return lambda argv, timeout_s, stdin: (None, failed)
    # from root's directory, not the agent's; the workspace is the agent's to make, never root's
    return command_runner(config, agent, workspace, own, make_workspace=False)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m sentinel.watchers")
    parser.add_argument("--system", action="store_true", required=True)
    parser.add_argument("--state-dir", required=True)
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("the watcher child runs as root, started by the supervisor", file=sys.stderr)
        return 2
    from sentinel import config as config_mod
    from sentinel.engine.store import Store
    from sentinel.supervisor import layout
    from sentinel.client.system import connect
    from sentinel.watchers import spec
    from sentinel.watchers.runner import Runner

    stopping = []
    signal.signal(signal.SIGTERM, lambda *a: stopping.append(1))
    config = config_mod.load(layout.etc_dir())
    target = config.store or layout.db_path(Path(args.state_dir))  # the supervisor's store, shared or its own
    store = Store.open(target, host=config.system.host)
    good, bad = spec.load_all(system=True)
    for exc in bad:
        print(f"watchers: error: {exc} (skipped)", file=sys.stderr, flush=True)
    engine = connect()
    if engine is None:  # SENTINEL_MODE=local, or no supervisor socket: nothing could start a hook session
        print("watchers: error: the supervisor's socket does not answer", file=sys.stderr, flush=True)
        return 2
    runner = Runner(engine, store, config, good, _run_command(config))
    print(f"watchers: running {', '.join(w.id for w in good) or 'no watchers'} (pid {os.getpid()})",
          file=sys.stderr, flush=True)
    if config.notify:
        _deliver_notifications(target, config, lambda: bool(stopping))
    runner.run(stop=lambda: bool(stopping))
    return 0


def _deliver_notifications(db: Path | str, config: Config, stop: Callable[[], bool]) -> None:
    import threading

    from sentinel.engine.store import Store
    from sentinel.notify.dispatch import Dispatcher

    def deliver() -> None:
        with Store.open(db) as store:
            Dispatcher(store, config).run(stop)

    threading.Thread(target=deliver, name="notify", daemon=True).start()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
