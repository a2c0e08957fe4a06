"""Web console benchmarks: how soon an open page hears of approvals, what a page and a poll cost.

    /opt/sentinel/venv/bin/python benchmarks/bench_web.py

Measured in one run, in one process (a console served by uvicorn in a thread, local mode, web.poll_s 0.25):

- live: a run pauses (its start() returns) -> the page's stream carries the new card; a decision made outside
  the console (the CLI's engine call returns) -> the stream drops the card. Target: well under one second.
  Baseline: the poll interval itself, since the hub wakes at most that late.
- page: GET the inbox with 50 pending approvals and 500 runs, against the engine calls it makes (`pending()` and
  `runs(limit=500)` in this process), the floor no page can go under.
- poll: one hub poll (the same two calls) as a share of one core at 4 polls a second, while a page is open.

Machines here are shared: figures are medians, and the baselines are measured in the same run.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import yaml

POLL_S = 0.25
REPEATS = 15


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        from sentinel.models.fake_server import ScriptedServer

        home = Path(tmp)
        os.environ["SENTINEL_HOME"] = str(home)
        bash = [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi > hi.txt"}}]}, "done"]
        with ScriptedServer(bash) as server:
            (home / "config.yaml").write_text(yaml.safe_dump({
                "default_model": "fake/m", "providers": {"fake": {"base_url": server.base_url}},
                "leash": {"tools": "plain"}, "muzzle": {"enabled": False}}))
            report(home)


def report(home: Path) -> None:
    from sentinel.local.engine import LocalEngine
    from sentinel.web.app import InThread, engines_for
    from sentinel.web.settings import WebSettings

    seed(home, runs=450, paused=50)
    console = InThread(engines_for(LocalEngine()), WebSettings(poll_s=POLL_S)).start()
    try:
        client = httpx.Client(timeout=30)
        client.get(console.url)
        base = console.url.split("/login")[0]
        page = timed(lambda: client.get(base + "/"), REPEATS)
        floor = timed(lambda: floor_calls(), REPEATS)
        print(f"inbox page, 50 approvals, 500 runs: median {ms(page)} (engine calls alone {ms(floor)})")
        print(f"hub poll: median {ms(floor)}, {statistics.median(floor) / POLL_S * 100:.1f}% of a core at "
              f"{1 / POLL_S:g} polls/s")
        appear, clear = live(client, base, home)
        print(f"new approval -> card on the open page: median {ms(appear)} (max {ms([max(appear)])}); "
              f"decision elsewhere -> card gone: median {ms(clear)} (max {ms([max(clear)])}); "
              f"poll interval {POLL_S * 1000:.0f} ms")
        client.close()
    finally:
        console.stop()


def seed(home: Path, runs: int, paused: int) -> None:
    from sentinel.engine.store import Store

    store = Store.open(home / "state" / "sentinel.db")
    for i in range(runs + paused):
        run_id = f"r-seed{i:05d}"
        store.create_run(run_id, agent="bench", task=f"task {i}", model="fake/m", workspace=home, run_dir=home / run_id)
        store.set_status(run_id, "done" if i < runs else "waiting_approval")
        if i >= runs:
            store.submit_approval(run_id, "call_0", "bash", {"command": f"echo {i}"}, "bench")
    store.close()


def floor_calls() -> None:
    from sentinel.local.engine import LocalEngine

    engine = LocalEngine()
    engine.pending()
    engine.runs(limit=500)
    engine.close()


def live(client: httpx.Client, base: str, home: Path) -> tuple[list[float], list[float]]:
    """Each round: pause a run, time until its card arrives; deny it from outside, time until it is gone."""
    from sentinel.local.engine import LocalEngine

    appear, clear = [], []
    with client.stream("GET", base + "/stream") as stream:
        frames = _Frames(stream)
        frames.wait(lambda k, d: k == "pending")
        for _ in range(REPEATS):
            engine = LocalEngine()
            paused = engine.start("bench", workspace=home)
            assert paused.status == "waiting_approval", paused
            t0 = time.perf_counter()
            frames.wait(lambda k, d: k == "approval" and d["id"] == paused.approval_id)
            appear.append(time.perf_counter() - t0)
            decided = threading.Event()
            threading.Thread(target=deny, args=(engine, paused.approval_id, decided)).start()
            decided.wait()
            t0 = time.perf_counter()
            frames.wait(lambda k, d: k == "pending" and paused.approval_id not in d["ids"])
            clear.append(time.perf_counter() - t0)
    return appear, clear


def deny(engine, approval_id: str, decided: threading.Event) -> None:
    """Deny as the CLI would; `decided` is set once the store has the decision (the run then goes on)."""
    engine.deny(approval_id, on_event=lambda event: decided.set())
    decided.set()
    engine.close()


class _Frames:
    def __init__(self, response: httpx.Response):
        self.lines = response.iter_lines()

    def wait(self, done) -> None:
        kind = None
        for line in self.lines:
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and done(kind, json.loads(line[6:])):
                return


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f} ms"


if __name__ == "__main__":
    sys.exit(main())
