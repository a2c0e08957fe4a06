"""Stopping the supervisor (kill -9) loses nothing: its workers die with it, their runs are marked
interrupted and resumed on start (or with `sentinel resume` under --no-resume)."""

from __future__ import annotations

import json
import os
import pwd
import time

import pytest

from sx_helpers import agent_config
from test_privileges import _wait_status

pytestmark = pytest.mark.root

SLOW_SCRIPT = [
    {"delay_ms": 2500, "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]},
    "All done.",
]


def _killed_mid_model_call(system, make_agent, supervisor, scripted_server, extra=()):
    from sentinel.client.system import SystemEngine

    name = make_agent()
    server = scripted_server(SLOW_SCRIPT)
    agent_config(name, server)
    sup = supervisor([server.port], extra)
    run = SystemEngine(system.socket).call("start", task="slow", agent=name)
    deadline = time.monotonic() + 15
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.requests, "the worker never called the model"
    sup.kill9()
    uid = pwd.getpwnam(name).pw_uid
    deadline = time.monotonic() + 5
    while _processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes_of(uid), "the worker outlived the supervisor"
    return name, server, run["id"]


def test_a_run_killed_with_the_supervisor_is_resumed_on_start(system, make_agent, sentinel_cmd, supervisor,
                                                              scripted_server):
    name, server, run_id = _killed_mid_model_call(system, make_agent, supervisor, scripted_server)
    supervisor([server.port])
    _wait_status(sentinel_cmd, run_id, "waiting_approval")
    sentinel_cmd("approve", run_id, check=4)
    shown = json.loads(sentinel_cmd("show", run_id, "--json").stdout)
    assert shown["status"] == "done_unverified"
    calls = [c["id"] for m in shown["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    results = [m["tool_call_id"] for m in shown["messages"] if m["role"] == "tool"]
    assert sorted(calls) == sorted(results)


def test_no_resume_leaves_it_interrupted_until_sentinel_resume(system, make_agent, sentinel_cmd, supervisor,
                                                               scripted_server):
    name, server, run_id = _killed_mid_model_call(system, make_agent, supervisor, scripted_server)
    supervisor([server.port], ["--no-resume"])
    row = json.loads(sentinel_cmd("show", run_id, "--json", check=0).stdout)
    assert row["status"] == "interrupted" and "supervisor stopped" in row["error"]
    out = json.loads(sentinel_cmd("resume", run_id, "--json", check=3).stdout)
    assert out["status"] == "waiting_approval"


def _processes_of(uid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    out.append(int(entry))
            except OSError:
                pass
    return out
