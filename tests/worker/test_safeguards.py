"""A run ends `done` only on an answer it earned: tool calls written as text, empty answers, claims no call
backs and missing output files are sent back, then fail the run; repeated calls are not run twice and a run
that repeats itself is stopped. `run --json` names each safeguard that fired."""

from __future__ import annotations

import json

FAKE_CALL = '{"name": "create_note", "arguments": {"title": "Linux", "content": "- kernel\\n- shell\\n- files"}}'
TASK = "Create notes.md with three bullet points about Linux"
NOTES = {"name": "write_file", "arguments": {"path": "notes.md", "content": "- kernel\n- shell\n- files\n"}}


def _events(cli, run_id):
    return [json.loads(line) for line in cli("logs", run_id, "--json", check=0).stdout.splitlines()]


def _tool_results(cli, run_id):
    return [m["content"] for m in cli.json("show", run_id, "--json")["messages"] if m["role"] == "tool"]


def test_an_invented_tool_call_as_plain_text_never_ends_the_run_done(scripted_server, configure, cli, sentinel_home):
    server = scripted_server([FAKE_CALL])  # the last reply repeats: the model never does better
    configure(server=server)
    proc = cli("run", TASK, "--json", check=1)
    out = json.loads(proc.stdout)
    assert out["status"] == "failed" and "create_note" in out["error"] and "tool_call_as_text" in out["error"]
    assert out["safeguards"] == ["tool_call_as_text"]
    assert not (sentinel_home / "workspace" / "notes.md").exists()
    assert len(server.requests) == 3  # the reply, then two corrections, then the run stops
    correction = server.requests[1]["messages"][-1]
    assert correction["role"] == "user" and "create_note" in correction["content"]
    assert "write_file" in correction["content"]  # it names the tools that exist
    kinds = [(e["type"], e.get("kind"), e.get("action")) for e in _events(cli, out["id"]) if e["type"] == "safeguard"]
    assert kinds == [("safeguard", "tool_call_as_text", "retry")] * 2 + [("safeguard", "tool_call_as_text", "stopped")]


def test_the_correction_lets_the_model_make_the_real_call(scripted_server, configure, cli, sentinel_home):
    configure(server=scripted_server([f"```json\n{FAKE_CALL}\n```", {"tool_calls": [NOTES]}, "Created notes.md."]))
    out = cli.json("run", TASK, "--json", check=0)
    assert out["status"] == "done" and out["output"] == "Created notes.md."
    assert out["safeguards"] == ["tool_call_as_text"]
    assert (sentinel_home / "workspace" / "notes.md").read_text().count("- ") == 3
    ended = [e for e in _events(cli, out["id"]) if e["type"] == "model_call_ended"]
    assert ended[0]["rejected"] == "tool_call_as_text" and ended[-1]["rejected"] == ""
    assert "not an answer (tool_call_as_text)" in cli("logs", out["id"], check=0).stdout


def test_an_empty_answer_is_not_done(scripted_server, configure, cli):
    configure(server=scripted_server([""]))
    out = cli.json("run", "What is the capital of France?", "--json", check=1)
    assert out["status"] == "failed" and "empty answer" in out["error"] and out["safeguards"] == ["empty_answer"]


def test_an_empty_answer_gets_a_second_chance(scripted_server, configure, cli):
    configure(server=scripted_server(["", "Paris."]))
    out = cli.json("run", "What is the capital of France?", "--json", check=4)
    assert out["output"] == "Paris." and out["safeguards"] == ["empty_answer"]


def test_an_answer_claiming_a_change_no_call_made_fails(scripted_server, configure, cli):
    configure(server=scripted_server(["I updated the shopping list with milk and eggs."]))
    out = cli.json("run", "Add milk and eggs to my shopping list", "--json", check=1)
    assert out["status"] == "failed" and "no tool call made" in out["error"]
    assert out["safeguards"] == ["unbacked_claim"]


def test_a_plain_answer_to_a_question_is_still_done(scripted_server, configure, cli):
    configure(server=scripted_server([{"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
                                      "The workspace is empty."]))
    out = cli.json("run", "What is in the workspace?", "--json", check=4)
    assert out["output"] == "The workspace is empty." and "safeguards" not in out


def test_a_task_whose_output_file_is_missing_is_flagged_and_fails(scripted_server, configure, cli, sentinel_home):
    wrong = {"name": "write_file", "arguments": {"path": "output.txt", "content": "hello"}}
    configure(server=scripted_server([{"tool_calls": [wrong]}, "Saved the output."]))
    out = cli.json("run", "Run hello.py and save its output to out.txt", "--json", check=1)
    assert out["status"] == "failed" and "out.txt" in out["error"] and out["safeguards"] == ["missing_output"]
    assert (sentinel_home / "workspace" / "output.txt").exists()
    shown = cli.json("show", out["id"], "--json")
    assert [g["kind"] for g in shown["safeguards"]] == ["missing_output"] * 3


def test_the_same_call_twice_in_a_row_runs_once(scripted_server, configure, cli, sentinel_home):
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "1"}}
    configure(server=scripted_server([{"tool_calls": [write]}, {"tool_calls": [write]}, "Wrote a.txt."]))
    out = cli.json("run", "write 1 into a.txt", "--json", check=0)
    assert out["status"] == "done" and out["safeguards"] == ["duplicate_call"]
    events = _events(cli, out["id"])
    assert sum(e["type"] == "tool_call_begin" for e in events) == 1  # executed once
    assert len(cli.json("show", out["id"], "--json")["decisions"]) == 1
    first, second = _tool_results(cli, out["id"])
    assert second.startswith(first) and "not run again" in second


def test_a_repeated_call_is_told_where_the_tasks_checks_stand(scripted_server, configure, cli, sentinel_home):
    """A small model that redoes finished work hears that the workspace meets the task's file checks; one that
    repeats a call beside the point hears what is still missing (checked on the workspace, not its word)."""
    write = {"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}}
    configure(server=scripted_server([{"tool_calls": [write]}, {"tool_calls": [write]}, "Created hello.txt."]))
    out = cli.json("run", "Create a file hello.txt containing the word hi", "--json", check=0)
    _, second = _tool_results(cli, out["id"])
    assert "meets the task's file checks (create hello.txt)" in second and "final answer now" in second

    wrong = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "hi"}}
    configure(server=scripted_server([{"tool_calls": [wrong]}, {"tool_calls": [wrong]}, "Done."]))
    out = cli.json("run", "Create a file greeting.txt containing the word hi", "--json", check=1)
    _, second = _tool_results(cli, out["id"])
    assert "Still to do for this task: greeting.txt does not exist" in second


def test_a_run_repeating_itself_is_stopped(scripted_server, configure, cli):
    server = scripted_server([{"repeat": 20, "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}])
    configure(server=server)
    out = cli.json("run", "look around", "--json", check=1)
    assert out["status"] == "failed" and "repeated the same tool call(s) 4 turns in a row" in out["error"]
    assert out["safeguards"] == ["duplicate_call", "loop"] and len(server.requests) == 4
    shown = cli.json("show", out["id"], "--json")
    calls = [c["id"] for m in shown["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert sorted(calls) == sorted(m["tool_call_id"] for m in shown["messages"] if m["role"] == "tool")


def test_two_calls_taking_turns_are_a_loop_too(scripted_server, configure, cli):
    a = {"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}
    b = {"tool_calls": [{"name": "read_file", "arguments": {"path": "x.txt"}}]}
    configure(server=scripted_server([a, b, a, b, a, b, "never reached"]))
    out = cli.json("run", "look around", "--json", check=1)
    assert "taking turns" in out["error"] and "loop" in out["safeguards"]


def test_file_content_sent_as_a_list_of_lines_is_written_as_those_lines(scripted_server, configure, cli,
                                                                        sentinel_home):
    lines = {"name": "write_file", "arguments": {"path": "notes.md", "content": ["- kernel", "- shell", "- files"]}}
    configure(server=scripted_server([{"tool_calls": [lines]}, "Created notes.md."]))
    out = cli.json("run", TASK, "--json", check=0)
    assert out["status"] == "done" and "safeguards" not in out
    assert (sentinel_home / "workspace" / "notes.md").read_text() == "- kernel\n- shell\n- files"


def test_the_default_models_own_shape_is_recovered_and_its_invented_tool_sent_back(scripted_server, configure, cli,
                                                                                   sentinel_home):
    """What local/qwen2.5-coder-1.5b wrote for this task: `function` naming the tool, content as a list of lines."""
    invented = '```json\n{"function": "create_note", "arguments": {"title": "Linux", "content": ["- a"]}}\n```'
    real = ('```json\n{"function": "write_file", "arguments": {"path": "notes.md", '
            '"content": ["- a", "- b", "- c"]}}\n```')
    configure(server=scripted_server([invented, real, "Created notes.md."]))
    out = cli.json("run", TASK, "--json", check=0)
    assert out["safeguards"] == ["tool_call_as_text", "recovered_tool_call"]
    assert (sentinel_home / "workspace" / "notes.md").read_text() == "- a\n- b\n- c"


def test_a_failed_last_command_does_not_end_a_file_task_done(scripted_server, configure, cli, sentinel_home):
    """The model ran a command that failed and answered as if it had worked: sent back, then the run fails."""
    run = {"name": "bash", "arguments": {"command": "PATH=/nonexistent python report.py > report.txt"}}
    configure(server=scripted_server([{"tool_calls": [run]}, "The output is saved in report.txt."]))
    paused = cli.json("run", "Run the script report.py and save its output to report.txt.", "--json", check=3)
    out = cli.json("approve", paused["id"], "--json", check=1)  # bash asks a person by default
    assert out["status"] == "failed" and out["safeguards"] == ["unresolved_error"]
    assert "last tool call failed" in out["error"]
    results = _tool_results(cli, out["id"])
    assert "use `python3`" in results[0]  # the missing `python` gets a hint, not just "not found"


def test_a_failed_command_fixed_by_the_next_call_is_done(scripted_server, configure, cli, sentinel_home):
    (sentinel_home / "workspace").mkdir(exist_ok=True)
    (sentinel_home / "workspace" / "report.py").write_text("print('42 widgets')\n")
    wrong = {"name": "bash", "arguments": {"command": "PATH=/nonexistent python report.py > report.txt"}}
    right = {"name": "bash", "arguments": {"command": "python3 report.py > report.txt"}}
    server = scripted_server([{"tool_calls": [wrong]}, "Saved report.txt.", {"tool_calls": [right]},
                              "Saved report.txt."])
    configure(server=server)
    paused = cli.json("run", "Run the script report.py and save its output to report.txt.", "--json", check=3)
    cli.json("approve", paused["id"], "--json", check=3)
    out = cli.json("approve", paused["id"], "--json", check=0)
    assert out["status"] == "done"
    fired = cli.json("show", out["id"], "--json")["safeguards"]
    assert [(g["kind"], g["action"]) for g in fired] == [("unresolved_error", "retry")]
    assert (sentinel_home / "workspace" / "report.txt").read_text() == "42 widgets\n"
    correction = server.requests[2]["messages"][-1]["content"]
    assert correction.startswith("[sentinel] Your last tool call failed") and "python3" in correction


def test_a_question_answered_after_a_command_that_found_nothing_is_done(scripted_server, configure, cli):
    """grep's exit 1 (no match) is an answer to a question, not a failure: no file asked for, nothing claimed."""
    grep = {"name": "bash", "arguments": {"command": "grep -c ERROR app.log"}}
    configure(server=scripted_server([{"tool_calls": [grep]}, "No, there are no errors in app.log."]))
    out = cli.json("run", "Does app.log contain errors?", "--json", check=4)  # grep is read-only: no approval
    assert out["status"] == "done_unverified" and "safeguards" not in out


def test_a_change_request_answered_without_any_change_fails(scripted_server, configure, cli, sentinel_home):
    """The default model called edit_soul (refused) for "change the port", then answered: not done."""
    (sentinel_home / "workspace").mkdir(exist_ok=True)
    (sentinel_home / "workspace" / "config.ini").write_text("host = a\nport = 8080\n")
    soul = {"name": "edit_soul", "arguments": {"content": "port = 9090"}}
    read = {"name": "read_file", "arguments": {"path": "config.ini"}}
    configure(server=scripted_server([{"tool_calls": [read]}, {"tool_calls": [soul]},
                                      "I did not receive any input to work on."]))
    out = cli.json("run", "In config.ini change the port from 8080 to 9090.", "--json", check=1)
    assert out["status"] == "failed" and out["safeguards"] == ["soul_edit_refused", "no_change"]
    assert "asks for a change and no tool call made one" in out["error"]


def test_a_change_request_met_after_the_correction_is_done(scripted_server, configure, cli, sentinel_home):
    (sentinel_home / "workspace").mkdir(exist_ok=True)
    (sentinel_home / "workspace" / "config.ini").write_text("host = a\nport = 8080\n")
    edit = {"name": "edit_file", "arguments": {"path": "config.ini", "old_string": "8080", "new_string": "9090"}}
    read = {"name": "read_file", "arguments": {"path": "config.ini"}}
    server = scripted_server([{"tool_calls": [read]}, "The port is now 9090.", {"tool_calls": [edit]},
                              "Changed the port to 9090."])
    configure(server=server)
    out = cli.json("run", "In config.ini change the port from 8080 to 9090.", "--json", check=0)
    assert out["status"] == "done" and (sentinel_home / "workspace" / "config.ini").read_text().endswith("9090\n")
    assert "no tool call has changed anything" in server.requests[2]["messages"][-1]["content"]


def test_what_asks_for_a_change():
    from sentinel.worker.safeguards.answer import asks_for_change

    for request in ("In config.ini change the port from 8080 to 9090.", "Delete every .tmp file.",
                    "Please rename draft.txt to final.txt", "Sort the lines of names.txt.", "Add a line to env.sh",
                    "Fix the bug in calc.py so that the test passes", "Write a Python script hello.py"):
        assert asks_for_change(request), request
    for request in ("Which version is set in setup.cfg?", "What is our staging server called?",
                    "Does app.log contain errors?", "Remember this for later: the server is heron-7.",
                    "How do I change the port?", "What would you add to this list?"):
        assert not asks_for_change(request), request


def test_a_made_up_number_after_tool_calls_is_sent_back(scripted_server, configure, cli, sentinel_home):
    """The default model summed a column with the wrong awk field (0), then answered 12345: no result shows it."""
    (sentinel_home / "workspace").mkdir(exist_ok=True)
    (sentinel_home / "workspace" / "sales.csv").write_text("item,amount\na,250\nb,252\n")
    read = {"name": "read_file", "arguments": {"path": "sales.csv"}}
    wrong = {"name": "write_file", "arguments": {"path": "total.txt", "content": "0"}}
    server = scripted_server([{"tool_calls": [read]}, {"tool_calls": [wrong]}, "The total amount of sales is 12345."])
    configure(server=server)
    out = cli.json("run", "Add up the amount column of sales.csv and write the total to total.txt.", "--json",
                   check=1)
    assert out["status"] == "failed" and out["safeguards"] == ["ungrounded_number"]
    assert "12345" in out["error"]
    assert "no tool result shows that number" in server.requests[3]["messages"][-1]["content"]


def test_numbers_an_answer_draws_from_results_or_the_request_pass():
    from sentinel.worker.safeguards.answer import ungrounded

    evidence = "Which version is set in setup.cfg?\n[metadata]\nversion = 2.14.1\nport = 8,080\nexit code: 0\n502"
    assert ungrounded("The version is 2.14.1; the port is 8080; the total is 502.", evidence) == []
    assert ungrounded("There are 3 files.", evidence) == []  # one digit: counts a model can see at a glance
    assert ungrounded("The total is 12,345 and 7.5% of 2.14.1", evidence) == ["12,345", "7.5"]


def test_a_task_run_on_a_local_model_is_offered_the_focused_tools(sentinel_home):
    """No edit_soul or authoring tools for a task on the embedded model (it picked edit_soul to edit config.ini);
    a chat keeps them, and so does `local.tool_set: all`."""
    from sentinel import config as config_mod
    from sentinel.engine.state import RunState
    from sentinel.worker.setup import FOCUS_HIDDEN, focused

    config = config_mod.load(sentinel_home)
    assert focused(config, RunState(model="local/qwen2.5-coder-1.5b", kind="task"))
    assert not focused(config, RunState(model="local/qwen2.5-coder-1.5b", kind="chat"))
    assert not focused(config, RunState(model="openai/gpt-4o", kind="task"))
    (sentinel_home / "config.yaml").write_text("local:\n  tool_set: all\n")
    assert not focused(config_mod.load(sentinel_home), RunState(model="local/qwen2.5-coder-1.5b", kind="task"))
    assert {"edit_soul", "update_user", "create_tool"} <= FOCUS_HIDDEN and "recall" not in FOCUS_HIDDEN


def test_a_focused_run_is_offered_a_hidden_tool_its_task_names():
    """Asked to use edit_soul, a task on the embedded model was not offered it and wrote soul.txt in the workspace
    instead, then ended done: a tool the task names by name is offered; the others stay hidden."""
    from sentinel.worker.setup import focus

    names = {"read_file", "write_file", "edit_soul", "update_user", "create_tool"}
    assert focus(names, "Use edit_soul to make your soul mention patience.") == {"read_file", "write_file",
                                                                                 "edit_soul"}
    assert focus(names, "Rewrite soul.txt about patience.") == {"read_file", "write_file"}
    assert "edit_soul" not in focus(names, "Run my-edit_soul-script.sh")


def test_an_answer_about_a_file_never_opened_is_sent_back(scripted_server, configure, cli, sentinel_home):
    """The default model answered "Which version is set in setup.cfg?" without reading it: read it first."""
    (sentinel_home / "workspace").mkdir(exist_ok=True)
    (sentinel_home / "workspace" / "setup.cfg").write_text("[metadata]\nversion = 2.7.1\n")
    read = {"name": "read_file", "arguments": {"path": "setup.cfg"}}
    server = scripted_server(["The version is 1.0.", {"tool_calls": [read]}, "The version is 2.7.1."])
    configure(server=server)
    out = cli.json("run", "Which version is set in setup.cfg?", "--json", check=4)
    assert out["output"] == "The version is 2.7.1." and out["safeguards"] == ["unread_input"]
    correction = server.requests[1]["messages"][-1]["content"]
    assert "setup.cfg" in correction and '"read_file"' in correction


def test_writing_over_a_file_the_run_never_read_is_refused(scripted_server, configure, cli, sentinel_home):
    """write_file replaces a whole file: over an existing one the run has not looked at, it is refused and the
    file is kept; once read, the write goes through."""
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "setup.cfg").write_text("[metadata]\nversion = 2.7.1\nname = demo\n")
    blind = {"name": "write_file", "arguments": {"path": "setup.cfg", "content": "version = 1.0"}}
    read = {"name": "read_file", "arguments": {"path": "setup.cfg"}}
    whole = {"name": "write_file", "arguments": {"path": "setup.cfg",
                                                 "content": "[metadata]\nversion = 2.8.0\nname = demo\n"}}
    configure(server=scripted_server([{"tool_calls": [blind]}, {"tool_calls": [read]}, {"tool_calls": [whole]},
                                      "Set the version in setup.cfg to 2.8.0."]))
    out = cli.json("run", "Set the version in setup.cfg to 2.8.0.", "--json", check=0)
    assert out["status"] == "done" and out["safeguards"] == ["unread_overwrite"]
    results = _tool_results(cli, out["id"])
    assert results[0].startswith("Error: not written: setup.cfg exists and you have not read it")
    assert (ws / "setup.cfg").read_text() == "[metadata]\nversion = 2.8.0\nname = demo\n"


def test_a_change_request_whose_call_was_denied_fails_with_the_models_report(scripted_server, configure, cli):
    """A denied call left the task undone: however honest the answer, the run is not `done`. It fails at once
    (no correction: the way on is the operator's), and its error carries the model's report."""
    rm = {"name": "bash", "arguments": {"command": "rm -rf build"}}
    server = scripted_server([{"tool_calls": [rm]}, "You can try running the command again."])
    configure({"policy": {"bash": {"default": "deny"}}}, server=server)
    out = cli.json("run", "Delete the build directory.", "--json", check=1)
    assert out["status"] == "failed" and out["safeguards"] == ["denied_undone"]
    assert "denied" in out["error"] and "You can try running the command again." in out["error"]
    assert len(server.requests) == 2


def test_a_run_whose_only_call_the_operator_denied_is_not_done(scripted_server, configure, cli):
    """Not a change request, and the answer reads like success: every call was denied, so nothing was done."""
    date = {"name": "bash", "arguments": {"command": "date > when.txt"}}
    configure(server=scripted_server([{"tool_calls": [date]}, "The command ran successfully."]))
    paused = cli.json("run", "Run date and keep its output in when.txt.", "--json", check=3)
    out = cli.json("deny", paused["approval_id"], "--reason", "not now", "--json", check=1)
    assert out["status"] == "failed" and "every tool call was denied" in out["error"]


def test_a_denied_call_followed_by_work_that_did_the_task_is_done(scripted_server, configure, cli, sentinel_home):
    """The legitimate neighbour: policy denied one way, another call made the change."""
    rm = {"name": "bash", "arguments": {"command": "rm -rf build"}}
    write = {"name": "write_file", "arguments": {"path": "build.txt", "content": "cleaned\n"}}
    configure({"policy": {"bash": {"default": "deny"}}},
              server=scripted_server([{"tool_calls": [rm]}, {"tool_calls": [write]}, "Recorded the clean-up."]))
    out = cli.json("run", "Delete the build directory.", "--json", check=4)
    assert out["status"] == "done_unverified"


def test_a_command_that_changed_no_file_is_not_a_change(scripted_server, configure, cli, sentinel_home):
    """The default model ran a sed that matched nothing (exit 0) and said "I set debug to false"."""
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "settings.json").write_text('{\n  "debug": true\n}\n')
    miss = {"name": "bash", "arguments": {"command": "sed -i 's/debug true/debug false/' settings.json"}}
    hit = {"name": "bash", "arguments": {"command": "sed -i 's/\"debug\": true/\"debug\": false/' settings.json"}}
    server = scripted_server([{"tool_calls": [miss]}, "I set debug to false.", {"tool_calls": [hit]},
                              "I set debug to false."])
    configure({"policy": {"bash": {"default": "auto"}}}, server=server)
    out = cli.json("run", "In settings.json set debug to false.", "--json", check=0)
    assert out["status"] == "done" and out["safeguards"] == ["no_change"]
    assert (ws / "settings.json").read_text() == '{\n  "debug": false\n}\n'


def test_a_question_does_not_change_the_file_it_asks_about(scripted_server, configure, cli, sentinel_home):
    """The default model, asked which version setup.cfg sets, read it, bumped the version to 2.7.2 and answered
    with the new number: a question's edits are refused and the file is kept."""
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "setup.cfg").write_text("[metadata]\nversion = 2.7.1\n")
    read = {"name": "read_file", "arguments": {"path": "setup.cfg"}}
    bump = {"name": "edit_file", "arguments": {"path": "setup.cfg", "old_string": "version = 2.7.1",
                                               "new_string": "version = 2.7.2"}}
    blind = {"name": "write_file", "arguments": {"path": "setup.cfg", "content": "version = 2.7.2\n"}}
    configure(server=scripted_server([{"tool_calls": [read]}, {"tool_calls": [bump]}, {"tool_calls": [blind]},
                                      "setup.cfg sets version 2.7.1."]))
    out = cli.json("run", "Which version is set in setup.cfg?", "--json", check=4)
    assert out["status"] == "done_unverified" and out["output"] == "setup.cfg sets version 2.7.1."
    assert out["safeguards"] == ["unasked_change"]
    assert (ws / "setup.cfg").read_text() == "[metadata]\nversion = 2.7.1\n"
    results = _tool_results(cli, out["id"])
    assert results[1].startswith("Error: not changed: setup.cfg was kept") and results[2] == results[1]


def test_a_request_phrased_as_a_question_still_gets_its_change(scripted_server, configure, cli, sentinel_home):
    """"Can you ...?" asks for work, and a question that also asks for a change is a change request."""
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "notes.md").write_text("- one\n")
    read = {"name": "read_file", "arguments": {"path": "notes.md"}}
    edit = {"name": "edit_file", "arguments": {"path": "notes.md", "old_string": "- one", "new_string": "- two"}}
    configure(server=scripted_server([{"tool_calls": [read]}, {"tool_calls": [edit]}, "Changed it to two."]))
    out = cli.json("run", "Can you change 'one' to 'two' in notes.md?", "--json", check=4)
    assert out["status"] == "done_unverified" and "safeguards" not in out
    assert (ws / "notes.md").read_text() == "- two\n"


def test_what_is_a_question():
    from sentinel.worker.safeguards.answer import asks_question
    assert asks_question("Which version is set in setup.cfg?")
    assert asks_question("How many lines does app.log have?")
    assert not asks_question("Can you fix calc.py?")
    assert not asks_question("What is wrong in calc.py? Fix it.")
    assert not asks_question("Which file is the largest? Save its name to largest.txt?")
    assert not asks_question("Fix the bug in calc.py")


def test_a_config_file_broken_by_the_change_is_flagged_and_sent_back(scripted_server, configure, cli, sentinel_home):
    """The default model replaced settings.json with `debug = false` (echo > settings.json), then said it had no
    instructions: the broken JSON is flagged at once and the answer is sent back until the file parses."""
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "settings.json").write_text('{\n  "debug": true\n}\n')
    clobber = {"name": "bash", "arguments": {"command": "echo 'debug = false' > settings.json"}}
    read = {"name": "read_file", "arguments": {"path": "settings.json"}}
    mend = {"name": "write_file", "arguments": {"path": "settings.json", "content": '{\n  "debug": false\n}\n'}}
    server = scripted_server([{"tool_calls": [read]}, {"tool_calls": [clobber]},
                              "I did not receive any input or instructions.", {"tool_calls": [mend]},
                              "Set debug to false."])
    configure({"policy": {"bash": {"default": "auto"}}}, server=server)
    out = cli.json("run", "In settings.json set debug to false.", "--json", check=0)
    assert out["status"] == "done" and out["safeguards"] == ["invalid_file"]
    assert json.loads((ws / "settings.json").read_text()) == {"debug": False}
    results = _tool_results(cli, out["id"])
    assert "[sentinel note] settings.json is not valid JSON" in results[1]
    assert "settings.json is not valid JSON" in server.requests[3]["messages"][-1]["content"]


def test_a_command_replacing_a_file_the_run_never_read_is_refused(scripted_server, configure, cli, sentinel_home):
    """`echo "debug = false" > settings.json` before any read: refused before it is decided (nobody is asked to
    approve a blind overwrite) and the file is kept; appending, stderr and new files are not held."""
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "settings.json").write_text('{\n  "debug": true\n}\n')
    (ws / "log.txt").write_text("one\n")
    clobber = {"name": "bash", "arguments": {"command": "echo 'debug = false' > settings.json"}}
    others = {"name": "bash", "arguments": {"command": "echo two >> log.txt; echo x 2>/dev/null > new.txt >&2"}}
    server = scripted_server([{"tool_calls": [clobber]}, {"tool_calls": [others]}, "I did not change settings.json."])
    configure(server=server)  # bash needs approval by default: the refused call never asks
    out = cli.json("run", "In settings.json set debug to false.", "--json", check=3)
    assert out["status"] == "waiting_approval" and out["safeguards"] == ["unread_overwrite"]
    assert (ws / "settings.json").read_text() == '{\n  "debug": true\n}\n'
    assert _tool_results(cli, out["id"])[0].startswith("Error: not written: settings.json exists and you have not")
    assert cli.json("show", out["id"], "--json")["pending_approvals"][0]["arguments"] == others["arguments"]


def test_a_config_file_left_broken_fails_the_run(scripted_server, configure, cli, sentinel_home):
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "app.yaml").write_text("debug: true\n")
    read = {"name": "read_file", "arguments": {"path": "app.yaml"}}
    broken = {"name": "write_file", "arguments": {"path": "app.yaml", "content": "debug: [false\n"}}
    configure(server=scripted_server([{"tool_calls": [read]}, {"tool_calls": [broken]}, "Done."]))
    out = cli.json("run", "In app.yaml set debug to false.", "--json", check=1)
    assert out["status"] == "failed" and "app.yaml is not valid YAML" in out["error"]


def test_a_question_about_a_broken_file_is_still_answered(scripted_server, configure, cli, sentinel_home):
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "broken.json").write_text('{"a": 1,,}')
    read = {"name": "read_file", "arguments": {"path": "broken.json"}}
    configure(server=scripted_server([{"tool_calls": [read]}, "It has two commas in a row."]))
    out = cli.json("run", "What is wrong with broken.json?", "--json", check=4)
    assert out["status"] == "done_unverified" and "safeguards" not in out


CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = "from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n"
FIX_TASK = "python3 test_calc.py fails. Fix the bug in calc.py so that the test passes; do not change test_calc.py."


def _calc_workspace(sentinel_home):
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "calc.py").write_text(CALC)
    (ws / "test_calc.py").write_text(TEST_CALC)
    return ws


def test_a_fix_whose_test_was_not_run_after_it_is_sent_back(scripted_server, configure, cli, sentinel_home):
    """The default model changed calc.py wrongly and answered "Fixed": the task says the test must pass, so the
    answer waits for a run of that test, after the change, that exits 0."""
    ws = _calc_workspace(sentinel_home)
    read = [{"name": "read_file", "arguments": {"path": "test_calc.py"}},
            {"name": "read_file", "arguments": {"path": "calc.py"}}]
    wrong = {"name": "edit_file", "arguments": {"path": "calc.py", "old_string": "a - b", "new_string": "a * b"}}
    test = {"name": "bash", "arguments": {"command": "python3 test_calc.py"}}
    right = {"name": "edit_file", "arguments": {"path": "calc.py", "old_string": "a * b", "new_string": "a + b"}}
    server = scripted_server([{"tool_calls": read}, {"tool_calls": [wrong]}, "I fixed the bug in calc.py.",
                              {"tool_calls": [test]}, {"tool_calls": [right]}, {"tool_calls": [test]},
                              "Fixed: add returns a + b and the test prints ok."])
    configure({"policy": {"bash": {"default": "auto"}}}, server=server)
    out = cli.json("run", FIX_TASK, "--json", check=0)
    assert out["status"] == "done" and out["safeguards"] == ["untested_fix"]
    assert "Run it now with bash (`python3 test_calc.py`)" in server.requests[3]["messages"][-1]["content"]
    assert "a + b" in (ws / "calc.py").read_text()


def test_a_fix_that_never_passes_its_test_fails(scripted_server, configure, cli, sentinel_home):
    _calc_workspace(sentinel_home)
    read = [{"name": "read_file", "arguments": {"path": "test_calc.py"}},
            {"name": "read_file", "arguments": {"path": "calc.py"}}]
    wrong = {"name": "edit_file", "arguments": {"path": "calc.py", "old_string": "a - b", "new_string": "a * b"}}
    configure(server=scripted_server([{"tool_calls": read}, {"tool_calls": [wrong]}, "I fixed the bug."]))
    out = cli.json("run", FIX_TASK, "--json", check=1)
    assert out["status"] == "failed" and "`python3 test_calc.py` must pass" in out["error"]
    assert "untested_fix" in out["error"]


def test_what_names_a_command_that_must_pass(sentinel_home):
    """A command is one the workspace grounds (its script, its test file, a Makefile target) or the task marks."""
    from sentinel.worker.safeguards.answer import must_pass
    ws = _calc_workspace(sentinel_home)
    (ws / "tests").mkdir()
    (ws / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    (ws / "report.py").write_text("print(1)\n")
    assert must_pass(FIX_TASK, ws) == "python3 test_calc.py"
    assert must_pass("Make pytest tests/test_x.py pass.", ws) == "pytest tests/test_x.py"
    assert must_pass("Run the script report.py and save its output to report.txt.", ws) is None
    assert must_pass("python3 hello.py should print Hello", ws) is None


KEEP = {"keep.txt": "keep me\n", "notes.md": "- one\n", "data.csv": "a,b\n1,2\n"}
CLEANUP = "Delete every .tmp file in the workspace. Keep all the other files."


def test_a_command_deleting_files_the_task_keeps_is_refused(scripted_server, configure, cli, sentinel_home):
    """The default model, asked to delete the .tmp files and keep the rest, deleted every file: a deleting command
    whose targets reach past what the task names is refused before it runs, and the narrow one runs."""
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    for name, text in {**KEEP, "a.tmp": "x", "b.tmp": "y"}.items():
        (ws / name).write_text(text)
    wide = {"name": "bash", "arguments": {"command": "find . -type f -delete"}}
    everything = {"name": "bash", "arguments": {"command": "rm -f *"}}
    narrow = {"name": "bash", "arguments": {"command": "find . -name '*.tmp' -delete"}}
    configure({"policy": {"bash": {"default": "auto"}}},
              server=scripted_server([{"tool_calls": [wide]}, {"tool_calls": [everything]}, {"tool_calls": [narrow]},
                                      "I deleted a.tmp and b.tmp."]))
    out = cli.json("run", CLEANUP, "--json", check=0)
    assert out["status"] == "done" and out["safeguards"] == ["wide_delete"]
    assert sorted(p.name for p in ws.iterdir()) == sorted(KEEP)
    assert all((ws / name).read_text() == text for name, text in KEEP.items())
    results = _tool_results(cli, out["id"])
    assert results[0].startswith("Error: not run: `find . -type f -delete` could delete files the task says to keep")
    assert results[1].startswith("Error: not run: `rm -f *`")


def test_a_wide_delete_whose_arguments_are_encoded_twice_is_refused_too(scripted_server, configure, cli,
                                                                        sentinel_home):
    """A small model may send its arguments as a JSON string inside the JSON; the tool runs them decoded once
    more, so the checks before the call read them the same way."""
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    for name, text in {**KEEP, "a.tmp": "x"}.items():
        (ws / name).write_text(text)
    twice = {"name": "bash", "arguments": json.dumps(json.dumps({"command": "rm -f *"}))}
    configure({"policy": {"bash": {"default": "auto"}}},
              server=scripted_server([{"tool_calls": [twice]}, "I deleted the .tmp files."]))
    out = cli.json("run", CLEANUP, "--json", check=None)
    assert "wide_delete" in out["safeguards"]
    assert _tool_results(cli, out["id"])[0].startswith("Error: not run: `rm -f *`")
    assert all((ws / name).read_text() == text for name, text in KEEP.items())


def test_what_deletes_more_than_the_task_allows():
    from sentinel.worker.deletes import overreach, targets
    assert targets(CLEANUP) == ["*.tmp"]
    assert targets("Remove old1.log and old2.log but keep current.log.") == ["old1.log", "old2.log"]
    assert targets("Delete build.log.") == []  # nothing said to keep: not this safeguard's business
    allowed = ["*.tmp"]
    for narrow in ("rm *.tmp", "rm -f -- ./*.tmp", "find . -name '*.tmp' -delete", "ls && rm a.tmp b.tmp",
                   "find . -name '*.tmp' -exec rm {} \\;", "cat notes.md"):
        assert overreach(narrow, allowed) is None, narrow
    for wide in ("rm *", "rm -rf .", "find . -type f -delete", "find . ! -name '*.tmp' -delete",
                 "rm a.tmp keep.txt", "cd /tmp; sudo rm -r *", "find . -type f -exec rm {} +"):
        assert overreach(wide, allowed) is not None, wide


def test_a_reply_that_only_announces_its_next_step_is_not_an_answer(scripted_server, configure, cli):
    """Asked what it had remembered, the default model answered "We need to find the name of the staging
    server." and the run ended done: a reply that only says what it would do is sent back."""
    configure(server=scripted_server(["We need to find the name of the staging server.", "It is called heron-7."]))
    out = cli.json("run", "What is our staging server called?", "--json", check=4)
    assert out["status"] == "done_unverified" and out["output"] == "It is called heron-7."
    assert out["safeguards"] == ["plan_only"]
    configure(server=scripted_server(["Let me check.", "I will look it up.", "Let me look.", "I'll find it."]))
    out = cli.json("run", "What is our staging server called?", "--json", check=1)
    assert out["status"] == "failed" and "next step" in out["error"]


def test_answers_that_only_look_like_plans_are_answers():
    from sentinel.worker.safeguards.answer import _plan_only
    for said in ("Let me know if you need anything else.", "First, I created the file.", "Now I have finished.",
                 "The staging server is heron-7.", "I need to " + "x" * 300):
        assert _plan_only(said, None) is None, said


def test_a_call_to_a_tool_that_does_not_exist_is_a_mistake_not_a_denial(scripted_server, configure, cli):
    """"Denied by policy: unknown tool" answers a model's slip: a run whose only call was one is not `denied_undone`."""
    bogus = {"name": "delete_everything", "arguments": {}}
    configure(server=scripted_server([{"tool_calls": [bogus]}, "Linux is a kernel."]))
    out = cli.json("run", "What is Linux?", "--json", check=4)
    assert out["status"] == "done_unverified"


def test_a_test_run_that_only_writes_a_tools_cache_is_not_a_change(scripted_server, configure, cli, sentinel_home):
    """pytest writes .pytest_cache (mypy, ruff and Python their own): the run of the test after the fix still counts
    as the run that checks it."""
    ws = _calc_workspace(sentinel_home)
    fix = {"name": "edit_file", "arguments": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}}
    test = {"name": "bash", "arguments": {"command": "mkdir -p .pytest_cache/v && echo 1 > .pytest_cache/v/last; "
                                                     "python3 test_calc.py"}}
    server = scripted_server([{"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
                              {"tool_calls": [fix]}, {"tool_calls": [test]}, "Fixed: the test prints ok."])
    configure({"policy": {"bash": {"default": "auto"}}}, server=server)
    out = cli.json("run", FIX_TASK, "--json", check=0)
    assert out["status"] == "done", out
    assert (ws / ".pytest_cache" / "v" / "last").is_file()


def test_a_tests_run_right_after_a_same_size_edit_runs_the_edited_code(scripted_server, configure, cli, sentinel_home,
                                                                          monkeypatch):
    """`a * b` -> `a + b` within one second keeps calc.py's size and mtime: a __pycache__ written by the first test
    run would still be taken for the edited file. A tool's environment writes no bytecode, whatever the caller's."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    ws = _calc_workspace(sentinel_home)
    wrong = {"name": "edit_file", "arguments": {"path": "calc.py", "old_string": "a - b", "new_string": "a * b"}}
    right = {"name": "edit_file", "arguments": {"path": "calc.py", "old_string": "a * b", "new_string": "a + b"}}
    test = {"name": "bash", "arguments": {"command": "python3 test_calc.py"}}
    server = scripted_server([{"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
                              {"tool_calls": [wrong]}, {"tool_calls": [test]}, {"tool_calls": [right]},
                              {"tool_calls": [test]}, "Fixed."])
    configure({"policy": {"bash": {"default": "auto"}}}, server=server)
    out = cli.json("run", FIX_TASK, "--json", check=0, env={"PYTHONDONTWRITEBYTECODE": ""})
    assert out["status"] == "done", out
    assert not (ws / "__pycache__").exists()


def test_every_way_of_saying_keep_spares_the_files_it_names():
    """"leave config.yaml untouched" was not read as keeping (the file name's dot ended the phrase), and a file
    named after "except" / "do not touch" / "without changing" could still be deleted by the allowed pattern."""
    from sentinel.worker.deletes import kept, overreach, targets
    from sentinel.worker.safeguards.answer import named_files
    said = {
        "Delete every .tmp file but leave config.yaml untouched.": (["*.tmp"], ["config.yaml"]),
        "Remove old.log; leave notes.v2.md and a.txt alone.": (["old.log"], ["notes.v2.md", "a.txt"]),
        "Delete all .log files except current.log.": (["*.log"], ["current.log"]),
        "Remove the .tmp files. Do not touch settings.json.": (["*.tmp"], ["settings.json"]),
        "Delete old.log without changing new.log": (["old.log"], ["new.log"]),
        "Delete the .bak files, preserving keep.bak.": (["*.bak"], ["keep.bak"]),
        "Delete every .log file other than app.log": (["*.log"], ["app.log"]),
    }
    for request, (allowed, spared) in said.items():
        assert targets(request) == allowed, request
        assert named_files(kept(request)) == spared, request
    assert targets("Delete build.log.") == [] and kept("Delete build.log.") == ""
    spared = ["current.log"]
    for wide in ("rm *.log", "rm -f -- ./*.log", "find . -name '*.log' -delete", "rm current.log", "rm cur*.log"):
        assert overreach(wide, ["*.log"], spared) is not None, wide
    for narrow in ("rm old.log", "rm -- a.log b.log", "find . -name 'old*.log' -delete"):
        assert overreach(narrow, ["*.log"], spared) is None, narrow


def test_a_pattern_that_reaches_a_file_the_task_keeps_is_refused_and_the_run_is_not_done(
        scripted_server, configure, cli, sentinel_home, tmp_path):
    """"Delete all .log files except current.log" answered with `rm *.log`: refused before it runs, naming the
    file; the narrow command runs; a run that still lost current.log (a script the guard cannot read) is no
    `done`."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.log", "b.log", "current.log"):
        (ws / name).write_text(name)
    request = "Delete all .log files except current.log."
    configure({"policy": {"bash": {"default": "auto"}}}, server=scripted_server([
        {"tool_calls": [{"name": "bash", "arguments": {"command": "rm *.log"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "rm -- a.log b.log"}}]},
        "Deleted a.log and b.log."]))
    out = cli.json("run", request, "-w", str(ws), "--json", check=None)
    assert "wide_delete" in out["safeguards"]
    results = _tool_results(cli, out["id"])
    assert results[0].startswith("Error: not run: `rm *.log`") and "never current.log" in results[0]
    assert sorted(p.name for p in ws.iterdir()) == ["current.log"], out
    assert out["status"] == "done", out
    for name in ("a.log", "b.log"):
        (ws / name).write_text(name)
    configure({"policy": {"bash": {"default": "auto"}}}, server=scripted_server([
        {"tool_calls": [{"name": "bash", "arguments": {"command": "python3 -c \"import glob, os; "
                                                       "[os.remove(f) for f in glob.glob('*.log')]\""}}]},
        "Deleted the .log files."]))
    out = cli.json("run", request, "-w", str(ws), "--json", check=None)
    assert list(ws.iterdir()) == [] and out["status"] != "done"
    assert "current.log was to be kept and is gone" in json.dumps(out)
