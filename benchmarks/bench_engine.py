"""Run-engine benchmarks: per-step overhead, resume time, listing 10,000 runs.

    /opt/sentinel/venv/bin/python benchmarks/bench_engine.py

Figures are compared, in the same run, against baselines that do the same model
and tool work without the engine (per step) and against a bare interpreter start
(listing), because machines here are noisy.
Targets: per-step overhead < 5 ms and flat as runs grow; resume of 1,000 steps
< 300 ms; `sentinel runs --json` with 10,000 runs < 500 ms.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def setup_home(root: Path, steps: int) -> Path:
    home = root / f"home-{steps}"
    home.mkdir()
    script = home / "script.yaml"
    workspace = home / "workspace"
    workspace.mkdir()
    for i in range(steps):  # a different call each step: the same call again would be deduplicated, then a loop
        (workspace / f"f{i}.txt").write_text(f"file {i}\n")
    calls = [{"tool_calls": [{"name": "read_file", "arguments": {"path": f"f{i}.txt"}}]} for i in range(steps)]
    script.write_text(yaml.safe_dump([*calls, "done"]))
    (home / "config.yaml").write_text(yaml.safe_dump({
        "default_model": f"scripted/{script}", "limits": {"max_steps": steps + 5},
        "leash": {"tools": "plain"}, "muzzle": {"enabled": False}}))
    return home


def engine_run(home: Path) -> tuple[float, str]:
    os.environ["SENTINEL_HOME"] = str(home)
    from sentinel.local.engine import LocalEngine

    engine = LocalEngine(home)
    began = time.perf_counter()
    outcome = engine.start("benchmark")
    elapsed = time.perf_counter() - began
    engine.close()
    assert outcome.status in ("done", "done_unverified"), outcome  # an answer only: nothing to check
    return elapsed, outcome.id


def baseline(home: Path, steps: int) -> float:
    """The same model replies and tool calls, without journal, snapshot, policy or registry writes."""
    from sentinel.config import load
    from sentinel.models import resolve
    from sentinel.tools import ToolContext, parse_arguments
    from sentinel.tools.builtin import default_registry

    cfg = load(home)  # LocalEngine(home) loads it before its run is timed
    began = time.perf_counter()
    model = resolve(cfg.default_model, cfg)  # the scripted model reads its script (every reply, YAML) here, as the
    reg = default_registry()                  # engine's run does inside its timing: the same work on both sides
    ctx = ToolContext(workspace=home / "workspace", tools_mode="plain")
    messages: list[dict] = [{"role": "user", "content": "x"}]
    for _ in range(steps + 1):
        c = model.complete(messages, reg.schemas())
        messages.append(c.to_message())
        for call in c.tool_calls:
            out = reg.run(call.name, parse_arguments(call.arguments, reg.get(call.name)), ctx)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": out})
    return time.perf_counter() - began


def per_step(root: Path) -> None:
    print("per-step engine overhead (journal + snapshot + policy + registry), zero-latency scripted model")
    print(f"{'steps':>6} {'engine ms/step':>15} {'baseline ms/step':>17} {'overhead ms/step':>17} {'ratio':>7}")
    for steps in (10, 100, 1000):
        home = setup_home(root, steps)
        elapsed, _ = engine_run(home)
        base = baseline(home, steps)
        e, b = elapsed * 1000 / steps, base * 1000 / steps
        print(f"{steps:>6} {e:>15.2f} {b:>17.2f} {e - b:>17.2f} {e / b:>6.1f}x")


def resume(root: Path) -> None:
    from sentinel.engine.run import Run
    from sentinel.engine.state import SNAPSHOT

    home = root / "home-1000"
    run_dir = next((home / "runs").iterdir())
    samples_snap, samples_journal = [], []
    for _ in range(5):
        t = time.perf_counter()
        run = Run.open(run_dir)
        samples_snap.append(time.perf_counter() - t)
        run.close()
        (run_dir / SNAPSHOT).unlink()
        t = time.perf_counter()
        run = Run.open(run_dir)
        samples_journal.append(time.perf_counter() - t)
        run.close()
    n = len(Run.open(run_dir).state.messages)
    print(f"\nresume of a 1,000-step run ({n} messages): "
          f"{statistics.median(samples_snap) * 1000:.1f} ms from the snapshot, "
          f"{statistics.median(samples_journal) * 1000:.1f} ms replaying the whole journal (target < 300 ms)")


def listing(root: Path) -> None:
    from sentinel.engine.store import Store

    home = root / "home-list"
    (home / "state").mkdir(parents=True)
    (home / "config.yaml").write_text("leash: {tools: plain}\n")
    store = Store.open(home / "state" / "sentinel.db")
    store.conn.execute("BEGIN")
    now = time.time()
    for i in range(10_000):
        store.conn.execute(
            "INSERT INTO runs (id, agent, task, model, status, workspace, run_dir, created_at, updated_at)"
            " VALUES (?, 'a', ?, 'local/x', 'done', '/w', ?, ?, ?)", (f"r-{i:06d}", f"task {i}", f"/r/{i}", now - i, now))
    store.conn.execute("COMMIT")
    store.close()
    env = {**os.environ, "SENTINEL_HOME": str(home)}

    def timed(argv: list[str]) -> float:
        samples = []
        for _ in range(5):
            t = time.perf_counter()
            proc = subprocess.run(argv, env=env, capture_output=True)
            samples.append(time.perf_counter() - t)
            assert proc.returncode == 0, proc.stderr
        return statistics.median(samples)

    runs = timed([sys.executable, "-m", "sentinel", "runs", "--json"])
    bare = timed([sys.executable, "-c", "pass"])
    print(f"\n`sentinel runs --json` with 10,000 runs: {runs * 1000:.0f} ms "
          f"(bare interpreter start {bare * 1000:.0f} ms, ratio {runs / bare:.1f}x; target < 500 ms)")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        per_step(root)
        resume(root)
        listing(root)


if __name__ == "__main__":
    main()
