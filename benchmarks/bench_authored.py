"""The latency an agent-authored tool adds over a built-in doing the same work (a word count), p50.

    python benchmarks/bench_authored.py [--rounds N] [--gap-ms MS]

All go through the run's registry. The authored call is the whole path of a trusted call: read and
hash tool.yaml and tool.py (the pin), hand the code and arguments to a confined `python -I -S` under
the Leash tool profile with the tool's limits, parse the framed result. By default that interpreter
is the spare started after the previous call (sentinel/agents/spares.py); the cold variant
(`spare_idle_s: 0`) launches a fresh one per call. The built-in counts in process. Calls are
spaced (a pause after each, as model calls space tool calls) and the variants interleaved in
shuffled order, so background work (such as a spare starting) is charged to nobody. Also shown, to
say where the time goes: Leash launching `true`, and Leash launching `python -I -S -c pass`.
Target: added p50 <= 15 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PARAMS = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
WORDS = 'def run(args):\n    return str(len(args["text"].split()))\n'
TEXT = "the quick brown fox jumps over the lazy dog " * 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--gap-ms", type=float, default=50.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sentinel-bench-authored-"))
    os.environ["SENTINEL_HOME"] = str(root / "home")
    try:
        samples = measure(root, args.rounds, args.gap_ms / 1000)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = statistics.median(samples["built-in"])
    print(f"{'variant':<28} {'p50 ms':>8} {'p90 ms':>8} {'added p50 ms':>13}")
    for name, values in samples.items():
        ordered = sorted(values)
        p50, p90 = statistics.median(ordered), ordered[int(len(ordered) * 0.9)]
        print(f"{name:<28} {p50:>8.2f} {p90:>8.2f} {p50 - base:>13.2f}")


def measure(root: Path, rounds: int, gap_s: float) -> dict[str, list[float]]:
    from sentinel.agents.authored import AuthoredTools, Manifest, write
    from sentinel.agents.settings import AuthoredToolSettings
    from sentinel.leash.launch import ensure_launcher, run_tool
    from sentinel.tools import Registry, Tool, ToolContext

    home, ws = root / "home", root / "ws"
    home.mkdir()
    ws.mkdir()
    write(home, Manifest(name="word_count", description="authored word count", parameters=PARAMS), WORDS)
    registry, cold = (Registry([Tool("count_words", "built-in word count", PARAMS,
                                     lambda a, ctx: str(len(a["text"].split())))]) for _ in range(2))
    AuthoredTools(home, registry, AuthoredToolSettings()).register_all()
    AuthoredTools(home, cold, AuthoredToolSettings(spare_idle_s=0)).register_all()
    ctx = ToolContext(workspace=ws, tools_mode="sandboxed", agent="")
    ensure_launcher()
    time.sleep(1.0)  # the launcher readies its keepers

    def authored(reg: Registry) -> None:
        pinned = reg.get("word_count").pin()
        assert reg.run("word_count", {"text": TEXT}, ctx, pinned) == "180"

    def python() -> None:
        run_tool([sys.executable, "-I", "-S", "-c", "pass"], cwd=ws, workspace=ws, timeout_s=10)

    variants = {"built-in": lambda: registry.run("count_words", {"text": TEXT}, ctx),
                "authored (spare)": lambda: authored(registry), "authored (cold launch)": lambda: authored(cold),
                "leash: python -I -S -c pass": python,
                "leash: true": lambda: run_tool(["true"], cwd=ws, workspace=ws, timeout_s=10)}
    for fn in variants.values():
        fn()  # warm up
    samples: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    for _ in range(rounds):
        random.shuffle(order)
        for name in order:
            began = time.perf_counter()
            variants[name]()
            samples[name].append((time.perf_counter() - began) * 1000)
            time.sleep(gap_s)
    return samples


if __name__ == "__main__":
    main()
