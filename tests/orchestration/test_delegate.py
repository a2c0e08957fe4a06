"""Delegation in local mode: the approval shows the exact child, the child runs under its grants, the parent
gets its answer; refusals (grants, depth) are tool results the model reads."""

from __future__ import annotations

DELEGATE = {"tool_calls": [{"name": "delegate", "arguments": {"agent": "writer", "task": "Write hello to out.txt"}}]}
WRITE = {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "hello\n"}}]}


def test_delegate_needs_approval_then_child_writes_and_parent_finishes(roster, cli, sentinel_home, monkeypatch):
    head, child = roster([DELEGATE, "The writer wrote it."], [WRITE, "Wrote out.txt."])
    paused = cli("run", "--agent", "orchestrator", "--json", "Put a greeting in out.txt")
    assert paused.returncode == 3, paused.stderr
    run_id = __import__("json").loads(paused.stdout)["id"]
    [approval] = cli.json("approvals", "--json")
    assert approval["tool"] == "delegate" and approval["run_id"] == run_id
    assert approval["arguments"] == {"agent": "writer", "task": "Write hello to out.txt", "model": "fake2/m",
                                     "grants": ["read_file", "write_file"]}
    done = cli("approve", approval["id"], "--json", check=4)
    assert "The writer wrote it." in done.stdout
    assert (sentinel_home / "workspace" / "out.txt").read_text() == "hello\n"
    runs = cli.json("runs", "--json")
    [kid] = [r for r in runs if r["parent_id"] == run_id]
    assert kid["status"] == "done" and kid["agent"] == "writer" and kid["depth"] == 1
    first = [m for m in child.requests[0]["messages"] if m["role"] == "user"][0]["content"]
    assert "Write hello to out.txt" in first and "Put a greeting in out.txt" in first  # the original request too
    tool_result = [m for m in head.requests[-1]["messages"] if m["role"] == "tool"][0]["content"]
    assert tool_result == "Wrote out.txt."
    shown = cli.json("show", run_id, "--json")
    assert [c["id"] for c in shown["children"]] == [kid["id"]]


def test_child_asking_for_bash_its_parent_lacks_is_refused(roster, cli, sentinel_home):
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo pwned > pwned.txt"}}]}
    head, child = roster([DELEGATE, "ok"], [bash, "could not"])
    cli("run", "--agent", "orchestrator", "go", check=3)
    [approval] = cli.json("approvals", "--json")
    cli("approve", approval["id"], check=4)
    assert not (sentinel_home / "workspace" / "pwned.txt").exists()
    refusal = [m for m in child.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "not granted" in refusal


def test_runs_and_show_list_children_under_their_parent(roster, cli):
    roster([DELEGATE, "done"], [WRITE, "wrote"])
    cli("run", "--agent", "orchestrator", "x", check=3)
    cli("approve", cli.json("approvals", "--json")[0]["id"], check=4)
    rows = cli.json("runs", "--json")
    parent = next(r for r in rows if r["parent_id"] is None)
    child = next(r for r in rows if r["parent_id"] == parent["id"])
    lines = [line for line in cli("runs", env={"COLUMNS": "250"}, check=0).stdout.splitlines() if line.strip()]
    at = next(i for i, line in enumerate(lines) if parent["id"] in line)
    assert child["id"] in lines[at + 1] and "└" in lines[at + 1]
    shown = cli("show", parent["id"], check=0).stdout
    assert f"child {child['id']} done" in shown
    assert f"parent: {parent['id']}" in cli("show", child["id"], check=0).stdout


def test_inside_an_approved_delegation_granted_tools_run_auto_but_deny_still_stops(roster, cli, sentinel_home,
                                                                                  tmp_path):
    outside = tmp_path / "outside.txt"
    escape = {"tool_calls": [{"name": "write_file", "arguments": {"path": str(outside), "content": "x"}}]}
    roster([DELEGATE, "done"], [WRITE, escape, "wrote"], extra={"policy": {"tools": {"write_file": "needs_approval"}}})
    cli("run", "--agent", "orchestrator", "x", check=3)
    [delegation] = cli.json("approvals", "--json")
    cli("approve", delegation["id"], check=4)  # write_file needs approval by policy, but not inside the delegation
    assert (sentinel_home / "workspace" / "out.txt").read_text() == "hello\n"
    assert not outside.exists()  # paths.outside_workspace: deny still applies inside the child
    child = next(r for r in cli.json("runs", "--json") if r["parent_id"])
    outcomes = [d["outcome"] for d in cli.json("show", child["id"], "--json")["decisions"]]
    assert outcomes == ["auto", "deny"]


def test_the_parent_checkpoints_its_session_file_before_handing_off(roster, cli, sentinel_home):
    """Seed 001: the scribe writes before children start, so what the parent did survives a crash in a child
    (here the operator made delegate auto, so no pause checkpointed it first)."""
    notes = {"tool_calls": [{"name": "write_file", "arguments": {"path": "plan.txt", "content": "step 1\n"}}]}
    roster([notes, DELEGATE, "done"], [WRITE, "wrote"], extra={"policy": {"tools": {"delegate": "auto"}}})
    run_id = __import__("json").loads(cli("run", "--agent", "orchestrator", "--json", "go", check=4).stdout)["id"]
    journal = [__import__("json").loads(line) for line in
               (sentinel_home / "runs" / run_id / "journal.jsonl").read_text().splitlines()]
    kinds = [(r["type"], r.get("title")) for r in journal if r["type"] in ("checkpoint", "child_started")]
    assert kinds.index(("checkpoint", "before children")) < kinds.index(("child_started", None))
    live = (sentinel_home / "runs" / run_id / "session-live.md").read_text()
    assert "plan.txt" in live  # the file the parent touched before it handed off
