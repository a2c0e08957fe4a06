"""Kill the run's process (SIGKILL) at every step boundary, resume, and check nothing ran twice."""

from __future__ import annotations

import json
import os
import signal
import time
import subprocess
import sys

import pytest

SCRIPT = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hello\n"}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]},
    "All done.",
]

FIRST_LEG = ["created:1", "message:2", "session:1", "assistant:1", "decision:1", "started:1", "finished:1",
             "assistant:2", "decision:2", "paused:1"]
SECOND_LEG = ["session:1", "resolved:1", "started:1", "finished:1", "assistant:1", "status:1"]


def _one_result_per_call(shown):
    calls = [c["id"] for m in shown["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    results = [m["tool_call_id"] for m in shown["messages"] if m["role"] == "tool"]
    return sorted(calls) == sorted(results) and len(results) == len(set(results))


def _the_run(cli):
    runs = cli.json("runs", "--json")
    assert len(runs) == 1
    return runs[0]


@pytest.mark.parametrize("failpoint", FIRST_LEG)
def test_crash_before_the_pause(failpoint, scripted_server, configure, cli, sentinel_home):
    configure(server=scripted_server(SCRIPT))
    killed = cli("run", "take notes", env={"SENTINEL_FAILPOINT": failpoint})
    assert killed.returncode == -signal.SIGKILL
    run = _the_run(cli)
    run_id = run["id"]
    assert run["status"] in ("interrupted", "waiting_approval")
    resumed = cli("resume", run_id, "--json")
    assert resumed.returncode == 3, resumed.stderr
    cli("approve", run_id, check=4)  # "take notes": nothing the harness checks
    ws = sentinel_home / "workspace"
    assert (ws / "counter.txt").read_text() == "ran\n"
    shown = cli.json("show", run_id, "--json")
    assert shown["status"] == "done_unverified" and _one_result_per_call(shown)


@pytest.mark.parametrize("failpoint", SECOND_LEG)
def test_crash_in_the_resumed_run_never_reruns_the_command(failpoint, scripted_server, configure, cli, sentinel_home):
    configure(server=scripted_server(SCRIPT))
    cli("run", "take notes", check=3)
    run_id = _the_run(cli)["id"]
    killed = cli("approve", run_id, env={"SENTINEL_FAILPOINT": failpoint})
    assert killed.returncode == -signal.SIGKILL
    assert cli("resume", run_id).returncode in (0, 4)  # 4: it ends now, done_unverified; 0: it had ended
    counter = sentinel_home / "workspace" / "counter.txt"
    shown = cli.json("show", run_id, "--json")
    assert shown["status"] == "done_unverified" and _one_result_per_call(shown)
    if failpoint == "started:1":  # started, then killed before it ran: reported, never re-run
        assert not counter.exists()
        results = [m["content"] for m in shown["messages"] if m["role"] == "tool"]
        assert "interrupted" in results[-1]
    else:
        assert counter.read_text() == "ran\n"


def test_kill_while_the_command_runs(scripted_server, configure, cli, sentinel_home):
    script = [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt; sleep 1"}}]},
              "All done."]
    configure(server=scripted_server(script))
    cli("run", "write counter.txt", check=3)
    run_id = _the_run(cli)["id"]
    env = {**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "k"}
    proc = subprocess.Popen([sys.executable, "-m", "sentinel", "approve", run_id], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    counter = sentinel_home / "workspace" / "counter.txt"
    deadline = time.time() + 20
    while not counter.exists() and time.time() < deadline:
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    time.sleep(1.2)  # let the orphaned command finish its sleep
    assert cli.json("runs", "--json")[0]["status"] == "interrupted"
    resumed = cli("resume", run_id)
    assert counter.read_text() == "ran\n"  # never run again
    # the scripted model answers without looking at the interrupted call, so the run may end failed: resume
    # says how it ended with the code `run` would have given
    ended = cli.json("show", run_id, "--json")["status"]
    assert resumed.returncode == {"done": 0, "done_unverified": 4, "failed": 1}[ended]


def test_a_run_is_executed_by_one_process_at_a_time(scripted_server, configure, cli, sentinel_home):
    script = [{"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}], "delay_ms": 0},
              {"content": "done", "delay_ms": 3000}]
    configure(server=scripted_server(script))
    env = {**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "k"}
    proc = subprocess.Popen([sys.executable, "-m", "sentinel", "run", "slow"], env=env, cwd=sentinel_home / "workspace",
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        runs = cli.json("runs", "--json")
        if runs and runs[0]["status"] == "running":
            break
        time.sleep(0.05)
    second = cli("resume", runs[0]["id"])
    proc.wait(timeout=30)
    assert second.returncode == 1 and "being executed by another process" in second.stderr
    assert json.loads(cli("show", runs[0]["id"], "--json").stdout)["status"] == "done_unverified"
