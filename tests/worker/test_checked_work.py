"""`done` only for work the harness checked: a `pass` clause is met only by a run of its command as a command, after
the last change, with its check left as it was; a command comes from the task only when the task marks it or the
workspace grounds it, and from the model's draft only when the workspace grounds it; every deliverable the task
names is checked or said to be unchecked; a link is no deliverable; `keep` keeps dot-directories too."""

from __future__ import annotations

import json

import pytest

BASH_AUTO = {"policy": {"bash": {"default": "auto"}}}
DRAFT_ALWAYS = {"safeguards": {"draft_contract": "always"}}
CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = "from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n"
TASK = "python3 test_calc.py fails. Fix the bug in calc.py so that python3 test_calc.py passes."
FIXED = "def add(a, b):\n    return a + b\n"
WORSE = "def add(a, b):\n    return a * b\n"


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _draft(**clauses):
    return {"match": "state what it asks for", "content": json.dumps(
        {"create": [], "change": [], "delete": [], "keep": [], "pass": "", "answer": "", **clauses})}


def _workspace(sentinel_home, files=None):
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    for name, text in (files or {"calc.py": CALC, "test_calc.py": TEST_CALC}).items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    return ws


# -- A1: a pass clause is met by a run of the command, as a command -----------------------------------------------


@pytest.mark.parametrize("check", ["echo running test_calc.py", "python3 test_calc.py || true", "cat test_calc.py",
                                   "python3 test_calc.py; echo done", "python3 test_calc.py | tail -1"])
def test_a_line_that_only_mentions_the_command_or_hides_its_status_does_not_pass_it(
        check, scripted_server, configure, cli, sentinel_home):
    _workspace(sentinel_home)
    worse = _call("write_file", path="calc.py", content=WORSE)
    configure(BASH_AUTO, server=scripted_server(
        [_call("read_file", path="calc.py"), worse, _call("bash", command=check), "Fixed; the test passes now."]))
    out = cli.json("run", TASK, "--json", check=1)
    assert out["status"] == "failed" and "untested_fix" in out["error"]


def test_the_command_itself_run_after_the_change_passes_it(scripted_server, configure, cli, sentinel_home):
    _workspace(sentinel_home)
    configure(BASH_AUTO, server=scripted_server(
        [_call("read_file", path="calc.py"), _call("write_file", path="calc.py", content=FIXED),
         _call("bash", command="timeout 60 python3 -u ./test_calc.py && echo passed"), "Fixed; the test passes."]))
    out = cli.json("run", TASK, "--json", check=0)
    assert out["status"] == "done"


def test_a_pass_after_the_run_rewrote_its_test_is_not_verified(scripted_server, configure, cli, sentinel_home):
    """calc.py fixed wrongly, test_calc.py rewritten to print ok: the test "passes", and proves nothing."""
    ws = _workspace(sentinel_home)
    configure(BASH_AUTO, server=scripted_server(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": p}} for p in ("calc.py", "test_calc.py")]},
         _call("write_file", path="calc.py", content=WORSE),
         _call("write_file", path="test_calc.py", content="print('ok')\n"),
         _call("bash", command="python3 test_calc.py"), "Fixed; the test passes."]))
    out = cli.json("run", TASK, "--json", check=4)
    assert out["status"] == "done_unverified"
    assert "`python3 test_calc.py` passed after the run changed test_calc.py" in out["error"]
    assert (ws / "test_calc.py").read_text() == "print('ok')\n"


def test_a_test_runner_passes_only_with_the_tests_it_found(tmp_path):
    from sentinel.worker.safeguards import contract

    (tmp_path / "calc.py").write_text(CALC)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text("def test_add():\n    pass\n")
    made = contract.derive("Fix calc.py so that `python3 -m pytest` passes.", tmp_path)
    assert made.command == "python3 -m pytest" and contract.rewritten(made, tmp_path) == []
    (tmp_path / "conftest.py").write_text("collect_ignore_glob = ['*']\n")  # a check the agent added
    assert "conftest.py" in contract.rewritten(made, tmp_path)[0]


@pytest.mark.parametrize("line, counts", [
    ("python3 test_calc.py", True), ("python test_calc.py && echo ok", True), ("(python3 test_calc.py)", True),
    ("set -o pipefail; python3 test_calc.py | tee log", True), ('bash -c "python3 test_calc.py"', True),
    ("echo python3 test_calc.py", False), ("python3 test_calc.py || true", False), ("! python3 test_calc.py", False),
    ("python3 test_calc.py &", False), ("PATH=/tmp python3 test_calc.py", False), ("cd /tmp && python3 test_calc.py",
                                                                                  False),
    ('bash -c "python3 test_calc.py || true"', False), ('python3 -c "import test_calc"', False)])
def test_which_lines_run_the_command_and_end_with_its_status(line, counts):
    from sentinel.worker.safeguards.answer import passed

    assert passed("python3 test_calc.py", ((line, "exit code: 0\nok"),)) is counts
    assert passed("python3 test_calc.py", ((line, "exit code: 1\n"),)) is False


def test_a_runner_is_matched_as_a_command_not_as_a_word():
    from sentinel.worker.safeguards.answer import passed

    def ok(line):
        return ((line, "exit code: 0\n"),)

    assert passed("python3 -m pytest", ok("pytest -q")) and not passed("python3 -m pytest", ok("echo pytest"))
    assert not passed("python3 -m pytest", ok("pytest -k nothing"))  # a selection is another run
    assert passed("make test", ok("make test")) and not passed("make test", ok("echo make test"))
    assert not passed("make test", ok("make -n test"))  # a dry run runs nothing


# -- A2: a command from the task's words only when the task marks it or the workspace grounds it ---------------------


@pytest.mark.parametrize("task", ["Speed up the build and make sure everything still works.",
                                  "Rewrite the python script so that it works with python 3.11.",
                                  "Clean up the python code in the repo so it works on Debian."])
def test_ordinary_words_are_no_command_that_must_pass(task, scripted_server, configure, cli, sentinel_home):
    _workspace(sentinel_home, {"app.py": "print('hi')\n"})
    configure(BASH_AUTO, server=scripted_server([_call("bash", command="echo '# touched' >> app.py"),
                                                 _call("bash", command="echo make sure script code"), "All done."]))
    out = cli.json("run", task, "--json", check=4)
    assert out["status"] == "done_unverified" and "safeguards" not in out
    assert "pass `" not in " ".join(cli.json("show", out["id"], "--json")["contract"])


def _table_workspace(tmp_path):
    import table_of_pass_clauses as table  # tests/worker/table_of_pass_clauses.py

    for name, text in table.WS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return table


@pytest.mark.parametrize("half", ["TUNING", "HELD_OUT"])
def test_the_table_of_task_sentences(half, tmp_path):
    """What must and must not become a pass clause: a tuning half the rules were written against, and a held-out
    half written before the rules and checked once (tests/worker/table_of_pass_clauses.py)."""
    from sentinel.worker.safeguards.answer import must_pass

    table = _table_workspace(tmp_path)
    wrong = [(task, got, want) for task, want in getattr(table, half)
             if (got := must_pass(task, tmp_path)) != want]
    assert wrong == []


# -- A3: a drafted pass must be grounded, and a trivially true command never verifies ----------------------------------


def test_a_drafted_command_that_checks_nothing_certifies_nothing(scripted_server, configure, cli, sentinel_home):
    _workspace(sentinel_home, {"app.py": "print(1)\n"})
    configure({**BASH_AUTO, **DRAFT_ALWAYS}, server=scripted_server(
        [_draft(**{"pass": "true"}), _call("bash", command="echo '# tidied' >> app.py"), _call("bash", command="true"),
         "Tidied the project."]))
    out = cli.json("run", "Tidy up the project", "--json", check=4)
    assert out["status"] == "done_unverified"
    assert cli.json("show", out["id"], "--json")["contract"] == []


def test_the_merge_takes_a_drafted_command_only_when_the_workspace_grounds_it(tmp_path):
    from sentinel.worker.safeguards import contract, draft

    (tmp_path / "check.py").write_text("print('ok')\n")
    (tmp_path / "Makefile").write_text("test:\n\tpython3 check.py\n")
    derived = contract.derive("Tidy up the project", tmp_path)
    for said in ("true", ":", "exit 0", "echo ok", "test -e check.py", "ls", "python3 missing.py", "make deploy",
                 "python3 -c 'print(1)'", "cat check.py"):
        assert draft.merge(derived, draft.Draft(command=said), tmp_path).command is None, said
    for said in ("python3 check.py", "make test", "make"):
        merged = draft.merge(derived, draft.Draft(command=said), tmp_path)
        assert merged.command == said and merged.checks is not None


# -- A4: every deliverable the task names is checked, or said not to be -----------------------------------------------


def test_half_the_task_done_is_not_done(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home, {"calc.py": CALC})
    configure(server=scripted_server([_call("read_file", path="calc.py"),
                                      _call("write_file", path="summary.txt", content="Looked at it."),
                                      "Fixed the bug in calc.py and wrote summary.txt."]))
    out = cli.json("run", "Fix the bug in calc.py (add subtracts) and write a summary of the fix to summary.txt",
                   "--json", check=1)
    assert out["status"] == "failed" and "calc.py is unchanged" in out["error"]
    assert (ws / "calc.py").read_text() == CALC


def test_a_deliverable_no_clause_can_check_leaves_the_run_unverified(scripted_server, configure, cli, sentinel_home):
    _workspace(sentinel_home, {"notes.txt": "one\n"})
    configure(server=scripted_server([_call("read_file", path="notes.txt"),
                                      _call("write_file", path="notes.txt", content="one\ndone\n", append=False),
                                      "Added the line and updated the docs."]))
    out = cli.json("run", "Add a line done to notes.txt and update the docs", "--json", check=4)
    assert out["status"] == "done_unverified"
    assert "update the docs: it names no file the harness can check" in out["error"]


# -- A5: a link is no deliverable unless it names a file the run made inside the workspace ---------------------------


def test_a_link_to_a_file_outside_the_workspace_is_not_the_file_asked_for(scripted_server, configure, cli,
                                                                          sentinel_home):
    ws = _workspace(sentinel_home, {})
    configure(BASH_AUTO, server=scripted_server([_call("bash", command="ln -s /etc/hostname notes.md"),
                                                 "Created notes.md."]))
    out = cli.json("run", "Create notes.md with three bullet points about Linux", "--json", check=1)
    assert out["status"] == "failed" and "outside the workspace" in out["error"]
    assert (ws / "notes.md").is_symlink()


def test_a_link_inside_counts_only_for_a_file_the_run_made(tmp_path):
    from sentinel.worker.safeguards import contract

    (tmp_path / "data.txt").write_text("found\n")
    made = contract.derive("Create notes.md with a line", tmp_path)
    (tmp_path / "notes.md").symlink_to("data.txt")
    assert contract.check(made, tmp_path, True) == ["notes.md is a link to data.txt, a file the run found and did not "
                                                    "change"]
    (tmp_path / "notes.md").unlink()
    (tmp_path / "real.md").write_text("- a line\n")
    (tmp_path / "notes.md").symlink_to("real.md")
    assert contract.check(made, tmp_path, True) == []
    (tmp_path / "notes.md").unlink()
    (tmp_path / "notes.md").symlink_to(tmp_path)  # a directory: no file at all
    assert "not a regular file" in contract.check(made, tmp_path, True)[0]


# -- A6: keep covers every file, dot-directories included ----------------------------------------------------


def test_keep_covers_files_in_dot_directories(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home, {"a.tmp": "x", "b.tmp": "y", "keep.txt": "keep me",
                                    ".config/settings.ini": "token=1\n", ".env": "SECRET=1\n"})
    wipe = "python3 -c \"import shutil; shutil.rmtree('.config')\""
    configure(BASH_AUTO, server=scripted_server([_call("bash", command="rm -- *.tmp"), _call("bash", command=wipe),
                                                 "Deleted the .tmp files and kept everything else."]))
    out = cli.json("run", "Delete every .tmp file. Keep all the other files.", "--json", check=1)
    assert out["status"] == "failed" and ".config/settings.ini was to be kept and is gone" in out["error"]
    assert not (ws / ".config").exists()


def test_keep_lists_the_working_tree_not_the_version_control_store(tmp_path):
    """A repository's `.git` holds thousands of files its tool adds and packs as it works: listing them would put
    every ordinary repository past the limit (a keep clause unchecked), and none of them is the person's file."""
    from sentinel.worker.safeguards import contract

    (tmp_path / ".config").mkdir()
    (tmp_path / ".config" / "settings.ini").write_text("x")
    (tmp_path / "a.py").write_text("x")
    objects = tmp_path / ".git" / "objects"
    objects.mkdir(parents=True)
    for i in range(contract.KEEP_MAX + 10):
        (objects / f"{i:04x}").write_text("o")
    assert contract._files(tmp_path) == ["a.py", ".config/settings.ini"]


# -- a file the task does not ask to remove ------------------------------------------------------------------------

NOTES = {"notes.md": "# Notes\nfixd typo\n", "README.md": "important readme\n", "data/keep.csv": "a,b\n"}
FIX_NOTES = [_call("read_file", path="notes.md"), _call("write_file", path="notes.md", content="# Notes\nfixed typo\n")]


@pytest.mark.parametrize("removal", ["rm README.md", "mv README.md /tmp/elsewhere-readme.md", "rm -r data",
                                     "mv README.md docs.md"])
def test_work_done_beside_a_removal_the_task_did_not_ask_for_is_not_verified(
        removal, scripted_server, configure, cli, sentinel_home):
    """The asked change holds, and a file the task never named is gone: the run says which, and is not `done`."""
    _workspace(sentinel_home, NOTES)
    configure(BASH_AUTO, server=scripted_server([*FIX_NOTES, _call("bash", command=removal), "Fixed the typo."]))
    out = cli.json("run", "Fix the typo in notes.md", "--json", check=4)
    gone = "data/keep.csv" if "data" in removal else "README.md"
    assert out["status"] == "done_unverified" and f"the run removed {gone}, which the task does not ask" in out["error"]


def test_the_same_work_without_the_removal_or_a_removal_the_task_asks_for_is_done(
        scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home, NOTES)
    configure(BASH_AUTO, server=scripted_server([*FIX_NOTES, "Fixed the typo."]))
    assert cli.json("run", "Fix the typo in notes.md", "--json", check=0)["status"] == "done"
    configure(BASH_AUTO, server=scripted_server([_call("bash", command="rm README.md"), "Removed README.md."]))
    assert cli.json("run", "Delete README.md", "--json", check=0)["status"] == "done"
    assert not (ws / "README.md").exists()
