"""Workflows in system mode: the supervisor walks the steps, each a child run of the workflow run made as its
agent's own user; a step paused for approval pauses the workflow and `approve` continues it to the end; a
workflow naming an agent the roster lacks is refused before anything runs; an agent's `run_workflow` runs the
steps its approval bound, not what the file says later."""

from __future__ import annotations

import json
import pwd
from pathlib import Path

import pytest
import yaml

from sx_helpers import serve_model, write_as

pytestmark = pytest.mark.root


def _profile(name: str, **fields) -> None:
    path = Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "agents" / f"{name}.yaml"
    write_as(name, path, yaml.safe_dump({"name": name, "soul": "default", **fields}))


def _first_user(server) -> str:
    return [m for m in server.requests[0]["messages"] if m["role"] == "user"][0]["content"]


def _three(system, make_agent, scripted_server, scripts, extra_servers=None):
    """Three agents, each on its own scripted model; the digest workflow naming them."""
    names = [make_agent() for _ in scripts]
    servers = [scripted_server(s) for s in scripts]
    providers = {f"p{i}": {"base_url": s.base_url} for i, s in enumerate(servers)}
    for key, server in (extra_servers or {}).items():
        providers[key] = {"base_url": server.base_url}
    serve_model(system.etc, servers[0], {"providers": providers, "system": {"models": ["p*/*", "fake/*"]}})
    for i, name in enumerate(names):
        _profile(name, model=f"p{i}/m", tools=["read_file", "write_file", "bash"])
    reader, summarizer, reporter = names
    digest = {"description": "Read, summarize, report", "steps": [
        {"name": "read", "agent": reader, "task": "Read the file {{input}} and quote it."},
        {"name": "summarize", "agent": summarizer, "task": "Summarize this: {{previous}}"},
        {"name": "report", "agent": reporter, "task": "Report, citing the notes: {{read.output}}"}]}
    return names, servers, digest


def test_a_workflow_runs_each_step_as_its_agent_and_approve_carries_it_to_the_end(
        system, make_agent, sentinel_cmd, supervisor, scripted_server, tmp_path):
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> count.txt"}}]}
    names, servers, digest = _three(system, make_agent, scripted_server,
                                    [[read, "NOTES: buy milk"], [bash, "SUMMARY: milk"], ["REPORT: milk bought"]])
    reader_ws = Path(pwd.getpwnam(names[0]).pw_dir) / ".sentinel" / "workspace"
    write_as(names[0], reader_ws / "notes.txt", "buy milk\n")
    supervisor()
    env = {"SENTINEL_HOME": str(tmp_path / "operator")}
    flow_file = tmp_path / "digest.yaml"
    bad = {"steps": [{**digest["steps"][0]}, {"name": "x", "agent": "nobody-here", "task": "{{previous}}"}]}
    flow_file.write_text(yaml.safe_dump(bad))
    refused = sentinel_cmd("workflow", "create", "digest", "--file", str(flow_file), env=env, check=2)
    assert "steps[1].agent: no agent 'nobody-here'" in refused.stderr and "Traceback" not in refused.stderr
    flow_file.write_text(yaml.safe_dump(digest))
    sentinel_cmd("workflow", "create", "digest", "--file", str(flow_file), env=env, check=0)

    paused = sentinel_cmd("workflow", "run", "digest", "--input", "notes.txt", "--json", env=env, check=3)
    wf = json.loads(paused.stdout)
    [approval] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert approval["tool"] == "bash" and approval["parents"] == [wf["id"]]
    done = json.loads(sentinel_cmd("approve", approval["id"], "--json", check=4).stdout)  # no step names a file
    assert done["id"] == wf["id"] and done["status"] == "done_unverified" and done["output"] == "REPORT: milk bought"

    assert _first_user(servers[0]) == "Read the file notes.txt and quote it."
    assert _first_user(servers[1]) == "Summarize this: NOTES: buy milk"
    assert _first_user(servers[2]) == "Report, citing the notes: NOTES: buy milk"
    rows = json.loads(sentinel_cmd("runs", "--json", check=0).stdout)
    steps = sorted((r for r in rows if r["parent_id"] == wf["id"]), key=lambda r: r["created_at"])
    assert [r["agent"] for r in steps] == names and all(r["status"] == "done_unverified" for r in steps)
    ws = Path(pwd.getpwnam(names[1]).pw_dir) / ".sentinel" / "workspace"
    assert (ws / "count.txt").stat().st_uid == pwd.getpwnam(names[1]).pw_uid  # the summarizer's own user ran it
    shown = json.loads(sentinel_cmd("show", wf["id"], "--json", check=0).stdout)
    assert shown["status"] == "done_unverified" and [c["id"] for c in shown["children"]] == [r["id"] for r in steps]

    unknown = dict(digest, steps=[{**digest["steps"][0], "agent": "gone"}])
    (tmp_path / "operator" / "workflows" / "stale.yaml").write_text(yaml.safe_dump(unknown))
    before = len(json.loads(sentinel_cmd("runs", "--json", check=0).stdout))
    stale = sentinel_cmd("workflow", "run", "stale", "--input", "x", env=env)
    assert stale.returncode != 0, stale.stdout
    assert "steps[0].agent: no agent 'gone'" in stale.stderr and "Traceback" not in stale.stderr
    assert len(json.loads(sentinel_cmd("runs", "--json", check=0).stdout)) == before  # nothing ran


def test_run_workflow_tool_runs_the_steps_its_approval_bound(system, make_agent, sentinel_cmd, supervisor,
                                                            scripted_server):
    boss_model = scripted_server([{"tool_calls": [{"name": "run_workflow",
                                                   "arguments": {"name": "digest", "input": "n.txt"}}]}, "Boss done."])
    names, servers, digest = _three(system, make_agent, scripted_server, [["NOTES"], ["SUMMARY"], ["REPORT"]],
                                    {"fake": boss_model})
    boss = make_agent()
    _profile(boss, model="fake/m", tools=["run_workflow", "read_file"])
    flows = Path(pwd.getpwnam(boss).pw_dir) / ".sentinel" / "workflows"
    write_as(boss, flows / "digest.yaml", yaml.safe_dump(digest))
    supervisor()
    head = json.loads(sentinel_cmd("run", "digest it", "--agent", boss, "--json", check=3).stdout)
    [approval] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert approval["tool"] == "run_workflow" and approval["arguments"]["steps"] == digest["steps"]
    assert approval["arguments"]["grants"] == ["read_file", "run_workflow"]
    edited = {"steps": [{**digest["steps"][0], "task": "Delete everything"}]}  # the agent edits it meanwhile
    write_as(boss, flows / "digest.yaml", yaml.safe_dump(edited))
    done = json.loads(sentinel_cmd("approve", approval["id"], "--json", check=4).stdout)  # "digest it": unchecked
    assert (done["id"], done["status"], done["output"]) == (head["id"], "done_unverified", "Boss done.")
    result = [m for m in boss_model.requests[-1]["messages"] if m["role"] == "tool"][0]["content"]
    assert result.startswith("REPORT\n\n[sentinel note] The child run ")  # its steps were not verified: said so
    rows = json.loads(sentinel_cmd("runs", "--json", check=0).stdout)
    [flow] = [r for r in rows if r["parent_id"] == head["id"]]
    steps = [r for r in rows if r["parent_id"] == flow["id"]]
    assert flow["kind"] == "workflow" and flow["status"] == "done_unverified" and len(steps) == 3
    from sentinel.engine.store import Store
    from sentinel.supervisor import layout

    store = Store.open(layout.db_path(system.state))
    try:  # each step: the boss's grants ∩ its profile's tools (read_file, write_file, bash)
        assert [store.grants_of(r["id"]) for r in steps] == [["read_file"]] * 3
    finally:
        store.close()
    assert "Delete everything" not in _first_user(servers[0])
