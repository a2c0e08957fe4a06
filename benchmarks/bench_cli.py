"""Command start-up and exit: what one `sentinel` process costs, the unit every script (and test) pays.

    /opt/sentinel/venv/bin/python benchmarks/bench_cli.py

Each command runs 7 times in a fresh process, in local mode, against the scripted model on loopback
(through the in-process Muzzle, as a user's run goes). Machines here are noisy, so every sample round runs
each command once in turn, beside a bare interpreter start (`python3 -I -c pass`: this Python, isolated, no
site), and each median is shown against that bare start (ratio) and against its target (issue 45: 150 ms
for a listing or deciding command, 300 ms for `run` to its first model request):

    sentinel runs --json          the lightest command that opens the state database
    sentinel approvals|status     the operator's listings
    sentinel show ID              one run, its decisions
    sentinel approve|deny ID      no such approval: the decision path up to its lookup
    sentinel run TASK             one model call, through Muzzle, to `done` (and to the model's request)
    sentinel resume ID            a run still waiting for approval: pauses again, no model call

Quiet-machine figures follow from the ratio: a bare start there is 10-20 ms.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from sentinel.models.fake_server import ScriptedServer

SAMPLES = 7
PAUSES = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]}
LISTING_MS, RUN_MS = 150, 300
BARE = [getattr(sys, "_base_executable", sys.executable), "-I", "-c", "pass"]


class Timed(ScriptedServer):
    """The scripted model, noting when each request arrives (this process's clock, as the samples')."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.arrivals: list[float] = []
        super().__init__(*args, **kwargs)

    def record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.arrivals.append(time.perf_counter())
        super().record(body, headers)


def once(argv: list[str], env: dict[str, str], cwd: Path, code: int) -> float:
    began = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == code, (argv, proc.stderr)
    return began


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, Timed(["All done."]) as done, ScriptedServer([PAUSES]) as pauses:
        home = Path(tmp)
        (home / "workspace").mkdir()
        (home / "config.yaml").write_text(yaml.safe_dump({
            "leash": {"tools": "plain"}, "default_model": "done/m", "context": {"curator_model": "off"},
            "providers": {"done": {"base_url": done.base_url}, "pauses": {"base_url": pauses.base_url}}}))
        env = {**os.environ, "SENTINEL_HOME": str(home), "SENTINEL_MODE": "local"}
        cwd = home / "workspace"
        sentinel = [sys.executable, "-m", "sentinel"]
        paused = subprocess.run([*sentinel, "run", "count", "--model", "pauses/m", "--json"], env=env, cwd=cwd,
                                capture_output=True, text=True)
        run_id = json.loads(paused.stdout)["id"]
        commands = [  # (name, argv, exit code, target ms)
            ("sentinel runs --json", [*sentinel, "runs", "--json"], 0, LISTING_MS),
            ("sentinel approvals", [*sentinel, "approvals"], 0, LISTING_MS),
            ("sentinel status", [*sentinel, "status"], 0, LISTING_MS),
            ("sentinel show ID", [*sentinel, "show", run_id], 0, LISTING_MS),
            ("sentinel approve ID (no such)", [*sentinel, "approve", "a-none"], 2, LISTING_MS),
            ("sentinel deny ID (no such)", [*sentinel, "deny", "a-none"], 2, LISTING_MS),
            ("sentinel run TASK", [*sentinel, "run", "say done"], 4, None),  # an answer: done_unverified
            ("sentinel resume ID (still paused)", [*sentinel, "resume", run_id], 3, None),
        ]
        bare: list[float] = []
        took: dict[str, list[float]] = {name: [] for name, *_ in commands}
        first_request: list[float] = []
        for _ in range(SAMPLES):
            began = time.perf_counter()
            subprocess.run(BARE, env=env, cwd=cwd)
            bare.append(time.perf_counter() - began)
            for name, argv, code, _target in commands:
                began = once(argv, env, cwd, code)
                took[name].append(time.perf_counter() - began)
                if name == "sentinel run TASK":
                    first_request.append(done.arrivals[-1] - began)
    base = statistics.median(bare)
    rows = [(name, statistics.median(took[name]), target) for name, _argv, _code, target in commands]
    rows.insert(rows.index(next(r for r in rows if r[0] == "sentinel run TASK")) + 1,
                ("  run TASK to its first model request", statistics.median(first_request), RUN_MS))
    print(f"one process, median of {SAMPLES}, measured alternately; bare start `python3 -I -c pass` "
          f"{base * 1000:.0f} ms")
    for name, median, target in rows:
        against = f"  target {target} ms: {'met' if median * 1000 <= target else 'MISSED'}" if target else ""
        print(f"  {name:<38} {median * 1000:6.0f} ms  ({median / base:5.1f}x bare){against}")


if __name__ == "__main__":
    main()
