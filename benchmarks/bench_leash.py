"""Wall time to run `true`: plain subprocess vs the Leash tool profile (via the launcher) vs bwrap.

    python benchmarks/bench_leash.py [--rounds N] [--gap-ms MS] [--burst N]

Two measurements, each comparing the three side by side in one run:

  spaced   one launch of each per round, in shuffled order, with a pause after every launch
           (--gap-ms, default 50): tool calls are spaced by model calls, and the pause lets each
           variant's background work (Leash readies its next spare keeper after a launch) finish
           before anything else is timed, so none of it is charged to a neighbour.
  burst    blocks of --burst launches in a row per variant (blocks interleaved in shuffled order,
           paused between): back-to-back launches, each variant paying for its own background work.

Prints medians, p90s, the ratio to bwrap, the time added over a plain subprocess, and where a
Leash launch spends its time. Targets: < 1.0x bwrap, < 10 ms added.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def bwrap_argv(ws: Path) -> list[str]:
    """bwrap with restrictions comparable to the tool profile: read-only system, rw workspace, no net."""
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin", "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64", "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
            "--ro-bind", "/etc/passwd", "/etc/passwd", "--ro-bind", "/etc/group", "/etc/group",
            "--tmpfs", "/tmp", "--bind", str(ws), str(ws), "--dev", "/dev", "--proc", "/proc", "--chdir", str(ws)]
    if os.geteuid() == 0:
        argv += ["--cap-drop", "ALL"]
    return argv + ["true"]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.9)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="Launches of each variant per measurement.")
    parser.add_argument("--gap-ms", type=float, default=50.0, help="Pause after each launch when spaced.")
    parser.add_argument("--burst", type=int, default=20, help="Launches per block when back-to-back (0: skip).")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="bench-leash-home-"))
    ws = Path(tempfile.mkdtemp(prefix="bench-leash-ws-"))
    os.environ["SENTINEL_HOME"] = str(home)
    from sentinel.leash import launch

    launch.ensure_launcher()
    has_bwrap = shutil.which("bwrap") is not None
    variants = {
        "plain subprocess": lambda: subprocess.run(["true"], cwd=ws, check=True),
        "leash tool profile": lambda: _leash(launch, ws),
    }
    if has_bwrap:
        variants["bwrap"] = lambda: subprocess.run(bwrap_argv(ws), check=True)
    for fn in variants.values():  # warm up: page cache, launcher, ruleset cache
        for _ in range(5):
            fn()
    launch.TRACE.append({})
    spaced = measure(variants, args.rounds, 1, args.gap_ms / 1000)
    report(f"spaced: {args.rounds} rounds, {args.gap_ms:g} ms pause after each launch", spaced, launch.TRACE[1:],
           has_bwrap)
    if args.burst:
        del launch.TRACE[1:]
        blocks = max(1, args.rounds // args.burst)
        burst = measure(variants, blocks, args.burst, 0.2)
        report(f"burst: {blocks} blocks of {args.burst} back-to-back launches per variant", burst, [], has_bwrap)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(ws, ignore_errors=True)


def measure(variants: dict, blocks: int, per_block: int, pause_s: float) -> dict[str, list[float]]:
    """Blocks of `per_block` launches per variant, blocks in shuffled order, `pause_s` after each block."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(blocks):
        order = list(variants)
        random.shuffle(order)
        for name in order:
            for _ in range(per_block):
                samples[name].append(timed(variants[name]))
            time.sleep(pause_s)
    return samples


def _leash(launch, ws: Path) -> None:
    res = launch.run_tool(["true"], cwd=ws, workspace=ws, timeout_s=30)
    if res.exit_code != 0 or res.missing and res.missing != ["cgroup"]:
        sys.exit(f"leash launch failed: {res}")


def report(title: str, samples: dict[str, list[float]], trace: list[dict], has_bwrap: bool) -> None:
    print(f"`true`, {title}, uid {os.getuid()}, {os.cpu_count()} CPUs")
    print(f"{'':22}{'median ms':>10}{'p90 ms':>10}")
    medians = {}
    for name, values in samples.items():
        med, p90 = summary(values)
        medians[name] = med
        print(f"{name:22}{med:10.2f}{p90:10.2f}")
    leash, plain = medians["leash tool profile"], medians["plain subprocess"]
    print(f"leash added over plain: {leash - plain:.2f} ms (target < 10 ms)")
    if has_bwrap:
        print(f"leash / bwrap: {leash / medians['bwrap']:.2f}x (target < 1.0x)")
    stages = [k for k, _ in sorted(trace[-1].items(), key=lambda kv: kv[1])] if trace else []
    if stages:
        print("leash launch stages (median ms):")
        for a, b in zip(stages, stages[1:]):
            values = [(t[b] - t[a]) * 1000 for t in trace if a in t and b in t]
            if values:
                print(f"  {a:>26} -> {b:<26}{statistics.median(values):7.3f}")
    print()


if __name__ == "__main__":
    main()
