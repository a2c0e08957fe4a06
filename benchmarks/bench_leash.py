"""Wall time to run `true`: plain subprocess vs the Leash tool profile (via the launcher) vs bwrap.

    python benchmarks/bench_leash.py [--rounds N] [--gap-ms MS]

The three are interleaved round by round (in shuffled order) so load from other processes hits
all of them alike. Prints medians, p90s, the ratio to bwrap, the time added over a plain
subprocess, and where a Leash launch spends its time. Targets: < 1.0x bwrap, < 10 ms added.
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
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=0.0, help="Pause between rounds (tool calls are spaced).")
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
    samples: dict[str, list[float]] = {name: [] for name in variants}
    launch.TRACE.append({})
    for _ in range(args.rounds):
        order = list(variants)
        random.shuffle(order)
        for name in order:
            samples[name].append(timed(variants[name]))
        if args.gap_ms:
            time.sleep(args.gap_ms / 1000)
    report(samples, args, launch.TRACE[1:], has_bwrap)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(ws, ignore_errors=True)


def _leash(launch, ws: Path) -> None:
    res = launch.run_tool(["true"], cwd=ws, workspace=ws, timeout_s=30)
    if res.exit_code != 0 or res.missing and res.missing != ["cgroup"]:
        sys.exit(f"leash launch failed: {res}")


def report(samples: dict[str, list[float]], args, trace: list[dict], has_bwrap: bool) -> None:
    print(f"`true`, {args.rounds} interleaved rounds, gap {args.gap_ms:g} ms, uid {os.getuid()}, "
          f"{os.cpu_count()} CPUs")
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


if __name__ == "__main__":
    main()
