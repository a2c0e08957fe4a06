"""Saved workflows in local mode: templating between steps, a step's pause pausing the workflow, and the
validation that refuses a workflow before any step runs."""

from __future__ import annotations

import json

import pytest
import yaml

DIGEST = {"description": "Read notes, summarize, report", "steps": [
    {"name": "read", "agent": "reader", "task": "Read the file {{input}} and quote it."},
    {"name": "summarize", "agent": "summarizer", "task": "Summarize this: {{previous}}"},
    {"name": "report", "agent": "reporter", "task": "Report, citing the notes: {{read.output}}"}]}


@pytest.fixture
def three(scripted_server, configure, sentinel_home):
    """Three agents, each on its own scripted server (a server answers by turn number, not by run)."""

    def make(reader, summarizer, reporter):
        servers = [scripted_server(s) for s in (reader, summarizer, reporter)]
        cfg = configure({"providers": {f"p{i}": {"base_url": s.base_url, "api_key_env": "FAKE_KEY"}
                                       for i, s in enumerate(servers)}})
        (sentinel_home / "config.yaml").write_text(yaml.safe_dump(cfg))
        (sentinel_home / "agents").mkdir(exist_ok=True)
        for i, name in enumerate(("reader", "summarizer", "reporter")):
            (sentinel_home / "agents" / f"{name}.yaml").write_text(yaml.safe_dump({"model": f"p{i}/m"}))
        return servers

    return make


def _first_user(server, call=0):
    return [m for m in server.requests[call]["messages"] if m["role"] == "user"][0]["content"]


def _save(cli, tmp_path, flow, name="digest"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(flow))
    return cli("workflow", "create", name, "--file", str(path))


def test_three_steps_substitute_previous_and_named_outputs(three, cli, sentinel_home, tmp_path):
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}
    reader, summarizer, reporter = three([read, "NOTES: buy milk"], ["SUMMARY: milk"], ["REPORT: milk bought"])
    (sentinel_home / "workspace" / "notes.txt").parent.mkdir(exist_ok=True)
    (sentinel_home / "workspace" / "notes.txt").write_text("buy milk\n")
    _save(cli, tmp_path, DIGEST).check_returncode()
    done = cli("workflow", "run", "digest", "--input", "notes.txt", "--json", check=4)  # no step names a file it makes
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "done_unverified" and outcome["output"] == "REPORT: milk bought"
    assert _first_user(reader) == "Read the file notes.txt and quote it."
    assert _first_user(summarizer) == "Summarize this: NOTES: buy milk"
    assert _first_user(reporter) == "Report, citing the notes: NOTES: buy milk"
    steps = [r for r in cli.json("runs", "--json") if r["parent_id"] == outcome["id"]]
    assert sorted(r["agent"] for r in steps) == ["reader", "reporter", "summarizer"]
    assert all(r["status"] == "done_unverified" for r in steps)
    assert outcome["error"].startswith("not verified: step read (")


def test_a_step_paused_for_approval_pauses_the_workflow_and_approve_finishes_it(three, cli, sentinel_home,
                                                                                 tmp_path):
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> count.txt"}}]}
    three(["NOTES"], [bash, "SUMMARY"], ["REPORT"])
    _save(cli, tmp_path, DIGEST).check_returncode()
    paused = cli("workflow", "run", "digest", "--input", "x", "--json")
    assert paused.returncode == 3, paused.stderr
    wf = json.loads(paused.stdout)
    [approval] = cli.json("approvals", "--json")
    assert approval["tool"] == "bash" and approval["run_id"] != wf["id"]
    assert cli.json("show", wf["id"], "--json")["status"] == "waiting_child"
    done = cli("approve", approval["id"], "--json", check=4)
    assert json.loads(done.stdout) == {**json.loads(done.stdout), "id": wf["id"], "status": "done_unverified",
                                       "output": "REPORT"}
    assert (sentinel_home / "workspace" / "count.txt").read_text() == "ran\n"


@pytest.mark.parametrize("steps, problem", [
    ([{"name": "a", "agent": "reader", "task": "x"}, {"name": "a", "agent": "reader", "task": "y"}],
     "steps[1].name: duplicate step name 'a'"),
    ([{"name": "a", "agent": "nobody", "task": "x"}], "steps[0].agent: no agent 'nobody'"),
    ([{"name": "a", "agent": "reader", "task": "{{b.output}}"}, {"name": "b", "agent": "reader", "task": "y"}],
     "steps[0].task: {{b.output}} names step 'b', which runs later"),
    ([{"name": "a", "agent": "reader", "task": "{{zzz.output}}"}], "steps[0].task: {{zzz.output}} names no step"),
    ([{"name": "a", "agent": "reader", "task": "{{previous}}"}], "steps[0].task: {{previous}} has no previous step"),
    ([{"name": "a", "agent": "reader", "task": "{{nope}}"}], "steps[0].task: {{nope}} is not a placeholder"),
])
def test_validation_errors_are_one_line_and_nothing_runs(three, cli, sentinel_home, tmp_path, steps, problem):
    servers = three(["a"], ["b"], ["c"])
    refused = _save(cli, tmp_path, {"steps": steps})
    assert refused.returncode == 2 and problem in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert "Traceback" not in refused.stderr
    # a file that went bad after it was saved: refused before the first step, nothing persisted runs
    (sentinel_home / "workflows").mkdir(exist_ok=True)
    (sentinel_home / "workflows" / "bad.yaml").write_text(yaml.safe_dump({"steps": steps}))
    ran = cli("workflow", "run", "bad", "--input", "x")
    assert ran.returncode == 2 and problem in ran.stderr
    assert cli.json("runs", "--json") == [] and all(not s.requests for s in servers)


def test_list_and_show(three, cli, tmp_path):
    three(["a"], ["b"], ["c"])
    _save(cli, tmp_path, DIGEST).check_returncode()
    assert cli.json("workflow", "list", "--json") == [{"name": "digest", "description": DIGEST["description"],
                                                       "steps": ["read", "summarize", "report"]}]
    shown = cli.json("workflow", "show", "digest", "--json")
    assert shown["steps"] == DIGEST["steps"]
    assert cli("workflow", "show", "nope").returncode != 0


def test_run_workflow_tool_needs_approval_and_returns_the_last_output(three, scripted_server, cli, sentinel_home,
                                                                     tmp_path):
    three(["NOTES"], ["SUMMARY"], ["REPORT"])
    call = {"tool_calls": [{"name": "run_workflow", "arguments": {"name": "digest", "input": "n.txt"}}]}
    boss = scripted_server([call, "Boss done."])
    cfg = yaml.safe_load((sentinel_home / "config.yaml").read_text())
    cfg["providers"]["boss"] = {"base_url": boss.base_url, "api_key_env": "FAKE_KEY"}
    (sentinel_home / "config.yaml").write_text(yaml.safe_dump(cfg))
    (sentinel_home / "agents" / "boss.yaml").write_text(yaml.safe_dump({"model": "boss/m",
                                                                       "tools": ["run_workflow", "read_file"]}))
    _save(cli, tmp_path, DIGEST).check_returncode()
    head = json.loads(cli("run", "--agent", "boss", "--json", "digest it").stdout)
    [approval] = cli.json("approvals", "--json")
    assert approval["tool"] == "run_workflow" and approval["arguments"]["steps"] == DIGEST["steps"] and approval[
        "arguments"]["grants"] == ["read_file", "run_workflow"]
    edited = {"steps": [{**DIGEST["steps"][0], "task": "Delete everything"}]}  # after the approval was asked
    (sentinel_home / "workflows" / "digest.yaml").write_text(yaml.safe_dump(edited))
    done = json.loads(cli("approve", approval["id"], "--json", check=4).stdout)
    assert done["id"] == head["id"] and done["output"] == "Boss done."
    result = [m for m in boss.requests[-1]["messages"] if m["role"] == "tool"][0]["content"]
    assert result.startswith("REPORT\n\n[sentinel note] The child run ")  # its steps were not verified: said so
    assert "did not verify its work (not verified: step read (" in result
    rows = cli.json("runs", "--json")
    flow = next(r for r in rows if r["parent_id"] == head["id"])
    assert flow["kind"] == "workflow" and len([r for r in rows if r["parent_id"] == flow["id"]]) == 3
    assert "Delete everything" not in json.dumps(rows)  # the steps run as approved, not as the file says now
