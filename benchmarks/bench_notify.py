"""Notification delivery latency: how soon a person's webhook hears that a run paused.

    /opt/sentinel/venv/bin/python benchmarks/bench_notify.py

Measured in one run, against a webhook receiver on loopback (tests/notify/receivers.py's kind):

- local: a run pauses (LocalEngine.start returns) -> the webhook has the POST. The path: `kick` queues the
  event in the store and forks /bin/sh, which starts `python -I -m sentinel.notify` detached; it loads the
  config, claims the row and POSTs. Also: how long `kick` holds the run's process (all the run ever waits for).
- deliverer tick: scan + claim + POST in a process already running (the supervisor's watcher child; it also
  waits up to its 0.25 s poll).
- with a hanging target: the same tick while another target never answers (its timeout is 2 s): sends
  run side by side, so the webhook is not held up by it.
- baselines, measured in the same run: `python -I -c pass`, and one bare POST to the receiver.

Machines here are shared: figures are medians.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "notify"))

from receivers import Webhook  # noqa: E402

REPEATS = 10
BASH = [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi > hi.txt"}}]}, "done"]


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        from sentinel.models.fake_server import ScriptedServer

        home = Path(tmp)
        os.environ["SENTINEL_HOME"] = str(home)
        hook = Webhook()
        hang = socket.socket()  # accepts connections (the backlog) and never answers
        hang.bind(("127.0.0.1", 0))
        hang.listen(64)
        with ScriptedServer(BASH) as server:
            def write(targets: list[dict]) -> None:
                (home / "config.yaml").write_text(yaml.safe_dump({
                    "default_model": "fake/m", "providers": {"fake": {"base_url": server.base_url}},
                    "leash": {"tools": "plain"}, "muzzle": {"enabled": False}, "notify": targets}))

            write([{"type": "webhook", "url": hook.url, "on": ["approval"]}])
            local, kicks = pause_to_post(home, hook)
            print(f"local mode, run paused -> webhook has it: median {ms(local)} (max {max(local) * 1000:.0f} ms); "
                  f"the run's process waits for the kick only: median {ms(kicks)}")
            tick = in_process(home, hook)
            print(f"deliverer tick (scan, claim, POST): median {ms(tick)}")
            write([{"type": "webhook", "url": hook.url, "on": ["approval"]},
                   {"type": "webhook", "name": "hanging", "url": f"http://127.0.0.1:{hang.getsockname()[1]}/",
                    "on": ["approval"], "timeout_s": 2, "attempts": 1}])
            slow = in_process(home, hook, wait_all=False)
            print(f"the same with a target that never answers (2 s timeout): webhook after median {ms(slow)}")
        hook.stop()
        hang.close()
    start = timed(lambda: subprocess.run([sys.executable, "-I", "-c", "pass"], check=True))
    print(f"baselines: python -I -c pass median {ms(start)}; one bare POST median {ms(bare_post())}")


def pause_to_post(home: Path, hook: Webhook) -> tuple[list[float], list[float]]:
    from sentinel.local.engine import LocalEngine
    from sentinel.notify import dispatch

    kicks: list[float] = []
    real_kick = dispatch.kick

    def timed_kick(store, config, where):
        t0 = time.perf_counter()
        real_kick(store, config, where)
        kicks.append(time.perf_counter() - t0)

    dispatch.kick = timed_kick
    out = []
    for _ in range(REPEATS):
        seen = len(hook.received)
        engine = LocalEngine()
        paused = engine.start("bench", workspace=home)
        t0 = time.time()
        engine.close()
        assert paused.status == "waiting_approval"
        hook.wait(seen + 1)
        out.append(hook.received[-1]["t"] - t0)
        time.sleep(0.3)  # let the deliverer exit, so each round starts one
    dispatch.kick = real_kick
    wait_idle(home)
    return out, kicks


def in_process(home: Path, hook: Webhook, wait_all: bool = True) -> list[float]:
    """Pause runs with delivery left to a Dispatcher in this process (as in the supervisor's watcher child)."""
    import threading

    from sentinel import config as config_mod
    from sentinel.engine.store import Store
    from sentinel.local.engine import LocalEngine
    from sentinel.notify import dispatch
    from sentinel.notify.dispatch import Dispatcher

    real_kick, dispatch.kick = dispatch.kick, lambda store, config, where: None
    out = []
    try:
        for _ in range(REPEATS):
            engine = LocalEngine()
            engine.start("bench", workspace=home)
            engine.close()
            seen = len(hook.received)
            with Store.open(home / "state" / "sentinel.db") as store:
                d = Dispatcher(store, config_mod.load(home), log=lambda line: None)
                t0 = time.perf_counter()
                ticking = threading.Thread(target=d.tick)
                ticking.start()
                hook.wait(seen + 1)
                out.append(time.perf_counter() - t0)
                ticking.join()
                d.close()
    finally:
        dispatch.kick = real_kick
    return out


def wait_idle(home: Path) -> None:
    from sentinel import paths

    while (fd := paths.try_lock(home / "state" / "notify.lock")) is None:
        time.sleep(0.05)
    os.close(fd)


def bare_post() -> list[float]:
    from sentinel.watchers.deliver import post_json

    sink = Webhook()
    try:
        return timed(lambda: post_json(sink.url, {"x": 1}))
    finally:
        sink.stop()


def timed(fn) -> list[float]:
    out = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


if __name__ == "__main__":
    main()
