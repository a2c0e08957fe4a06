"""Child runs in local mode: a child's own approval reaches the operator with its parent chain and the parent
resumes after it; kill -9 while a child runs and resume the parent: nothing is re-run; the depth cap."""

from __future__ import annotations

import json
import signal

import pytest

from sentinel.engine import journal

DELEGATE = {"tool_calls": [{"name": "delegate", "arguments": {"agent": "writer", "task": "Write the files"}}]}


def _write(name):
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": name, "content": name}}]}


def _children(cli, parent):
    return [r for r in cli.json("runs", "--json") if r["parent_id"] == parent]


def test_child_approval_reaches_the_operator_with_its_chain_then_the_parent_resumes(roster, cli, sentinel_home):
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> count.txt"}}]}
    roster([DELEGATE, "Parent done."], [bash, "Child done."], head_tools=["delegate", "bash"])
    parent = json.loads(cli("run", "--agent", "orchestrator", "--json", "count").stdout)["id"]
    [delegation] = cli.json("approvals", "--json")
    waiting = cli("approve", delegation["id"], "--json")
    assert waiting.returncode == 3, waiting.stderr
    [child] = _children(cli, parent)
    [asked] = cli.json("approvals", "--json")
    assert asked["tool"] == "bash" and asked["run_id"] == child["id"] and asked["parents"] == [parent]
    assert json.loads(waiting.stdout)["approval_id"] == asked["id"]
    text = cli("approvals").stdout
    assert child["id"] in text and parent in text
    assert cli.json("show", parent, "--json")["status"] == "waiting_child"
    done = json.loads(cli("approve", asked["id"], "--json", check=4).stdout)  # "count": nothing the harness checks
    assert done["id"] == parent and done["status"] == "done_unverified" and done["output"] == "Parent done."
    assert (sentinel_home / "workspace" / "count.txt").read_text() == "ran\n"


@pytest.mark.parametrize("failpoint", ["child_started:1", "assistant:1", "finished:1", "started:2", "status:1"])
def test_kill_during_a_child_then_resume_the_parent_reruns_nothing(failpoint, roster, cli, sentinel_home):
    head, child = roster([DELEGATE, "Parent done."], [_write("a.txt"), _write("b.txt"), "Child done."])
    parent = json.loads(cli("run", "--agent", "orchestrator", "--json", "files").stdout)["id"]
    [delegation] = cli.json("approvals", "--json")
    killed = cli("approve", delegation["id"], env={"SENTINEL_FAILPOINT": failpoint})
    assert killed.returncode == -signal.SIGKILL
    assert cli("resume", parent).returncode in (0, 4)  # 4: it ends now, done_unverified; 0: it had ended
    [kid] = _children(cli, parent)  # one child for the call, never a second
    assert kid["status"] == "done_unverified" and cli.json("show", parent, "--json")["status"] == "done_unverified"
    records = journal.read(sentinel_home / "runs" / kid["id"] / "journal.jsonl")[0]
    started = [r.call_id for r in records if r.type == "started"]
    assert len(started) == len(set(started))  # no call of the child started twice
    assert [r.type for r in records].count("created") == 1
    parent_records = journal.read(sentinel_home / "runs" / parent / "journal.jsonl")[0]
    assert [r.type for r in parent_records].count("child_started") == 1
    results = [m for m in head.requests[-1]["messages"] if m["role"] == "tool"]
    [heard] = [m["content"] for m in results]  # the child's answer, and that its work was not verified
    assert heard.startswith("Child done.\n\n[sentinel note] The child run ")


def test_depth_cap_is_a_refusal_the_model_reads(roster, cli, sentinel_home):
    nested = {"tool_calls": [{"name": "delegate", "arguments": {"agent": "writer", "task": "again"}}]}
    head, child = roster([DELEGATE, "ok"], [nested, "I did it myself."], writer_tools=["delegate", "write_file"],
                         extra={"orchestration": {"max_depth": 1}})
    parent = json.loads(cli("run", "--agent", "orchestrator", "--json", "x").stdout)["id"]
    cli("approve", cli.json("approvals", "--json")[0]["id"], check=4)  # "x": done_unverified
    refusal = [m for m in child.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "orchestration.max_depth is 1" in refusal
    assert len(_children(cli, parent)) == 1 and cli.json("approvals", "--json") == []


def test_spawn_asking_for_a_tool_the_parent_lacks_is_refused(roster, cli, sentinel_home):
    spawn = {"tool_calls": [{"name": "spawn", "arguments": {"task": "t", "soul": "You help.", "tools": ["bash"]}}]}
    head, _ = roster([spawn, "ok"], ["unused"], head_tools=["spawn", "read_file"])
    cli("run", "--agent", "orchestrator", "x", check=4)
    refusal = [m for m in head.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "not granted bash" in refusal
    assert len(cli.json("runs", "--json")) == 1


@pytest.mark.parametrize("temporary", ["discard", "save", "ask"])
def test_spawned_subagent_runs_on_its_model_and_ends_per_temporary(temporary, roster, cli, sentinel_home):
    spawn = {"tool_calls": [{"name": "spawn", "arguments": {"task": "Write a.txt", "soul": "You write files.",
                                                            "model": "fake2/m", "tools": ["write_file"]}}]}
    head, child = roster([spawn, "Parent done."], [_write("a.txt"), "Sub done."], head_tools=["spawn", "write_file"],
                         extra={"orchestration": {"temporary": temporary}})
    cli("run", "--agent", "orchestrator", "x", check=3)
    [approval] = cli.json("approvals", "--json")
    assert approval["arguments"]["soul"] == "You write files." and approval["arguments"]["grants"] == ["write_file"]
    cli("approve", approval["id"], check=4)
    assert (sentinel_home / "workspace" / "a.txt").read_text() == "a.txt"
    assert "You write files." in child.requests[0]["messages"][0]["content"]
    saved = sorted(p.name for p in (sentinel_home / "agents").glob("sub-*.yaml"))
    assert len(saved) == (0 if temporary == "discard" else 1)
    if temporary == "ask":
        [keep] = cli.json("approvals", "--json")
        assert keep["tool"] == "save_agent"
        cli("deny", keep["id"], check=0)
        assert not list((sentinel_home / "agents").glob("sub-*"))


def test_the_parents_listener_hears_its_child_live_and_progress_indents_it(roster, cli, sentinel_home, monkeypatch):
    from sentinel.ui.render import Depths
    from sentinel.engine import events as ev
    from sentinel.local.engine import LocalEngine

    monkeypatch.setenv("SENTINEL_MODE", "local")
    roster([DELEGATE, "Parent done."], [_write("a.txt"), "Child done."])
    parent = json.loads(cli("run", "--agent", "orchestrator", "--json", "go").stdout)["id"]
    [delegation] = cli.json("approvals", "--json")
    heard: list = []
    engine = LocalEngine()
    try:
        outcome = engine.approve(delegation["id"], on_event=heard.append)
    finally:
        engine.close()
    assert outcome.id == parent and outcome.status == "done_unverified"
    [child] = _children(cli, parent)
    from_child = [e for e in heard if e.run_id == child["id"]]
    assert any(isinstance(e, ev.ToolCallEnd) and e.tool == "write_file" for e in from_child)
    assert any(isinstance(e, ev.Done) for e in from_child) and isinstance(heard[-1], ev.Done)
    assert heard[-1].run_id == parent  # the child's end, then its parent's
    depths = Depths()
    assert {e.run_id: depths.of(e) for e in heard} == {parent: 0, child["id"]: 1}


def test_a_childs_answer_carrying_an_identifier_with_digits_reaches_the_parent(roster, cli, sentinel_home):
    """CHILDANSWER-4242 is a name, not a number the child claims: its answer is not sent back as ungrounded."""
    roster([DELEGATE, "Parent done."], [_write("note.txt"), "CHILDANSWER-4242: the note is written."],
           extra={"policy": {"tools": {"delegate": "auto"}}})
    out = cli.json("run", "--agent", "orchestrator", "--json", "Have the writer write note.txt.", check=0)
    [child] = _children(cli, out["id"])
    shown = cli.json("show", child["id"], "--json")
    assert shown["status"] == "done" and shown["output"] == "CHILDANSWER-4242: the note is written."  # note.txt: checked
    assert not shown["safeguards"]
    parent = cli.json("show", out["id"], "--json")
    assert any("CHILDANSWER-4242" in m["content"] for m in parent["messages"] if m["role"] == "tool")


def test_what_is_a_number_an_answer_claims():
    from sentinel.worker.safeguards.answer import ungrounded

    assert ungrounded("CHILDANSWER-4242, r-93505405cd, f01.txt, v2-rc, build_17", "") == []
    assert ungrounded("the total is 12345 and -17 below", "") == ["12345", "-17"]
