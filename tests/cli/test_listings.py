"""Listings a person reads: `approvals` as a table that says where and as whom each call would run, `runs` with
one readable line per run (a watcher's hook session by its watcher), `logs` in words, never JSON."""

from __future__ import annotations

import json
import os
import pwd

import yaml

CLEAN = [{"content": "Cleaning up.", "tool_calls": [{"name": "bash", "arguments": {"command": "rm -rf build/[ab]"}}]},
         "ok"]
NOTIFY = [{"tool_calls": [{"name": "sentinel_act", "arguments": {"action": "notify", "message": "report is due"}}]},
          "Notified."]


def _me() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def _json_in(line: str) -> bool:
    return "{" in line or line.lstrip().startswith("[")


def test_approvals_is_a_table_with_the_call_its_user_and_its_workspace(scripted_server, configure, cli, sentinel_home):
    configure(server=scripted_server(CLEAN))
    run_id = cli.json("run", "clean up", "--json", check=3)["id"]
    header, row, blank, *whole = cli("approvals", check=0).stdout.splitlines()
    assert header.split() == ["approval", "asks", "run", "tool", "call", "runs", "as", "workspace", "why"]
    assert not blank and not _json_in(row)
    # under the table, each pending call in full (sentinel/ui/render.py call_in_full)
    assert whole[0].startswith(f"approval {row.split()[0]}: run {run_id} asks to run bash")
    assert "  command: rm -rf build/[ab]" in whole
    workspace = str(sentinel_home / "workspace")
    cells = row.split()
    # `asks`: which coding agent asks through its hook (docs/hooks.md), or `sentinel` for Sentinel's own runs
    assert cells[0].startswith("a-") and cells[1] == "sentinel" and cells[2] == run_id and cells[3] == "bash"
    assert "rm -rf build/[ab]" in row and _me() in cells and workspace in cells
    (listed,) = cli.json("approvals", "--json")
    assert (listed["user"], listed["workspace"]) == (_me(), workspace)


def test_runs_keeps_a_long_task_on_one_line_and_names_a_watchers_firing(scripted_server, configure, cli,
                                                                         sentinel_home):
    configure(server=scripted_server(NOTIFY + ["done"]))
    watcher = {"id": "nightly", "eventName": "report.due", "strategy": {"type": "schedule", "intervalS": 3600},
               "fire": {"operatorGoal": "Tell the operator the report is due."}, "hookResponseTimeoutMs": 20000}
    (sentinel_home / "watchers").mkdir()
    (sentinel_home / "watchers" / "nightly.yaml").write_text(yaml.safe_dump(watcher))
    cli("watch", "fire", "nightly", check=0)
    task = "Summarise the build log\nthen list [red]every[/red] failing test " + "with its owner " * 20
    cli("run", task, check=4)  # nothing the harness can check: done_unverified
    header, newest, hook = cli("runs", check=0).stdout.splitlines()
    assert header.split() == ["id", "status", "agent", "model", "created", "task"]
    # as written, not markup; its newline shown as `\n` on the one line
    assert "Summarise the build log\\nthen list [red]every[/red] failing test" in newest
    assert newest.rstrip().endswith("…")
    assert "⚑ watcher nightly fired (report.due)" in hook and not _json_in(hook)


def test_logs_prints_lines_for_people_never_json(scripted_server, configure, cli):
    configure(server=scripted_server(CLEAN))
    run_id = cli.json("run", "clean up", "--json", check=3)["id"]
    lines = cli("logs", run_id, check=0, timeout=20).stdout.splitlines()
    assert lines and not [line for line in lines if _json_in(line)]
    assert any(line.startswith("✉ user: clean up") for line in lines)
    assert any("▸ bash rm -rf build/[ab] → needs_approval" in line for line in lines)
    assert [json.loads(line)["type"] for line in cli("logs", run_id, "--json", check=0).stdout.splitlines()][-1] == \
        "paused"  # the events themselves are still there, for scripts


def test_show_says_who_answered_each_approval_and_json_has_the_events(scripted_server, configure, cli):
    configure(server=scripted_server(CLEAN))
    run_id = cli.json("run", "clean up", "--json", check=3)["id"]
    (pending,) = cli.json("approvals", "--json")
    cli("deny", pending["id"], "--reason", "not the build dir", check=1)  # its only call denied: the run failed
    shown = cli("show", run_id, check=0).stdout
    [line] = [ln for ln in shown.splitlines() if "bash" in ln and "needs_approval" in ln]
    assert line.rstrip().endswith(f"; denied by {_me()}: not the build dir"), line
    doc = cli.json("show", run_id, "--json")
    kinds = [e["type"] for e in doc["events"]]
    assert kinds and kinds[0] == "run_started" and "paused" in kinds, kinds
    assert doc["events"] == [json.loads(ln) for ln in cli("logs", run_id, "--json", check=0).stdout.splitlines()]


def test_chats_keeps_a_long_title_on_one_line_in_a_pipe(scripted_server, configure, cli, sentinel_home):
    import subprocess
    import sys

    configure(server=scripted_server(["ok"]))
    title = "Summarise the build log then list every failing test " + "with its owner " * 6
    subprocess.run([sys.executable, "-m", "sentinel", "chat"], input=title + "\n", capture_output=True, text=True,
                   env={**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "k", "SENTINEL_MODE": "local"},
                   timeout=60, check=True)
    header, row = cli("chats", check=0).stdout.splitlines()  # piped: one line per session
    assert header.split() == ["id", "status", "agent", "last", "active", "title"]
    assert row.split()[0].startswith("r-") and title[:50] in row
