"""`done` only for work the harness checked: a run whose contract has a clause nobody can check (an answer) or no
clause at all ends `done_unverified` (exit 4), on every surface; the model may draft clauses, which only add checks
and are checked by the harness against the workspace, never taken on the model's word."""

from __future__ import annotations

import json

from sentinel.engine import events as ev
from sentinel.engine.status import TERMINAL, RunStatus

DRAFT_ALWAYS = {"safeguards": {"draft_contract": "always"}}


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _draft(**clauses):
    """The model's reply to the draft call (a side call: answered whenever its system prompt asks for one)."""
    return {"match": "state what it asks for", "content": json.dumps(
        {"create": [], "change": [], "delete": [], "keep": [], "pass": "", "answer": "", **clauses})}


def test_a_question_ends_done_unverified_with_its_own_exit_code_and_says_what_was_not_checked(
        scripted_server, configure, cli):
    configure(server=scripted_server(["Linux is a kernel."]))
    out = cli("run", "What is Linux?", check=4)
    assert out.stdout.strip() == "Linux is a kernel."  # the answer is still printed
    assert "done_unverified: not verified: the answer (What is Linux?)" in out.stderr

    configure(server=scripted_server(["Linux is a kernel."]))
    made = cli.json("run", "What is Linux?", "--json", check=4)
    assert made["status"] == "done_unverified" and made["output"] == "Linux is a kernel."
    assert made["error"].startswith("not verified: the answer")
    shown = cli.json("show", made["id"], "--json")
    assert shown["status"] == "done_unverified" and shown["verified"] is False
    assert shown["contract"] == ["answer: What is Linux?"]
    assert shown["unchecked"] == ["the answer (What is Linux?): no check can tell an answer is right"]
    text = cli("show", made["id"], check=0).stdout
    assert "verified: no" in text and "not checked: the answer (What is Linux?)" in text


def test_a_task_that_names_nothing_checkable_is_not_done(scripted_server, configure, cli):
    configure(server=scripted_server(["Done, the project is tidy now."]))
    out = cli.json("run", "Tidy up the project", "--json", check=4)
    assert out["status"] == "done_unverified"
    assert "it names no file to create, change or delete and no command that must pass" in out["error"]


def test_done_unverified_is_terminal_listed_by_status_and_resume_does_not_run_it_again(scripted_server, configure,
                                                                                      cli):
    assert RunStatus.DONE_UNVERIFIED in TERMINAL
    server = scripted_server(["Linux is a kernel."])
    configure(server=server)
    made = cli.json("run", "What is Linux?", "--json", check=4)
    listed = cli.json("runs", "--status", "done_unverified", "--json")
    assert [r["id"] for r in listed] == [made["id"]]
    assert cli.json("runs", "--status", "done", "--json") == []
    resumed = cli("resume", made["id"], check=4)  # the code `run` gave it
    assert f"run {made['id']} is done_unverified" in resumed.stderr and "Linux is a kernel." in resumed.stdout
    assert len(server.requests) == 1  # never asked again


def test_a_verified_run_stays_done_with_exit_0(scripted_server, configure, cli, sentinel_home):
    configure(server=scripted_server([_call("write_file", path="notes.md", content="- a\n"), "Created notes.md."]))
    out = cli.json("run", "Create notes.md with a bullet", "--json", check=0)
    assert out["status"] == "done" and "error" not in out


def test_the_progress_and_the_chats_child_lines_say_done_not_verified():
    from sentinel.ui.render import describe

    line = describe(ev.Done(run_id="r-1", seq=3, output="x", status=RunStatus.DONE_UNVERIFIED,
                            unverified="not verified: the answer (What is Linux?)"))
    assert "done, not verified" in line and "the answer (What is Linux?)" in line and "not verified: the" not in line
    assert "■ done" in describe(ev.Done(run_id="r-1", seq=3, output="x")) and \
        "not verified" not in describe(ev.Done(run_id="r-1", seq=3, output="x"))


def test_the_event_stream_carries_the_status_and_what_was_not_checked(scripted_server, configure, cli):
    configure(server=scripted_server(["Linux is a kernel."]))
    made = cli.json("run", "What is Linux?", "--json", check=4)
    lines = [json.loads(line) for line in cli("logs", made["id"], "--json", check=0).stdout.splitlines()]
    done = [e for e in lines if e["type"] == "done"]
    assert done and done[-1]["status"] == "done_unverified" and done[-1]["unverified"].startswith("not verified")
    verdict = [e for e in lines if e["type"] == "verdict"][-1]
    assert verdict["verified"] is False and verdict["unchecked"]


def test_a_parent_hears_that_its_childs_answer_was_not_verified():
    from sentinel.worker.children import result_text

    text = result_text({"id": "r-child", "status": RunStatus.DONE_UNVERIFIED, "output": "The note is written.",
                        "error": "not verified: the answer (what is in it?)"})
    assert text.startswith("The note is written.")
    assert "did not verify its work (not verified: the answer (what is in it?))" in text
    assert result_text({"id": "r-c", "status": RunStatus.DONE, "output": "ok"}) == "ok"


def test_the_web_console_labels_the_status_and_the_event():
    from sentinel.web.render import Templates, status_label

    assert status_label("done_unverified") == "done, not verified"
    html = Templates().render("_event.html", e={"type": "done", "seq": 4, "output": "ok", "status": "done_unverified",
                                                "unverified": "not verified: the answer"}, prefix="")
    assert "done, not verified" in html and "not verified: the answer" in html


# -- the contract drafted by the model -------------------------------------------------------------------------


def test_a_clause_the_model_drafted_and_the_workspace_fails_is_not_done(scripted_server, configure, cli,
                                                                        sentinel_home):
    """The task's words name no file ("Put a greeting in a new file"); the model's draft says greeting.txt. The run
    writes another file and says it is done: the harness checks the drafted clause, which does not hold, so the run
    is not verified (exit 4). It is not sent back to satisfy its own draft, and not failed on the draft alone."""
    server = scripted_server([_draft(create=["greeting.txt"]), _call("write_file", path="hello.txt", content="Hi\n"),
                              "I put a greeting in greeting.txt."])
    configure(DRAFT_ALWAYS, server=server)
    out = cli.json("run", "Put a friendly greeting in a new file", "--json", check=4)
    assert out["status"] == "done_unverified"
    assert "greeting.txt does not exist (a clause of the model's draft)" in out["error"]
    first = server.requests[0]
    assert first["response_format"]["type"] == "json_schema" and "tools" not in first
    assert first["max_tokens"] >= 4 * 6 * 120  # the budget fits the schema's longest reply
    assert len(server.requests) == 3  # the draft, the call, the answer: no correction
    shown = cli.json("show", out["id"], "--json")
    assert shown["contract"] == ["create greeting.txt (drafted)"]


def test_a_wrong_drafted_clause_never_sends_the_model_to_change_an_input(scripted_server, configure, cli,
                                                                          sentinel_home):
    """The default model drafted `change stats.py` for "Run python3 stats.py and put its output into stats.txt":
    the run was sent back three times to change the script it was to run, and failed. The task's own clause holds:
    the run is not failed, and not verified either."""
    (sentinel_home / "workspace" / "stats.py").write_text("print('n 3')\n")
    server = scripted_server([_draft(change=["stats.py"]), _call("bash", command="python3 stats.py > stats.txt"),
                              "The output is in stats.txt."])
    configure({**DRAFT_ALWAYS, "policy": {"tools": {"bash": "auto"}}}, server=server)
    out = cli.json("run", "Run python3 stats.py and put its output into stats.txt.", "--json", check=4)
    assert "stats.py is unchanged (a clause of the model's draft)" in out["error"]
    assert all("stats.py is unchanged" not in str(m.get("content")) for m in server.requests[-1]["messages"])
    assert (sentinel_home / "workspace" / "stats.txt").read_text() == "n 3\n"


def test_a_directory_to_create_and_a_count_a_command_wrote(tmp_path):
    """`create archive` holds for a directory that holds something; a number a command wrote into a file (`ls |
    wc -l > count.txt`) is what the command computed, not a number the model made up."""
    from sentinel.worker.safeguards import contract

    terms = contract.Contract(create=["archive", "backup/count.txt"])
    (tmp_path / "archive").mkdir()
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / "count.txt").write_text("2\n")
    assert contract.check(terms, tmp_path, True, "", typed=set()) == ["archive is an empty directory"]
    (tmp_path / "archive" / "old1.log").write_text("x")
    assert contract.check(terms, tmp_path, True, "", typed=set()) == []
    typed = contract.check(terms, tmp_path, True, "", typed={"backup/count.txt"})
    assert typed and "a number no tool printed" in typed[0]


def test_the_same_drafted_clause_met_by_the_workspace_is_done(scripted_server, configure, cli, sentinel_home):
    server = scripted_server([_draft(create=["greeting.txt"]), _call("write_file", path="greeting.txt",
                                                                      content="Hello!\n"), "Wrote greeting.txt."])
    configure(DRAFT_ALWAYS, server=server)
    out = cli.json("run", "Put a friendly greeting in a new file", "--json", check=0)
    assert out["status"] == "done"


def test_a_model_that_claims_done_with_no_checkable_clause_is_done_unverified(scripted_server, configure, cli):
    server = scripted_server([_draft(), "Everything is done and verified."])
    configure(DRAFT_ALWAYS, server=server)
    out = cli.json("run", "Tidy up the project", "--json", check=4)
    assert out["status"] == "done_unverified"


def test_a_draft_that_is_not_the_schemas_object_leaves_the_derived_contract(scripted_server, configure, cli,
                                                                            sentinel_home):
    server = scripted_server([{"match": "state what it asks for", "content": "sure! I will create notes.md"},
                              _call("write_file", path="notes.md", content="- a\n"), "Created notes.md."])
    configure(DRAFT_ALWAYS, server=server)
    out = cli.json("run", "Create notes.md with a bullet", "--json", check=0)
    assert out["status"] == "done" and out["safeguards"] == ["contract_draft"]
    assert cli.json("show", out["id"], "--json")["contract"] == ["create notes.md"]


def test_the_merge_adds_checks_and_never_removes_or_widens_the_derived_ones(tmp_path):
    from sentinel.worker.safeguards import contract, draft

    for name in ("a.tmp", "b.tmp", "report.txt", "data.csv"):
        (tmp_path / name).write_text(name)
    derived = contract.derive("Delete every .tmp file. Keep all the other files.", tmp_path)
    merged = draft.merge(derived, draft.Draft(create=["../escape.txt", "/etc/passwd", "report.txt", "new.md"],
                                              change=["missing.txt"], delete=["*"], keep=["a.tmp", "data.csv"]),
                         tmp_path)
    assert merged.delete == ["*.tmp"] and sorted(merged.keep) == ["data.csv", "report.txt"]  # not widened
    assert merged.create == ["new.md"]  # nothing outside the workspace
    assert list(merged.change) == ["report.txt"]  # "create" of a file that is there: it must change
    assert merged.drafted == ["change report.txt", "create new.md"]
    asked = draft.merge(contract.derive("Which version is set in setup.cfg?", tmp_path), draft.Draft(), tmp_path)
    assert asked.answer == "Which version is set in setup.cfg?"  # the derived answer clause stays
    assert contract.unchecked(asked)
    # a drafted answer beside a deliverable the harness checks is no clause: "Create hello.txt containing hi" with
    # the default model drafting {"create": ["hello.txt"], "answer": "hi"} stays verifiable
    made = draft.merge(contract.derive("Create a file hello.txt containing the text hi", tmp_path),
                       draft.Draft(create=["hello.txt"], answer="hi"), tmp_path)
    assert made.answer is None and made.create == ["hello.txt"] and not contract.unchecked(made)
    alone = draft.merge(contract.derive("Tell me about the weather", tmp_path), draft.Draft(answer="sunny"), tmp_path)
    assert alone.answer == "sunny" and contract.unchecked(alone)  # nothing else to check: the answer is all there is


def test_a_draft_reply_is_parsed_whole_or_not_used():
    from sentinel.worker.safeguards import draft

    parsed = draft.parse('{"create": ["a.txt"], "answer": "x", "pass": "python3 t.py"}')[0]
    assert parsed is not None and parsed.create == ["a.txt"] and parsed.command == "python3 t.py"
    assert draft.parse("not json")[0] is None
    assert draft.parse('{"create": "a.txt"}')[0] is None
    assert draft.parse('{"create": [], "run": "rm -rf /"}')[0] is None
    assert draft.MAX_TOKENS > 4 * draft.ITEMS * draft.CHARS  # the budget fits the longest reply the schema allows


def test_a_file_the_task_names_that_is_already_there_is_no_file_to_create(tmp_path):
    """Its existence proves nothing: a contract of `create numbers.txt` held before the run began."""
    from sentinel.worker.safeguards import contract

    (tmp_path / "numbers.txt").write_text("12\n93\n")
    terms = contract.derive("Write the largest number of numbers.txt to max.txt.", tmp_path)
    assert terms.create == ["max.txt"]
    assert contract.check(terms, tmp_path, True) == ["max.txt does not exist"]


def test_a_deliverable_that_is_a_copy_of_an_input_is_not_verified(scripted_server, configure, cli, sentinel_home):
    """`cp numbers.txt max.txt` for "the largest number": the file exists and is not empty, and holds only what the
    run found. A copy shows nothing of the work, so the run ends done_unverified (exit 4), never done."""
    (sentinel_home / "workspace" / "numbers.txt").write_text("12\n7\n93\n")
    copy = {"name": "write_file", "arguments": {"path": "max.txt", "content": "12\n7\n93\n"}}
    configure(server=scripted_server([{"tool_calls": [copy]}, "Wrote the largest number to max.txt."]))
    out = cli.json("run", "Write the largest number of numbers.txt to max.txt.", "--json", check=4)
    assert out["status"] == "done_unverified" and "a copy" in out["error"] and "numbers.txt" in out["error"]

    right = {"name": "write_file", "arguments": {"path": "max2.txt", "content": "93\n"}}
    read = {"name": "read_file", "arguments": {"path": "numbers.txt"}}
    configure(server=scripted_server([{"tool_calls": [read]}, {"tool_calls": [right]}, "Wrote 93 to max2.txt."]))
    out = cli.json("run", "Write the largest number of numbers.txt to max2.txt.", "--json", check=0)
    assert out["status"] == "done"
