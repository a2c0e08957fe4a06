"""Delegation in system mode: the child runs as the writer's own user in its own worker, started by the
supervisor; the approval shows agent, task, model and grants; the parent resumes with the child's answer;
a child's own approval reaches the operator with its parent chain; a forged start of a child is refused."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from sx_helpers import serve_model, write_as

pytestmark = pytest.mark.root


def _profile(name: str, **fields) -> None:
    path = Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "agents" / f"{name}.yaml"
    write_as(name, path, yaml.safe_dump({"name": name, "soul": "default", **fields}))


def _delegate(writer, task):
    return {"tool_calls": [{"name": "delegate", "arguments": {"agent": writer, "task": task}}]}


def _setup(system, make_agent, scripted_server, task, child_script, head_tools):
    boss, writer = make_agent(), make_agent()
    head, child = scripted_server([_delegate(writer, task), "Boss done."]), scripted_server(child_script)
    serve_model(system.etc, head, {"providers": {"fake": {"base_url": head.base_url},
                                                 "fake2": {"base_url": child.base_url}},
                                   "system": {"models": ["fake/*", "fake2/*"]}})
    _profile(boss, model="fake/m", tools=head_tools)
    _profile(writer, model="fake2/m", tools=["read_file", "write_file", "bash"])
    return boss, writer, head, child


def test_delegate_to_a_writer_running_as_its_own_user(system, make_agent, sentinel_cmd, supervisor, scripted_server):
    write = {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "hello\n"}}]}
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo pwned > pwned.txt"}}]}
    boss, writer, head, child = _setup(system, make_agent, scripted_server, "Write hello to out.txt",
                                       [write, bash, "Writer done."], ["delegate", "read_file", "write_file"])
    supervisor()
    out = json.loads(sentinel_cmd("run", "Greet in out.txt", "--agent", boss, "--json", check=3).stdout)
    [approval] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert approval["tool"] == "delegate" and approval["arguments"] == {
        "agent": writer, "task": "Write hello to out.txt", "model": "fake2/m", "grants": ["read_file", "write_file"]}
    from sentinel.engine import events as ev
    from sentinel.client.system import connect

    heard: list = []  # the operator's `approve` follows the parent and hears the child live
    done = connect().approve(approval["id"], on_event=heard.append)
    assert done.id == out["id"] and done.status == "done_unverified" and done.output == "Boss done."
    runs = json.loads(sentinel_cmd("runs", "--json", check=0).stdout)
    [kid] = [r for r in runs if r["parent_id"] == out["id"]]
    assert kid["status"] == "done" and kid["depth"] == 1, sentinel_cmd("show", kid["id"]).stdout
    pw = pwd.getpwnam(writer)
    ws = Path(pw.pw_dir) / ".sentinel" / "workspace"
    assert (ws / "out.txt").read_text() == "hello\n" and (ws / "out.txt").stat().st_uid == pw.pw_uid
    assert not (ws / "pwned.txt").exists()  # bash: the writer's profile has it, its parent did not
    from_kid = [e for e in heard if e.run_id == kid["id"]]
    assert any(isinstance(e, ev.ToolCallEnd) and e.tool == "write_file" for e in from_kid)
    assert heard[-1].run_id == out["id"] and isinstance(heard[-1], ev.Done)
    refusal = [m for m in child.requests[2]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "not granted" in refusal
    assert "Greet in out.txt" in [m for m in child.requests[0]["messages"] if m["role"] == "user"][0]["content"]
    assert [m for m in head.requests[-1]["messages"] if m["role"] == "tool"][0]["content"] == "Writer done."


def test_a_childs_approval_shows_its_chain_and_the_parent_resumes(system, make_agent, sentinel_cmd, supervisor,
                                                                  scripted_server):
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> count.txt"}}]}
    boss, writer, head, child = _setup(system, make_agent, scripted_server, "count", [bash, "Writer done."],
                                       ["delegate", "bash"])
    supervisor()
    out = json.loads(sentinel_cmd("run", "count", "--agent", boss, "--json", check=3).stdout)
    [delegation] = json.loads(sentinel_cmd("approvals", "--json").stdout)
    waiting = json.loads(sentinel_cmd("approve", delegation["id"], "--json", check=3).stdout)
    [asked] = json.loads(sentinel_cmd("approvals", "--json").stdout)
    assert asked["tool"] == "bash" and asked["parents"] == [out["id"]] and waiting["approval_id"] == asked["id"]
    done = json.loads(sentinel_cmd("approve", asked["id"], "--json", check=4).stdout)  # "count": nothing checked
    assert (done["id"], done["status"], done["output"]) == (out["id"], "done_unverified", "Boss done.")
    ws = Path(pwd.getpwnam(writer).pw_dir) / ".sentinel" / "workspace"
    assert (ws / "count.txt").read_text() == "ran\n"


def test_kill_the_supervisor_while_a_child_runs_then_the_child_resumes_and_nothing_reruns(
        system, make_agent, sentinel_cmd, supervisor, scripted_server):
    from sentinel.engine import journal

    write = {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}]}
    slow = {"content": "Writer done.", "delay_ms": 3000}
    boss, writer, head, child = _setup(system, make_agent, scripted_server, "write a", [write, slow],
                                       ["delegate", "write_file"])
    sup = supervisor()
    out = json.loads(sentinel_cmd("run", "go", "--agent", boss, "--json", check=3).stdout)
    [approval] = json.loads(sentinel_cmd("approvals", "--json").stdout)
    approving = subprocess.Popen([sys.executable, "-m", "sentinel", "approve", approval["id"], "--json"],
                                 env={**os.environ, **system.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while len(child.requests) < 2:  # the child wrote a.txt and is in its slow model call
        assert time.monotonic() < deadline, "the child never reached its second model call"
        time.sleep(0.05)
    sup.kill9()
    approving.communicate(timeout=30)
    supervisor()  # recovery: the interrupted child is resumed, and its end wakes the waiting parent
    deadline = time.monotonic() + 60
    while json.loads(sentinel_cmd("show", out["id"], "--json").stdout)["status"] != "done_unverified":
        assert time.monotonic() < deadline, "the parent never finished"
        time.sleep(0.2)
    runs = json.loads(sentinel_cmd("runs", "--json").stdout)
    [kid] = [r for r in runs if r["parent_id"] == out["id"]]
    home = Path(pwd.getpwnam(writer).pw_dir) / ".sentinel"
    records = journal.read(home / "runs" / kid["id"] / "journal.jsonl")[0]
    started = [r.call_id for r in records if r.type == "started"]
    assert started and len(started) == len(set(started))  # nothing the child did ran twice
    heard = [m for m in head.requests[-1]["messages"] if m["role"] == "tool"][0]["content"]
    assert heard.startswith("Writer done.\n\n[sentinel note]")  # "write a": the child's work was not verified


def _spawn(task, soul, tools):
    return {"tool_calls": [{"name": "spawn", "arguments": {"task": task, "soul": soul, "model": "fake2/m",
                                                           "tools": tools}}]}


def _spawner(system, make_agent, scripted_server, child_script, temporary="discard"):
    boss = make_agent()
    head = scripted_server([_spawn("Write hi", "x", ["bash"]), _spawn("Write hi to sub.txt", SOUL, ["write_file"]),
                            "Boss done."])
    child = scripted_server(child_script)
    serve_model(system.etc, head, {"providers": {"fake": {"base_url": head.base_url},
                                                 "fake2": {"base_url": child.base_url}},
                                   "system": {"models": ["fake/*", "fake2/*"]},
                                   "orchestration": {"temporary": temporary}})
    _profile(boss, model="fake/m", tools=["spawn", "read_file", "write_file"])
    return boss, head, child


SOUL = "You are Terse, a careful writer of very short files."


def test_spawn_runs_a_subagent_as_the_spawning_agents_user_with_the_approved_soul(
        system, make_agent, sentinel_cmd, supervisor, scripted_server):
    write = {"tool_calls": [{"name": "write_file", "arguments": {"path": "sub.txt", "content": "hi\n"}}]}
    boss, head, child = _spawner(system, make_agent, scripted_server, [write, "Sub done."])
    supervisor()
    out = json.loads(sentinel_cmd("run", "Say hi", "--agent", boss, "--json", check=3).stdout)
    refusal = [m for m in head.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "not granted bash" in refusal  # asking for a tool the spawning run lacks refuses the call
    [approval] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert approval["tool"] == "spawn" and approval["arguments"] == {
        "agent": "(temporary subagent)", "task": "Write hi to sub.txt", "soul": SOUL, "model": "fake2/m",
        "skills": [], "grants": ["write_file"]}
    done = json.loads(sentinel_cmd("approve", approval["id"], "--json", check=4).stdout)  # "Say hi": nothing checked
    assert (done["id"], done["status"], done["output"]) == (out["id"], "done_unverified", "Boss done.")
    pw = pwd.getpwnam(boss)
    home = Path(pw.pw_dir) / ".sentinel"
    made = home / "workspace" / "sub.txt"
    assert made.read_text() == "hi\n" and made.stat().st_uid == pw.pw_uid  # the spawning agent's user
    assert SOUL in child.requests[0]["messages"][0]["content"]  # the approved soul, from the store
    [kid] = [r for r in json.loads(sentinel_cmd("runs", "--json").stdout) if r["parent_id"] == out["id"]]
    assert kid["agent"].startswith("sub-") and kid["status"] == "done" and kid["model"] == "fake2/m"
    assert not list((home / "agents").glob("sub-*"))  # orchestration.temporary: discard (the default)
    assert [m for m in head.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"] == "Sub done."


def test_temporary_ask_keeps_the_subagent_only_when_approved(system, make_agent, sentinel_cmd, supervisor,
                                                             scripted_server):
    write = {"tool_calls": [{"name": "write_file", "arguments": {"path": "sub.txt", "content": "hi\n"}}]}
    boss, head, child = _spawner(system, make_agent, scripted_server, [write, "Sub done."], temporary="ask")
    supervisor()
    sentinel_cmd("run", "Say hi", "--agent", boss, "--json", check=3)
    [approval] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    sentinel_cmd("approve", approval["id"], "--json", check=4)
    [keep] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert keep["tool"] == "save_agent" and keep["arguments"]["agent"].startswith(f"{boss}/sub-")
    agents = Path(pwd.getpwnam(boss).pw_dir) / ".sentinel" / "agents"
    assert not list(agents.glob("sub-*"))
    sentinel_cmd("approve", keep["id"], "--json", check=0)
    name = keep["arguments"]["agent"].split("/")[1]
    deadline = time.monotonic() + 30
    while not (agents / f"{name}.yaml").exists():
        assert time.monotonic() < deadline, "the kept subagent never reached the roster"
        time.sleep(0.1)
    assert (agents / f"{name}.yaml").stat().st_uid == pwd.getpwnam(boss).pw_uid  # written as the agent
    assert yaml.safe_load((agents / f"{name}.yaml").read_text())["tools"] == ["write_file"]
    assert (agents / f"{name}.soul.md").read_text() == SOUL  # written before the profile


def test_undo_of_the_spawning_run_undoes_its_subagents_writes_in_the_same_workspace(
        system, make_agent, sentinel_cmd, supervisor, scripted_server):
    """A spawned subagent works in its spawner's workspace as the same user and keeps its checkpoints in its own
    run directory: the supervisor's undo of the spawning run leases and reads that directory too (its Leash profile
    grants it) and puts back what the subagent wrote; the JSON names the child, as local mode's does."""
    write = {"tool_calls": [{"name": "write_file", "arguments": {"path": "sub.txt", "content": "hi\n"}}]}
    boss, head, child = _spawner(system, make_agent, scripted_server, [write, "Sub done."])
    supervisor()
    out = json.loads(sentinel_cmd("run", "Say hi", "--agent", boss, "--json", check=3).stdout)
    [approval] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    sentinel_cmd("approve", approval["id"], "--json", check=4)
    made = Path(pwd.getpwnam(boss).pw_dir) / ".sentinel" / "workspace" / "sub.txt"
    assert made.read_text() == "hi\n"
    [kid] = [r["id"] for r in json.loads(sentinel_cmd("runs", "--json").stdout) if r["parent_id"] == out["id"]]
    done = json.loads(sentinel_cmd("undo", out["id"], "--json", check=0).stdout)
    assert done["removed"] == ["sub.txt"] and done["missing"] == [] and done["elsewhere"] == []
    assert done["children"] == [{"id": kid, "steps": [1], "incomplete": []}]
    assert not made.exists()
