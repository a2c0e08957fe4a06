"""`sentinel logs` prints a run's events from its journal; --follow follows the run through its pauses until
it ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_logs_prints_events_and_follow_goes_on_through_the_pause(scripted_server, configure, cli, sentinel_home):
    script = [{"tool_calls": [{"name": "bash", "arguments": {"command": "touch x"}}]}, "ok"]
    configure(server=scripted_server(script))
    run_id = cli.json("run", "t", "--json", check=3)["id"]
    follower = subprocess.Popen([sys.executable, "-m", "sentinel", "logs", run_id, "--follow", "--json"],
                                env={**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "k"},
                                stdout=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in follower.stdout:  # up to the pause: then it waits for the answer, it does not exit
            lines.append(line)
            if json.loads(line)["type"] == "paused":
                break
        assert follower.poll() is None
        cli("approve", run_id, check=4)
        rest, _ = follower.communicate(timeout=60)
    finally:
        follower.kill()
        follower.wait()
    assert follower.returncode == 0
    followed = [json.loads(line)["type"] for line in rest.splitlines()]
    assert followed[0] == "resumed" and followed[-1] == "done", followed
    events = [json.loads(line) for line in lines]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "paused" and "decision" in kinds
    assert "tool_call_begin" not in kinds  # the bash call waits for a person
    assert all(e["run_id"] == run_id for e in events)
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    human = cli("logs", check=0).stdout
    assert "paused" in human and "bash" in human
    after = [json.loads(line) for line in cli("logs", run_id, "--json", check=0).stdout.splitlines()]
    tail = [e["type"] for e in after if e["seq"] > events[-1]["seq"]]
    assert tail == followed  # what the follower printed after the pause is the rest of the journal
    assert tail[:4] == ["resumed", "resolved", "tool_call_begin", "tool_call_end"] and tail[-1] == "done"
    begin = next(e for e in after if e["type"] == "tool_call_begin")
    assert begin["tool"] == "bash" and begin["arguments"] == {"command": "touch x"}


def test_wall_time_limit_fails_the_run(scripted_server, configure, cli):
    script = [{"delay_ms": 400, "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}], "repeat": 5}]
    configure({"limits": {"max_wall_s": 0.5}}, server=scripted_server(script))
    out = cli.json("run", "slow", "--json", check=1)
    assert "time limit reached" in out["error"]
