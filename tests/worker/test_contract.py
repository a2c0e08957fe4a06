"""The contract: made once from the task, checked by the harness against the workspace, never by the model's word.
An empty output file, or files the task said to keep that a script deleted, are not `done`; a run is `verified`
only when every clause of its contract was checked and held (else `done_unverified`, tests/worker/test_unverified.py)."""

from __future__ import annotations

BASH_AUTO = {"policy": {"bash": {"default": "auto"}}}


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _workspace(sentinel_home):
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    return ws


def test_an_empty_output_file_is_not_the_answer_the_task_asked_for(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    (ws / "data.txt").write_text("a\nb\nc\n")
    server = scripted_server([_call("read_file", path="data.txt"), _call("write_file", path="count.txt", content=""),
                              "I wrote the count to count.txt."])
    configure(server=server)
    out = cli.json("run", "Count the lines of data.txt and write the count to count.txt.", "--json", check=1)
    assert out["status"] == "failed" and "count.txt is empty" in out["error"]
    assert out["safeguards"] == ["contract_unmet"]
    correction = server.requests[3]["messages"][-1]["content"]
    assert correction.startswith("[sentinel] The task is not done yet: count.txt is empty")


def test_files_the_task_keeps_deleted_by_a_script_are_caught_and_undo_brings_them_back(
        scripted_server, configure, cli, sentinel_home):
    """wide_delete reads rm and find; a script that deletes is not read, but the contract's `keep` clause sees the
    result in the workspace, whatever deleted it."""
    ws = _workspace(sentinel_home)
    for name in ("a.tmp", "b.tmp", "report.txt", "data.csv"):
        (ws / name).write_text(name + "\n")
    wipe = "python3 -c \"import os; [os.remove(f) for f in os.listdir('.') if os.path.isfile(f)]\""
    configure(BASH_AUTO, server=scripted_server([_call("bash", command=wipe), "Deleted the .tmp files."]))
    out = cli.json("run", "Delete every .tmp file in the workspace. Keep all the other files.", "--json", check=1)
    assert out["status"] == "failed" and "contract_unmet" in out["safeguards"]
    assert "data.csv, report.txt were to be kept and are gone" in out["error"]
    shown = cli.json("show", out["id"], "--json")
    assert shown["contract"] == ["delete *.tmp", "keep the other 2 file(s)"] and shown["verified"] is None
    cli("undo", out["id"], check=0)
    assert sorted(p.name for p in ws.iterdir()) == ["a.tmp", "b.tmp", "data.csv", "report.txt"]


def test_a_run_is_verified_only_when_its_contract_had_clauses_and_all_held(scripted_server, configure, cli,
                                                                           sentinel_home):
    ws = _workspace(sentinel_home)
    notes = _call("write_file", path="notes.md", content="- kernel\n- shell\n- files\n")
    configure(server=scripted_server([notes, "Created notes.md."]))
    made = cli.json("run", "Create notes.md with three bullet points about Linux", "--json", check=0)
    shown = cli.json("show", made["id"], "--json")
    assert shown["contract"] == ["create notes.md"] and shown["verified"] is True
    assert "verified: yes, against the contract" in cli("show", made["id"], check=0).stdout
    assert (ws / "notes.md").exists()

    configure(server=scripted_server(["Linux is a kernel."]))
    asked = cli.json("run", "What is Linux?", "--json", check=4)  # an answer: nothing the harness can check
    shown = cli.json("show", asked["id"], "--json")
    assert shown["status"] == "done_unverified" and shown["contract"] == ["answer: What is Linux?"]
    assert shown["verified"] is False
    assert "verified: no" in cli("show", asked["id"], check=0).stdout


def test_a_change_to_the_one_file_a_task_names_is_checked_against_what_the_run_found(scripted_server, configure, cli,
                                                                                     sentinel_home):
    """The file read and written back as it was: the change the task asks for was not made."""
    ws = _workspace(sentinel_home)
    (ws / "config.ini").write_text("[app]\ndebug = true\n")
    same = _call("write_file", path="config.ini", content="[app]\ndebug = true\n")
    configure(server=scripted_server([_call("read_file", path="config.ini"), same, "Set debug to false."]))
    out = cli.json("run", "In config.ini set debug to false.", "--json", check=1)
    assert "config.ini is unchanged" in out["error"]


def test_a_count_written_as_a_number_no_tool_printed_is_sent_back(scripted_server, configure, cli, sentinel_home):
    """The held-out case: the tool printed 7 and the file said 0. A file the task asks for that holds just a number
    must hold one the tools printed; written from the tool's output, the run is done and verified."""
    ws = _workspace(sentinel_home)
    (ws / "words.txt").write_text("".join(f"w{i}\n" for i in range(7)))
    count = _call("bash", command="wc -l < words.txt")
    server = scripted_server([count, _call("write_file", path="count.txt", content="0"), "Wrote the count.",
                              _call("write_file", path="count.txt", content="7\n"), "Wrote 7 to count.txt."])
    configure(BASH_AUTO, server=server)
    out = cli.json("run", "Count the lines of words.txt and write the number to count.txt.", "--json", check=0)
    assert out["status"] == "done" and out["safeguards"] == ["contract_unmet"]
    correction = server.requests[3]["messages"][-1]["content"]
    assert "count.txt says 0, a number no tool printed" in correction
    assert cli.json("show", out["id"], "--json")["verified"] is True and (ws / "count.txt").read_text() == "7\n"


# -- a kept file is kept as it was ------------------------------------------------------------------------------

def _derive_then(tmp_path, request: str, files: dict, act):
    from sentinel.worker.safeguards import contract

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    made = contract.Contract.from_dict(contract.derive(request, tmp_path).to_dict())  # as the journal keeps it
    act(tmp_path)
    return contract.check(made, tmp_path, passed=True)


def test_a_delete_done_by_moving_over_a_kept_file_is_unmet(tmp_path):
    """`mv old.log current.log` deletes old.log and loses what current.log held (seen on the task bench's tuning
    half: a run reported `done`)."""
    unmet = _derive_then(tmp_path, "Delete old.log but keep current.log.", {"old.log": "old\n", "current.log": "now\n"},
                         lambda ws: (ws / "old.log").rename(ws / "current.log"))
    assert unmet == ["current.log was to be kept as it was and has changed"]


def test_kept_files_the_request_never_names_are_kept_as_they_were(tmp_path):
    unmet = _derive_then(tmp_path, "Delete every .tmp file. Keep all the other files.",
                         {"a.tmp": "x\n", "report.txt": "r\n", "data.csv": "d\n"},
                         lambda ws: ((ws / "a.tmp").unlink(), (ws / "data.csv").write_text("")))
    assert unmet == ["data.csv was to be kept as it was and has changed"]


def test_a_file_the_request_asks_to_change_beside_the_delete_may_change(tmp_path):
    def act(ws):
        (ws / "a.bak").unlink()
        (ws / "notes.txt").write_text("notes\ndone\n")

    for request in ("Remove the .bak files, keep the rest, and append done to notes.txt.",
                    "Delete the .bak files and keep the others. Then append done to notes.txt."):
        for name in ("a.bak", "notes.txt", "keep.txt"):
            (tmp_path / name).unlink(missing_ok=True)
        assert _derive_then(tmp_path, request, {"a.bak": "b\n", "notes.txt": "notes\n", "keep.txt": "k\n"}, act) == []


def test_every_file_a_keep_clause_lists_is_kept_as_it_was(tmp_path):
    unmet = _derive_then(tmp_path, "Delete x.tmp but keep a.txt and b.txt.", {"x.tmp": "x\n", "a.txt": "a\n", "b.txt": "b\n"},
                         lambda ws: (ws / "x.tmp").rename(ws / "b.txt"))
    assert unmet == ["b.txt was to be kept as it was and has changed"]


def test_a_run_that_moved_the_deleted_file_over_the_kept_one_is_not_done(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    (ws / "old.log").write_text("old entries\n")
    (ws / "current.log").write_text("current entries\n")
    configure(BASH_AUTO, server=scripted_server([_call("bash", command="mv old.log current.log"),
                                                 "I deleted old.log and kept current.log."]))
    out = cli.json("run", "Delete old.log but keep current.log.", "--json", check=1)
    assert out["status"] == "failed" and "current.log was to be kept as it was and has changed" in out["error"]
    cli("undo", out["id"], check=0)
    assert (ws / "current.log").read_text() == "current entries\n" and (ws / "old.log").read_text() == "old entries\n"
