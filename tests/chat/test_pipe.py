"""Not a terminal: `printf 'task\\ny\\n' | sentinel chat` reads line by line, so a chat can be scripted."""

from __future__ import annotations

import subprocess
import sys

COUNT = {"content": "Counting.", "tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]}


def piped(chat_env, text: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sentinel", "chat", *args], input=text, capture_output=True,
                          text=True, env=chat_env, timeout=60)


def test_lines_chat_answer_the_approval_and_continue_the_session(model, chat_env, sentinel_home):
    server = model([COUNT, "It ran.", "Still here."])
    first = piped(chat_env, "count\ny\n")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "It ran.\n"  # only the answers, no escape sequences
    assert "approval a-" in first.stderr and "echo ran >> counter.txt" in first.stderr
    assert (sentinel_home / "workspace" / "counter.txt").read_text() == "ran\n"
    second = piped(chat_env, "anything else?\n")
    assert second.stdout == "Still here.\n" and "↻ session r-" in second.stderr and "«count»" in second.stderr
    assert [m["role"] for m in server.requests[-1]["messages"]][-2:] == ["assistant", "user"]


def test_end_of_input_at_the_question_leaves_the_approval_pending(model, chat_env, cli):
    model([COUNT, "It ran."])
    out = piped(chat_env, "count\n")
    assert out.returncode == 0
    (pending,) = cli.json("approvals", "--json", env={"SENTINEL_MODE": "local"})
    assert f"stays pending: sentinel approve {pending['id']}" in out.stderr
    resumed = piped(chat_env, "y\n")  # the next chat asks again, and the answer resolves that same approval
    assert resumed.stdout == "It ran.\n" and cli.json("approvals", "--json", env={"SENTINEL_MODE": "local"}) == []


def test_what_cannot_run_says_why_in_one_line_and_sends_nothing(model, chat_env, sentinel_home):
    server = model(["hi"])
    (sentinel_home / "workflows").mkdir()
    (sentinel_home / "workflows" / "triage.yaml").write_text("steps: []\n")
    out = piped(chat_env, "@reviewer look at this\n/workflow run triage\n/memory doors\n/nonsense\n")
    assert out.returncode == 0 and server.requests == []
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 4 and "no agent 'reviewer'" in errors[0] and "triage.yaml" in errors[1]
    assert "unknown command /nonsense" in errors[3]


def test_at_name_hands_the_message_to_that_specialist_and_workflows_run(model, chat_env, sentinel_home):
    server = model(["Reviewed.", "Step one.", "Step two."])
    (sentinel_home / "agents").mkdir()
    (sentinel_home / "agents" / "reviewer.yaml").write_text("description: reviews\n")
    (sentinel_home / "workflows").mkdir()
    (sentinel_home / "workflows" / "triage.yaml").write_text(
        "steps:\n  - {name: a, agent: reviewer, task: 'look at {{input}}'}\n")
    out = piped(chat_env, "@reviewer look at this\n/workflow run triage the door\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "Reviewed." and "Reviewed." in out.stdout.splitlines()[-1]
    users = [[m["content"] for m in r["messages"] if m["role"] == "user"] for r in server.requests]
    assert users == [["look at this"], ["look at the door"]]


def test_restore_names_a_session_or_says_in_one_line_why_not(model, chat_env, cli):
    model(["done"])
    run_id = cli.json("run", "a plain task", "--json", env={"SENTINEL_MODE": "local"})["id"]
    for ident, why in ((run_id, "is not a chat session"), ("r-0000000000", "no run 'r-0000000000'")):
        out = subprocess.run([sys.executable, "-m", "sentinel", "restore", ident], input="", capture_output=True,
                             text=True, env=chat_env, timeout=60)
        assert out.returncode == 2 and why in out.stderr and "Traceback" not in out.stderr


def test_a_turn_that_changed_files_says_so_whatever_the_answer_and_undo_puts_it_back(model, chat_env,
                                                                                      sentinel_home):
    """The agent door's chat ran `date > when.txt`, then answered "I did not receive any input from the operator.":
    the chat shows what the turn changed as the harness saw it, and /undo puts it back."""
    stamp = {"tool_calls": [{"name": "bash", "arguments": {"command": "date > when.txt"}}]}
    model([stamp, "I did not receive any input from the operator."])
    out = piped(chat_env, "Put the date in when.txt\ny\n/undo\n")
    assert out.returncode == 0, out.stderr
    assert "I did not receive any input from the operator." in out.stdout
    assert "changed: step 1 bash: changed when.txt (/undo puts it back)" in out.stderr
    assert "removed when.txt" in out.stdout + out.stderr
    assert not (sentinel_home / "workspace" / "when.txt").exists()
