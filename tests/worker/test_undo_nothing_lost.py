"""`sentinel undo` loses nothing it did not record and brings back everything a run did: the person's later work is
kept, a file too large to store is never removed, a run killed mid call is undone too, a file name that is not
UTF-8 is recorded and undone, and a change only ctime, the owner or the setuid bit shows is seen and put back."""

from __future__ import annotations

import json
import os
import signal

import pytest

BASH_AUTO = {"policy": {"bash": {"default": "auto"}}}
BIG = 40 * 1024 * 1024  # over the 32 MiB a checkpoint stores


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _workspace(sentinel_home, **files):
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    for name, content in files.items():
        (ws / name).write_text(content)
    return ws


def _steps(cli, run_id):
    return cli.json("show", run_id, "--json")["checkpoints"]


# -- B1: the person's work after the run ------------------------------------------------------


def _a_run_that_edits_creates_and_deletes(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home, **{"notes.md": "# Notes\n", "other.md": "other\n", "old.md": "old\n"})
    configure(BASH_AUTO, server=scripted_server([
        _call("read_file", path="notes.md"),
        _call("write_file", path="notes.md", content="# Notes\n- agent line\n"),
        _call("write_file", path="draft.md", content="agent draft\n"),
        _call("bash", command="echo agent >> other.md; rm old.md"),
        "Updated notes.md, other.md, removed old.md and created draft.md."]))
    out = cli.json("run", "Add a line to notes.md and create draft.md with a first draft", "--json", check=4)
    assert "the run removed old.md, which the task does not ask to remove" in out["error"]  # so: not verified
    return ws, out["id"]


def test_undo_keeps_what_the_person_changed_after_the_run_and_undoes_the_rest(scripted_server, configure, cli,
                                                                             sentinel_home):
    ws, run_id = _a_run_that_edits_creates_and_deletes(scripted_server, configure, cli, sentinel_home)
    (ws / "notes.md").write_text("# Notes\n- agent line\n- MY OWN WORK\n")   # edited after the run
    (ws / "draft.md").write_text("agent draft\nMY CHAPTER 2\n")              # a file the run made, edited
    (ws / "old.md").write_text("my new old.md\n")                            # made again after the run removed it
    undone = cli("undo", run_id, check=1)
    for path in ("notes.md", "draft.md", "old.md"):
        assert f"kept {path} as it is: it changed after the run's last step" in undone.stderr
    assert "restored other.md" in undone.stdout  # the rest is undone
    assert (ws / "other.md").read_text() == "other\n"
    assert (ws / "notes.md").read_text() == "# Notes\n- agent line\n- MY OWN WORK\n"
    assert (ws / "draft.md").read_text() == "agent draft\nMY CHAPTER 2\n"
    assert (ws / "old.md").read_text() == "my new old.md\n"
    assert "already match" not in undone.stdout and "1 put back, 3 not" in undone.stderr

    as_json = cli.json("undo", run_id, "--json", check=1)  # not all put back: a failure, in JSON too
    assert sorted(as_json["kept"]) == ["draft.md", "notes.md", "old.md"] and as_json["restored"] == []
    assert sorted(as_json["missing"]) == ["draft.md", "notes.md", "old.md"]

    (ws / "notes.md").rename(ws / "notes.mine.md")  # moved aside: the next undo puts the run's start back
    again = cli("undo", run_id, check=1)
    assert "restored notes.md" in again.stdout and (ws / "notes.md").read_text() == "# Notes\n"
    assert (ws / "notes.mine.md").read_text() == "# Notes\n- agent line\n- MY OWN WORK\n"


def test_undo_puts_back_a_file_the_person_deleted_after_the_run(scripted_server, configure, cli, sentinel_home):
    """Nothing is lost writing where no file is: a file the run changed and the person then removed comes back."""
    ws, run_id = _a_run_that_edits_creates_and_deletes(scripted_server, configure, cli, sentinel_home)
    (ws / "notes.md").unlink()
    undone = cli("undo", run_id, check=0)
    assert "restored notes.md" in undone.stdout and "removed draft.md" in undone.stdout
    assert (ws / "notes.md").read_text() == "# Notes\n" and (ws / "old.md").read_text() == "old\n"
    assert not (ws / "draft.md").exists()


def test_undo_replaces_a_hard_link_the_person_made_without_losing_its_content(scripted_server, configure, cli,
                                                                              sentinel_home):
    """A file with another name loses nothing when this name is put back: its content lives on under the other."""
    ws, run_id = _a_run_that_edits_creates_and_deletes(scripted_server, configure, cli, sentinel_home)
    (ws / "notes.md").write_text("mine\n")
    os.link(ws / "notes.md", ws / "notes.bak")
    cli("undo", run_id, check=0)
    assert (ws / "notes.md").read_text() == "# Notes\n" and (ws / "notes.bak").read_text() == "mine\n"


# -- B2: a file too large to store -------------------------------------------------------------


@pytest.mark.parametrize("command", ["truncate -s 5 data.bin", "rm data.bin",
                                     "head -c 100 data.bin > t && mv t data.bin"], ids=["shrink", "delete", "replace"])
def test_a_file_too_large_to_store_is_never_removed_and_undo_says_it_cannot_bring_it_back(
        scripted_server, configure, cli, sentinel_home, command):
    ws = _workspace(sentinel_home, **{"other.txt": "x\n"})
    with open(ws / "data.bin", "wb") as f:
        f.truncate(BIG)  # sparse: over the limit without writing 40 MiB
    configure(BASH_AUTO, server=scripted_server([_call("bash", command=f"{command}; echo made > new.txt"),
                                                 "Done."]))
    run_id = cli.json("run", "Tidy data.bin", "--json", check=4)["id"]
    [step] = _steps(cli, run_id)
    assert step["complete"] is False and "(not all recorded)" in cli("show", run_id, check=0).stdout
    size = (ws / "data.bin").stat().st_size if (ws / "data.bin").exists() else None

    undone = cli("undo", run_id, check=1)
    assert "could not restore data.bin: it was over 32 MiB, so the run never stored it" in undone.stderr
    assert "removed data.bin" not in undone.stdout and "already match" not in undone.stdout
    assert "removed new.txt" in undone.stdout and not (ws / "new.txt").exists()  # what it knows it made goes
    assert ((ws / "data.bin").stat().st_size if (ws / "data.bin").exists() else None) == size
    assert cli.json("undo", run_id, "--json", check=1)["unstored"] == ["data.bin"]


def test_a_large_file_the_run_did_not_touch_is_not_in_any_step(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    with open(ws / "data.bin", "wb") as f:
        f.truncate(BIG)
    configure(BASH_AUTO, server=scripted_server([_call("bash", command="echo made > new.txt"), "Done."]))
    run_id = cli.json("run", "Write new.txt", "--json", check=0)["id"]
    assert [(s["changed"], s["complete"]) for s in _steps(cli, run_id)] == [(["new.txt"], True)]
    assert "removed new.txt" in cli("undo", run_id, check=0).stdout and (ws / "data.bin").stat().st_size == BIG


# -- B3: a run killed mid call -------------------------------------------------------------------


def test_a_run_killed_mid_command_is_undone_and_its_resume_knows_what_the_call_changed(
        scripted_server, configure, cli, sentinel_home):
    """kill -9 of the run's process while its command runs: the resume records what the call changed (the
    workspace against the last checkpoint), tells the model, and undo reverts it."""
    ws = _workspace(sentinel_home, **{"notes.md": "# Notes\n", "gone.txt": "precious\n"})
    configure(BASH_AUTO, server=scripted_server([
        _call("read_file", path="notes.md"),
        _call("bash", command="echo 'agent line' >> notes.md; echo new > created.txt; rm gone.txt; kill -9 $PPID"),
        _call("read_file", path="notes.md"),
        "The command was interrupted; notes.md has the line."]))
    killed = cli("run", "Add a line to notes.md", "--json")
    assert killed.returncode == -signal.SIGKILL
    run_id = cli.json("runs", "--json")[0]["id"]

    resumed = cli.json("resume", run_id, "--json")
    assert "no tool call" not in str(resumed.get("error")) and resumed["status"] == "done_unverified"
    assert "the run removed gone.txt" in resumed["error"]  # the interrupted call's removal is known, and unasked
    shown = cli.json("show", run_id, "--json")
    assert [(s["tool"], s["changed"], s["removed"]) for s in shown["checkpoints"]] == [
        ("bash", ["created.txt", "notes.md"], ["gone.txt"])]
    result = [m["content"] for m in shown["messages"] if m["role"] == "tool"][1]
    assert "interrupted" in result and "It changed " in result and "gone.txt" in result

    undone = cli("undo", run_id, check=0)
    assert "restored gone.txt" in undone.stdout and "removed created.txt" in undone.stdout
    assert (ws / "notes.md").read_text() == "# Notes\n" and (ws / "gone.txt").read_text() == "precious\n"
    assert not (ws / "created.txt").exists()


def test_a_crash_after_earlier_steps_records_only_what_the_interrupted_call_changed(
        scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home, **{"a.txt": "a\n"})
    configure(BASH_AUTO, server=scripted_server([
        _call("bash", command="echo one > one.txt"),
        _call("bash", command="echo b >> a.txt; kill -9 $PPID"),
        "Done."]))
    cli("run", "Write one.txt and change a.txt", "--json")
    run_id = cli.json("runs", "--json")[0]["id"]
    cli("resume", run_id, "--json")
    assert [(s["changed"], s["removed"]) for s in _steps(cli, run_id)] == [(["one.txt"], []), (["a.txt"], [])]
    cli("undo", run_id, "--to", "1", check=0)
    assert (ws / "a.txt").read_text() == "a\n" and (ws / "one.txt").read_text() == "one\n"


# -- B4: a file name that is not UTF-8 -----------------------------------------------------------


def test_a_file_name_that_is_not_utf8_is_recorded_and_undone_without_a_traceback(
        scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home, **{"notes.md": "# Notes\n"})
    configure(BASH_AUTO, server=scripted_server([
        _call("bash", command="mkdir \"$(printf 'd\\377')\"; printf one > \"$(printf 'd\\377/x\\376.txt')\"; "
                              "touch \"$(printf 'x\\377.txt')\""),
        _call("bash", command="printf two > \"$(printf 'd\\377/x\\376.txt')\"; echo line >> notes.md"),
        "Done."]))
    ran = cli("run", "Add a line to notes.md", "--json", check=0)
    assert "Traceback" not in ran.stderr
    run_id = json.loads(ran.stdout)["id"]
    steps = _steps(cli, run_id)
    assert [len(s["changed"]) for s in steps] == [2, 2] and all(s["complete"] for s in steps)
    inner = ws / os.fsdecode(b"d\xff") / os.fsdecode(b"x\xfe.txt")

    back = cli("undo", run_id, "--to", "1", check=0)
    assert "restored d\\xff/x\\xfe.txt" in back.stdout and inner.read_text() == "one"
    undone = cli("undo", run_id, check=0)
    assert "removed x\\xff.txt" in undone.stdout and "Traceback" not in undone.stderr
    assert not inner.exists() and not (ws / os.fsdecode(b"x\xff.txt")).exists()
    assert (ws / "notes.md").read_text() == "# Notes\n"


def test_a_workspace_already_holding_such_a_name_runs_and_its_file_tools_reach_it(
        scripted_server, configure, cli, sentinel_home):
    """The run's snapshot records the names the contract found: a name that is not UTF-8 there, planted before
    the run, cost every run of the workspace a traceback. read_file and write_file open it by its own bytes."""
    ws = _workspace(sentinel_home, **{"notes.md": "# Notes\n"})
    odd = os.fsdecode(b"old\xff.txt")
    (ws / odd).write_text("planted\n")
    configure(BASH_AUTO, server=scripted_server([
        _call("read_file", path=odd), _call("write_file", path=odd, content="rewritten\n"), "Done."]))
    ran = cli("run", "Tidy old.txt", "--json", check=None)
    assert "Traceback" not in ran.stderr and json.loads(ran.stdout)["status"] != "interrupted", ran.stderr
    shown = cli.json("show", json.loads(ran.stdout)["id"], "--json")
    assert "planted" in json.dumps(shown) and (ws / odd).read_text() == "rewritten\n"


# -- B5: what a stat of size and mtime does not show --------------------------------------------

_IN_PLACE = ("python3 -c \"import os;p='config.ini';st=os.stat(p);f=open(p,'r+');f.write('debug=1');f.close();"
             "os.utime(p,ns=(st.st_atime_ns,st.st_mtime_ns))\"")


def _run_one_command(scripted_server, configure, cli, command):
    configure(BASH_AUTO, server=scripted_server([_call("bash", command=command), "Done."]))
    return cli.json("run", "Tidy the project", "--json", check=4)["id"]


def test_a_same_size_write_that_puts_the_mtime_back_is_recorded_and_undone(scripted_server, configure, cli,
                                                                         sentinel_home):
    ws = _workspace(sentinel_home, **{"config.ini": "debug=0\n"})
    run_id = _run_one_command(scripted_server, configure, cli, _IN_PLACE)
    assert (ws / "config.ini").read_text() == "debug=1\n"
    assert [s["changed"] for s in _steps(cli, run_id)] == [["config.ini"]]
    assert "restored config.ini" in cli("undo", run_id, check=0).stdout
    assert (ws / "config.ini").read_text() == "debug=0\n"


def test_the_setuid_bit_survives_an_undo(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home, **{"tool.sh": "#!/bin/sh\n"})
    os.chmod(ws / "tool.sh", 0o4755)
    run_id = _run_one_command(scripted_server, configure, cli, "echo '# x' >> tool.sh; chmod 755 tool.sh")
    cli("undo", run_id, check=0)
    assert (ws / "tool.sh").read_text() == "#!/bin/sh\n" and os.stat(ws / "tool.sh").st_mode & 0o7777 == 0o4755


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user takes root")
def test_a_chown_is_recorded_and_undone(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home, **{"config.ini": "debug=0\n"})
    owner = os.stat(ws / "config.ini")
    run_id = _run_one_command(scripted_server, configure, cli, "chown 65534:65534 config.ini")
    assert [s["changed"] for s in _steps(cli, run_id)] == [["config.ini"]]
    assert "restored config.ini" in cli("undo", run_id, check=0).stdout
    now = os.stat(ws / "config.ini")
    assert (now.st_uid, now.st_gid) == (owner.st_uid, owner.st_gid)
