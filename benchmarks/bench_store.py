"""The store on each backend: SQLite (one host's file) and PostgreSQL (many hosts, one database).

    /opt/sentinel/venv/bin/python benchmarks/bench_store.py          # as root: starts a throwaway PostgreSQL
    SENTINEL_BENCH_PG=postgresql://... python benchmarks/bench_store.py   # or use that (empty) database

Two figures per backend, each the median of several samples:

    runs --json over 10,000 runs   what the supervisor does for `sentinel runs --json --all-hosts`: read every
                                   run (Store.list_runs) and encode the listing as JSON
    approval round trip            decision to tool start: host A resolves an approval; host B (another process
                                   with its own connection) hears it (PostgreSQL: LISTEN/NOTIFY, waited on with
                                   select as the supervisor does; SQLite, one host: the resolver's own process)
                                   and consumes it with the conditional UPDATE that precedes running the tool.
                                   Spawning the worker is not included (bench_engine.py measures that).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import select
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sentinel.engine import db
from sentinel.engine.store import Store, call_digest

RUNS = 10_000
LIST_SAMPLES = 7
ROUND_TRIPS = 50
ARGS = {"command": "make"}


def fill(store: Store) -> None:
    with db.transaction(store.conn):
        for i in range(RUNS):
            store.create_run(f"r-{store.host}-{i:010d}", agent="bench", task=f"task {i}", model="fake/m",
                             workspace="/tmp", run_dir=Path("/tmp") / str(i))


def list_json(store: Store) -> float:
    samples = []
    for _ in range(LIST_SAMPLES):
        began = time.perf_counter()
        rows = store.list_runs(all_hosts=True)
        json.dumps([row.to_dict() for row in rows])
        samples.append(time.perf_counter() - began)
        assert len(rows) == RUNS
    return statistics.median(samples)


def _owner(target: str, ready: Any, ids: Any, done: Any) -> None:
    """Host B: wait for each decision, consume it, report when."""
    store = Store.open(target, host="hostb")
    listener = db.listen(store.conn) if store.shared else None
    ready.set()
    while True:
        approval_id = ids.get()
        if approval_id is None:
            break
        while True:
            if listener is not None:
                select.select([listener], [], [], 5.0)
                listener.drain()
            if store.consume(approval_id, call_digest("bash", ARGS)):
                done.put(time.perf_counter())
                break
            if listener is None:
                time.sleep(0.0005)


def round_trip(target: str) -> float:
    store = Store.open(target, host="hosta")
    ctx = multiprocessing.get_context("fork")
    ready, ids, done = ctx.Event(), ctx.Queue(), ctx.Queue()
    owner = ctx.Process(target=_owner, args=(target, ready, ids, done))
    owner.start()
    ready.wait(30)
    samples = []
    for i in range(ROUND_TRIPS):
        approval = store.submit_approval(f"r-hostb-{i}", f"call_{i}", "bash", ARGS, "bench")
        ids.put(approval.id)
        time.sleep(0.02)  # b is waiting for the decision, as a paused run's owner is
        began = time.perf_counter()
        store.resolve(approval.id, True, "bench")
        samples.append(done.get(timeout=30) - began)
    ids.put(None)
    owner.join(30)
    store.close()
    return statistics.median(samples)


def measure(name: str, target: str) -> dict[str, float]:
    with Store.open(target, host="hosta") as store:
        fill(store)
        listing = list_json(store)
    trip = round_trip(target)
    print(f"{name:<11} runs --json over {RUNS:,} runs: {listing * 1000:8.1f} ms   "
          f"approval round trip (decision to tool start): {trip * 1000:6.2f} ms", flush=True)
    return {"list_ms": listing * 1000, "round_trip_ms": trip * 1000}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        measure("sqlite", str(Path(tmp) / "bench.db"))
    url = os.environ.get("SENTINEL_BENCH_PG")
    server = None
    if not url:
        if os.geteuid() != 0:
            print("postgresql: skipped (run as root to start a throwaway server, or set SENTINEL_BENCH_PG)")
            return 0
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from pgserver import Server, _bin_dir  # the server the tests start

        bin_dir = _bin_dir()
        if bin_dir is None:
            print("postgresql: skipped (Debian's postgresql package is not installed)")
            return 0
        server = Server(bin_dir).start()
        url = server.create_database()
    try:
        measure("postgresql", url)
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
