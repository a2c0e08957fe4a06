"""The done-when scenario of the run engine, through the CLI, a real HTTP model and the openai client."""

from __future__ import annotations

import pytest

SCRIPT = [
    {"content": "Writing the notes first.", "tool_calls": [{"name": "write_file",
                                                             "arguments": {"path": "notes.txt", "content": "hello\n"}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]},
    "All done.",
]


@pytest.fixture
def paused_run(scripted_server, configure, cli, sentinel_home):
    server = scripted_server(SCRIPT)
    configure(server=server)
    proc = cli("run", "write notes.txt", "--json", check=3)
    import json

    out = json.loads(proc.stdout)
    return server, out, sentinel_home / "workspace"


def test_run_pauses_on_bash_after_writing_the_file(paused_run, cli):
    server, out, ws = paused_run
    assert out["status"] == "waiting_approval"
    assert (ws / "notes.txt").read_text() == "hello\n"
    assert not (ws / "counter.txt").exists()
    pending = cli.json("approvals", "--json")
    assert [(a["run_id"], a["tool"], a["arguments"]) for a in pending] == \
        [(out["id"], "bash", {"command": "echo ran >> counter.txt"})]
    assert "bash" in pending[0]["reason"]


def test_approve_runs_the_command_exactly_once_and_finishes(paused_run, cli):
    _, out, ws = paused_run
    approval = cli.json("approvals", "--json")[0]["id"]
    done = cli.json("approve", approval, "--json", check=0)
    assert done == {"id": out["id"], "status": "done", "output": "All done."}
    assert (ws / "counter.txt").read_text() == "ran\n"
    again = cli("approve", approval)
    assert again.returncode == 2 and "not pending" in again.stderr and "Traceback" not in again.stderr
    assert cli("resume", out["id"], check=0)
    assert (ws / "counter.txt").read_text() == "ran\n"
    assert cli.json("approvals", "--json") == []


def test_approve_accepts_the_run_id(paused_run, cli):
    _, out, ws = paused_run
    cli("approve", out["id"], check=0)
    assert (ws / "counter.txt").read_text() == "ran\n"


def test_deny_feeds_the_denial_back_and_the_run_finishes(paused_run, cli, scripted_server):
    server, out, ws = paused_run
    cli("deny", out["id"], "--reason", "not today", check=0)
    assert not (ws / "counter.txt").exists()
    last = server.requests[-1]["messages"]
    tool_results = [m for m in last if m["role"] == "tool"]
    assert tool_results[-1]["content"] == "Denied by the operator: not today"


def test_show_lists_every_decision_with_its_reason(paused_run, cli):
    _, out, _ = paused_run
    cli("approve", out["id"], check=0)
    shown = cli.json("show", out["id"], "--json")
    assert shown["id"] == out["id"] and shown["status"] == "done" and shown["task"] == "write notes.txt"
    assert [(d["tool"], d["outcome"]) for d in shown["decisions"]] == [("write_file", "auto"), ("bash", "needs_approval")]
    assert all(d["reason"] for d in shown["decisions"])
    assert shown["decisions"][1]["approval"]["approved"] is True
    roles = [m["role"] for m in shown["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_every_tool_call_gets_exactly_one_result(paused_run, cli):
    _, out, _ = paused_run
    cli("approve", out["id"], check=0)
    messages = cli.json("show", out["id"], "--json")["messages"]
    call_ids = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    result_ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(call_ids) == sorted(result_ids) and len(set(result_ids)) == len(result_ids)


def test_resume_of_a_finished_run_reports_and_exits_zero(paused_run, cli):
    _, out, _ = paused_run
    cli("approve", out["id"], check=0)
    proc = cli("resume", out["id"], check=0)
    assert "done" in proc.stderr


def test_streaming_and_the_api_key_reach_the_provider(paused_run):
    server, _, _ = paused_run
    assert all(r.get("stream") for r in server.requests)
    assert server.requests[0]["tools"][0]["type"] == "function"
