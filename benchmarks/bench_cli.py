"""Command start-up and exit: what one `sentinel` process costs, the unit every script (and test) pays.

    /opt/sentinel/venv/bin/python benchmarks/bench_cli.py

Each command runs 7 times in a fresh process, in local mode, against the scripted model on loopback
(through the in-process Muzzle, as a user's run goes); the median is compared, in the same run, with a
bare interpreter start, because machines here are noisy:

    sentinel runs --json          the lightest command that opens the state database
    sentinel run TASK             one model call, through Muzzle, to `done`
    sentinel resume ID            a run still waiting for approval: pauses again, no model call
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

import yaml

from sentinel.models.fake_server import ScriptedServer

SAMPLES = 7
PAUSES = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]}


def timed(argv: list[str], env: dict[str, str], cwd: Path, code: int = 0) -> float:
    samples = []
    for _ in range(SAMPLES):
        began = time.perf_counter()
        proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
        samples.append(time.perf_counter() - began)
        assert proc.returncode == code, proc.stderr
    return statistics.median(samples)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(["All done."]) as done, \
            ScriptedServer([PAUSES]) as pauses:
        home = Path(tmp)
        (home / "workspace").mkdir()
        (home / "config.yaml").write_text(yaml.safe_dump({
            "leash": {"tools": "plain"}, "default_model": "done/m",
            "providers": {"done": {"base_url": done.base_url}, "pauses": {"base_url": pauses.base_url}}}))
        env = {**os.environ, "SENTINEL_HOME": str(home), "SENTINEL_MODE": "local"}
        cwd = home / "workspace"
        sentinel = [sys.executable, "-m", "sentinel"]
        paused = subprocess.run([*sentinel, "run", "count", "--model", "pauses/m", "--json"], env=env, cwd=cwd,
                                capture_output=True, text=True)
        run_id = json.loads(paused.stdout)["id"]

        bare = timed([sys.executable, "-c", "pass"], env, cwd)
        rows = [("sentinel runs --json", timed([*sentinel, "runs", "--json"], env, cwd)),
                ("sentinel run TASK", timed([*sentinel, "run", "say done"], env, cwd)),
                ("sentinel resume ID (still paused)", timed([*sentinel, "resume", run_id], env, cwd, code=3))]
    print(f"one process, median of {SAMPLES} (bare interpreter start {bare * 1000:.0f} ms)")
    for name, median in rows:
        print(f"  {name:<36} {median * 1000:6.0f} ms  ({median / bare:4.1f}x bare)")


if __name__ == "__main__":
    main()
