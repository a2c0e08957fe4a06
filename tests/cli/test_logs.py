"""`sentinel logs` prints a run's events from its journal; --follow stops when the run pauses or ends."""

from __future__ import annotations

import json


def test_logs_prints_events_and_follow_stops_at_the_pause(scripted_server, configure, cli):
    script = [{"tool_calls": [{"name": "bash", "arguments": {"command": "touch x"}}]}, "ok"]
    configure(server=scripted_server(script))
    run_id = cli.json("run", "t", "--json", check=3)["id"]
    lines = cli("logs", run_id, "--follow", "--json", check=0, timeout=20).stdout.splitlines()
    kinds = [json.loads(line)["type"] for line in lines]
    assert kinds[0] == "created" and kinds[-1] == "paused" and "decision" in kinds
    human = cli("logs", check=0).stdout
    assert "paused" in human and "bash" in human


def test_wall_time_limit_fails_the_run(scripted_server, configure, cli):
    script = [{"delay_ms": 400, "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}], "repeat": 5}]
    configure({"limits": {"max_wall_s": 0.5}}, server=scripted_server(script))
    out = cli.json("run", "slow", "--json", check=1)
    assert "time limit reached" in out["error"]
