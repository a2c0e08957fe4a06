"""Compaction and the scribe on a scripted 60-turn run: their own cost, and what compaction saves.

    python benchmarks/bench_compaction.py [--runs 3] [--threshold 12000] [--local]

One run = the 60-turn scripted run of tests/worker/test_compaction.py (a plan, 53 file writes of ~400
characters, an error and its fix), executed in-process by the local engine against the scripted
OpenAI-compatible server over real HTTP. In the same process, as baseline, the same run with
compaction off (a threshold it never reaches). Reported:

- compaction's own cost per compaction, excluding the summary model call (choosing the span, the
  checkpoint, the journal record, the snapshot), and the summary call itself against the scripted server;
- characters of conversation before and after each compaction (what the next model calls no longer carry);
- the deterministic scribe: per model call (read the new journal lines, render, write when changed) and a
  full rebuild of session-live.md from the whole journal (what a resumed process does once);
- with --local: the same session file written by a model call instead (SCRIBE_PROMPT below, the
  session file and the journal tail, on the bundled local model), for comparison.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

SCRIBE_PROMPT = """You are the Context Sentinel Scribe. Update the session state file below from the tail of the
session transcript: newly completed tasks (Plan statuses), new decisions, a new checkpoint with completed items and
files modified, the Current State section, new errors and fixes. Keep it under 200 lines, never delete the Plan,
append checkpoints, be concise. Reply with the whole updated file only."""


def script() -> list:
    plan = ["write parts 1-20", "write parts 21-40", "write parts 41-57"]

    def update(done: int) -> dict:
        steps = [{"task": t, "status": "done" if i < done else "pending"} for i, t in enumerate(plan)]
        return {"tool_calls": [{"name": "update_plan", "arguments": {"plan": steps, "explanation": "one file a part"}}]}

    turns: list = [update(0)]
    for i in range(1, 58):
        if i in (5, 6):
            path = "missing.txt" if i == 5 else "part1.txt"
            turns.append({"tool_calls": [{"name": "read_file", "arguments": {"path": path}}]})
        elif i in (21, 41):
            turns.append(update(1 if i == 21 else 2))
        else:
            turns.append({"content": f"Writing part {i}.", "tool_calls": [
                {"name": "write_file", "arguments": {"path": f"part{i}.txt", "content": f"{i}:" + "x" * 400}}]})
    return [*turns, update(3), "All parts written.", {"match": "context compactor", "content": "- Wrote parts."}]


class Timer:
    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}

    def wrap(self, owner: object, name: str, key: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.samples.setdefault(key, []).append((time.perf_counter() - began) * 1000)

        setattr(owner, name, timed)

    def total(self, key: str) -> float:
        return sum(self.samples.get(key, []))


def one_run(threshold: int, timer: Timer | None) -> tuple[float, dict, Path]:
    from sentinel.local.engine import LocalEngine
    from sentinel.models.fake_server import ScriptedServer

    home = Path(tempfile.mkdtemp(prefix="bench-compaction-"))
    import os

    os.environ["SENTINEL_HOME"] = str(home)
    os.environ["FAKE_KEY"] = "k"
    with ScriptedServer(script()) as server:
        config = {"leash": {"tools": "plain"}, "default_model": "fake/m", "limits": {"max_steps": 100},
                  "providers": {"fake": {"base_url": server.base_url, "api_key_env": "FAKE_KEY"}},
                  "context": {"compact_at_chars": threshold, "keep_recent_turns": 4, "curate_every_checkpoints": 0}}
        (home / "config.yaml").write_text(yaml.safe_dump(config))
        engine = LocalEngine(home)
        try:
            began = time.perf_counter()
            outcome = engine.start("Write the 57 parts.")
            wall = (time.perf_counter() - began) * 1000
            shown = engine.show(outcome.id)
        finally:
            engine.close()
    assert shown["status"] == "done", shown["error"]
    return wall, shown, home / "runs" / outcome.id


def instrument() -> Timer:
    from sentinel.worker import compact as keeper_mod

    timer = Timer()
    keeper = keeper_mod.ContextKeeper
    timer.wrap(keeper, "compact", "compact")
    timer.wrap(keeper, "scribe", "scribe")
    timer.wrap(keeper, "_catch_up", "catch_up")
    timer.wrap(keeper, "before_call", "before_call")
    from sentinel.models.openai_compat import OpenAICompatClient

    original = OpenAICompatClient.complete

    def complete(self, messages, tools, **kw):
        began = time.perf_counter()
        try:
            return original(self, messages, tools, **kw)
        finally:
            if "context compactor" in (messages[0].get("content") or ""):
                timer.samples.setdefault("summary_call", []).append((time.perf_counter() - began) * 1000)

    OpenAICompatClient.complete = complete  # type: ignore[method-assign]
    return timer


def rebuild_ms(run_dir: Path, repeat: int = 20) -> float:
    from sentinel.engine import journal
    from sentinel.memory.session import SessionLog

    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        log = SessionLog()
        for record in journal.read(run_dir / "journal.jsonl")[0]:
            log.feed(record)
        log.render()
        samples.append((time.perf_counter() - began) * 1000)
    return statistics.median(samples)


def model_scribe(run_dir: Path) -> tuple[float, str]:
    """One scribe update by the bundled local model: the scribe prompt, the session file, the journal tail."""
    from sentinel.config import Config
    from sentinel.models import resolve

    tail = (run_dir / "journal.jsonl").read_text().splitlines()[-40:]
    prompt = [{"role": "system", "content": SCRIBE_PROMPT},
              {"role": "user", "content": f"session-live.md:\n\n{(run_dir / 'session-live.md').read_text()}\n\n"
                                          f"Transcript tail:\n\n" + "\n".join(line[:300] for line in tail)}]
    from sentinel.models.hosts import stop_all

    model = resolve("local/qwen2.5-coder-1.5b", Config())
    try:
        began = time.perf_counter()
        reply = model.complete(prompt, [])
        return (time.perf_counter() - began) * 1000, reply.content
    finally:
        stop_all(run_dir.parent.parent / "state")  # the model host would otherwise wait out its idle time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threshold", type=int, default=12000)
    parser.add_argument("--local", action="store_true", help="also time a scribe update by the local model")
    args = parser.parse_args()
    timer = instrument()
    walls, base_walls, saved, counts, per_call = [], [], [], [], []
    run_dir = None
    for _ in range(args.runs):
        base_wall, _, _ = one_run(10**9, None)
        base_walls.append(base_wall)
        before = {k: len(v) for k, v in timer.samples.items()}
        wall, shown, run_dir = one_run(args.threshold, timer)
        walls.append(wall)
        counts.append(len(shown["compactions"]))
        saved += [c["chars_before"] - c["chars_after"] for c in shown["compactions"]]
        per_call.append(len(timer.samples["before_call"]) - before.get("before_call", 0))
    n = sum(counts)
    compact_ms = timer.total("compact") - timer.total("summary_call")
    scribe_ms = timer.total("before_call") - timer.total("compact")
    calls = sum(per_call)
    print(f"runs: {args.runs} x 60 model turns, threshold {args.threshold} chars, keep_recent_turns 4 "
          "(machine shared with other work: figures are indicative)")
    print(f"run wall time: {statistics.median(walls):.0f} ms with compaction, "
          f"{statistics.median(base_walls):.0f} ms without (baseline, same process)")
    print(f"compactions per run: {counts}; chars saved per compaction: median {statistics.median(saved):.0f}, "
          f"min {min(saved)}, max {max(saved)}")
    print(f"compaction's own cost (span, checkpoint, scribe, journal, snapshot; no model call): "
          f"{compact_ms / n:.2f} ms per compaction")
    print(f"summary call to the scripted server: {timer.total('summary_call') / n:.2f} ms per compaction")
    print(f"deterministic scribe + checkpoints, per model call: {scribe_ms / calls:.3f} ms "
          f"({calls} calls); full rebuild from the journal: {rebuild_ms(run_dir):.2f} ms")
    if args.local:
        ms, text = model_scribe(run_dir)
        print(f"scribe by a model call (local/qwen2.5-coder-1.5b, one update): {ms:.0f} ms, "
              f"{len(text.splitlines())} lines back")


if __name__ == "__main__":
    main()
