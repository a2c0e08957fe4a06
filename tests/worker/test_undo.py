"""Nothing a run does to its workspace is lost: a blind overwrite is refused (an append or a read first goes
through), and `sentinel undo` puts back what a run deleted, overwrote and created, from its checkpoints."""

from __future__ import annotations

import json
import os

import pytest

BASH_AUTO = {"policy": {"bash": {"default": "auto"}}}
LINES = "alpha\nbeta\ngamma\n"
APPEND_TASK = "Add the line 'delta' at the end of notes.txt."


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _workspace(sentinel_home):
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    return ws


def test_one_line_written_over_a_three_line_file_never_read_is_refused_and_the_lines_survive(
        scripted_server, configure, cli, sentinel_home):
    """The held-out case: asked to add a line, the model wrote the one line over the whole file (after the edit
    tool's error) and said it was done. The write is refused; a model that never does better does not end done."""
    ws = _workspace(sentinel_home)
    (ws / "notes.txt").write_text(LINES)
    server = scripted_server([_call("edit_file", path="notes.txt", old_string="", new_string="delta"),
                              _call("write_file", path="notes.txt", content="delta\n"),
                              "I added delta at the end of notes.txt."])
    configure(server=server)
    out = cli.json("run", APPEND_TASK, "--json", check=1)
    assert out["status"] == "failed" and "unread_overwrite" in out["safeguards"]
    assert (ws / "notes.txt").read_text() == LINES
    refusal = [m for m in server.requests[2]["messages"] if m["role"] == "tool"][-1]["content"]
    assert refusal.startswith("Error: not written: notes.txt exists") and '"append": true' in refusal


def test_after_the_refusal_an_append_keeps_the_lines_and_is_done(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    (ws / "notes.txt").write_text(LINES)
    configure(server=scripted_server([_call("write_file", path="notes.txt", content="delta\n"),
                                      _call("write_file", path="notes.txt", content="delta\n", append=True),
                                      "Added delta at the end of notes.txt."]))
    out = cli.json("run", APPEND_TASK, "--json", check=0)
    assert out["status"] == "done" and out["safeguards"] == ["unread_overwrite"]
    assert (ws / "notes.txt").read_text() == LINES + "delta\n"


def test_a_read_cut_short_does_not_count_as_read_whole(scripted_server, configure, cli, sentinel_home):
    """read_file shows a long file with its middle cut: what was cut is unseen, so replacing the file is refused."""
    ws = _workspace(sentinel_home)
    long_text = "".join(f"line {i}\n" for i in range(5000))
    (ws / "big.txt").write_text(long_text)
    configure({"tools": {"output_max_chars": 2000}},
              server=scripted_server([_call("read_file", path="big.txt"),
                                      _call("write_file", path="big.txt", content="line 0\n"),
                                      "I could not rewrite big.txt."]))
    out = cli.json("run", "Tidy big.txt.", "--json")
    assert "unread_overwrite" in out["safeguards"] and (ws / "big.txt").read_text() == long_text


def test_undo_restores_a_workspace_a_run_deleted_overwrote_and_created_files_in(
        scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    (ws / "keep.txt").write_text("untouched\n")
    (ws / "old.log").write_text("old log\n")
    (ws / "data.csv").write_text("a,b\n1,2\n")
    (ws / "run.sh").write_text("echo hi\n")
    os.chmod(ws / "run.sh", 0o755)
    configure(BASH_AUTO, server=scripted_server([
        _call("bash", command="rm old.log && chmod 600 run.sh"),          # step 1: a delete, a mode change
        _call("read_file", path="data.csv"),                              # read only: no checkpoint
        _call("write_file", path="data.csv", content="wrong\n"),          # step 2: an overwrite
        _call("write_file", path="sub/new.txt", content="made up\n"),     # step 3: a new file
        "Done: removed old.log, rewrote data.csv and created sub/new.txt."]))
    out = cli.json("run", "Remove old.log, rewrite data.csv and create sub/new.txt.", "--json", check=0)
    run_id = out["id"]
    shown = cli.json("show", run_id, "--json")["checkpoints"]
    assert [(c["step"], c["tool"], c["changed"], c["removed"]) for c in shown] == [
        (1, "bash", ["run.sh"], ["old.log"]), (2, "write_file", ["data.csv"], []),
        (3, "write_file", ["sub/new.txt"], [])]
    assert "step 2 write_file: changed data.csv" in cli("show", run_id, check=0).stdout

    partial = cli.json("undo", run_id, "--to", "1", "--json", check=0)  # keep step 1 only
    assert partial["restored"] == ["data.csv"] and partial["removed"] == ["sub/", "sub/new.txt"]  # sub: the run's
    assert (ws / "data.csv").read_text() == "a,b\n1,2\n" and not (ws / "old.log").exists()
    assert not (ws / "sub").exists()

    undone = cli("undo", run_id, check=0)  # everything the run did
    assert "restored old.log" in undone.stdout and "restored run.sh" in undone.stdout
    assert (ws / "old.log").read_text() == "old log\n" and (ws / "keep.txt").read_text() == "untouched\n"
    assert (ws / "data.csv").read_text() == "a,b\n1,2\n" and not (ws / "sub" / "new.txt").exists()
    assert os.stat(ws / "run.sh").st_mode & 0o777 == 0o755
    steps = cli.json("show", run_id, "--json")["checkpoints"]
    assert [c["undo"] for c in steps[3:]] == [1, 0]  # the undos are checkpoints too: they can be undone
    again = cli.json("undo", run_id, "--to", "3", "--json", check=0)  # redo: back to after step 3
    assert (ws / "sub" / "new.txt").read_text() == "made up\n" and sorted(again["removed"]) == ["old.log"]


def _a_run_that_changed_a_txt(scripted_server, configure, cli, sentinel_home, tmp_path):
    """A run that rewrote a.txt ("original" to "changed"), and an operator's file outside the workspace."""
    ws = _workspace(sentinel_home)
    outside = tmp_path / "outside.txt"
    outside.write_text("operator's\n")
    (ws / "a.txt").write_text("original\n")
    configure(server=scripted_server([_call("read_file", path="a.txt"),
                                      _call("write_file", path="a.txt", content="changed\n"), "Changed a.txt."]))
    out = cli.json("run", "Change a.txt.", "--json", check=0)
    return ws, outside, out


def test_undo_writes_only_beneath_the_workspace_whatever_the_journal_says(scripted_server, configure, cli,
                                                                            sentinel_home, tmp_path):
    """The journal is the agent's to write: a checkpoint naming a path outside the workspace, or a symlink planted
    where a file was, never sends a restore outside it. The link, which the run did not leave, is kept and named
    (never followed); removed, the file comes back."""
    ws, outside, out = _a_run_that_changed_a_txt(scripted_server, configure, cli, sentinel_home, tmp_path)
    run_dir = sentinel_home / "runs" / out["id"]
    step = json.loads([line for line in (run_dir / "journal.jsonl").read_text().splitlines()
                       if '"workspace_step"' in line][0])
    forged = {**step, "seq": step["seq"] + 1000, "changes": {"../../outside.txt": None, str(outside): None}}
    with open(run_dir / "journal.jsonl", "a") as journal:
        journal.write(json.dumps(forged) + "\n")
    (ws / "a.txt").unlink()
    (ws / "a.txt").symlink_to(outside)
    undone = cli("undo", out["id"], check=1)  # the forged paths cannot be restored: said, and exit 1
    assert "kept a.txt as it is" in undone.stderr
    assert outside.read_text() == "operator's\n" and os.readlink(ws / "a.txt") == str(outside)
    (ws / "a.txt").unlink()
    cli("undo", out["id"], check=1)
    assert outside.read_text() == "operator's\n"
    assert not (ws / "a.txt").is_symlink() and (ws / "a.txt").read_text() == "original\n"


def test_undo_never_writes_through_a_hard_link_to_a_file_outside_the_workspace(scripted_server, configure, cli,
                                                                              sentinel_home, tmp_path):
    """A hard link where a file was names the same file as a path outside the workspace: written in place, the
    restore would change that file too. It is replaced by a file of its own."""
    ws, outside, out = _a_run_that_changed_a_txt(scripted_server, configure, cli, sentinel_home, tmp_path)
    (ws / "a.txt").unlink()
    os.link(outside, ws / "a.txt")
    assert "restored a.txt" in cli("undo", out["id"], check=0).stdout
    assert outside.read_text() == "operator's\n"
    assert (ws / "a.txt").read_text() == "original\n" and os.stat(ws / "a.txt").st_nlink == 1


def test_undo_never_writes_or_removes_through_a_directory_symlinked_out_of_the_workspace(
        scripted_server, configure, cli, sentinel_home, tmp_path):
    """The directory of recorded files replaced by a link to a directory outside: neither the file to put back nor
    the file to remove is reached through it; what could not be restored is said (exit 1)."""
    ws = _workspace(sentinel_home)
    (ws / "sub").mkdir()
    (ws / "sub" / "a.txt").write_text("original\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("operator's\n")
    (outside / "new.txt").write_text("operator's new\n")
    configure(server=scripted_server([_call("read_file", path="sub/a.txt"),
                                      _call("write_file", path="sub/a.txt", content="changed\n"),
                                      _call("write_file", path="sub/new.txt", content="made up\n"), "Done."]))
    out = cli.json("run", "Change sub/a.txt and write sub/new.txt.", "--json", check=0)
    (ws / "sub" / "a.txt").unlink()
    (ws / "sub" / "new.txt").unlink()
    (ws / "sub").rmdir()
    (ws / "sub").symlink_to(outside)
    undone = cli("undo", out["id"], check=1)
    assert "could not restore sub/a.txt" in undone.stderr
    assert (outside / "a.txt").read_text() == "operator's\n" and (outside / "new.txt").read_text() == "operator's new\n"


def _plant_fifo_in_the_workspace(ws, run_dir):
    (ws / "a.txt").unlink()
    os.mkfifo(ws / "a.txt")


def _plant_fifo_as_the_blob(ws, run_dir):
    sha = json.loads((run_dir / "undo" / "base.json").read_text())["files"]["a.txt"][0]
    (run_dir / "undo" / "blobs" / sha).unlink()
    os.mkfifo(run_dir / "undo" / "blobs" / sha)


def _plant_fifo_as_the_base(ws, run_dir):
    (run_dir / "undo" / "base.json").unlink()
    os.mkfifo(run_dir / "undo" / "base.json")


@pytest.mark.parametrize("plant, restored, b_kept", [(_plant_fifo_in_the_workspace, True, False),
                                                     (_plant_fifo_as_the_blob, False, False),
                                                     (_plant_fifo_as_the_base, False, True)],
                         ids=["workspace", "blob", "base"])
def test_a_fifo_planted_where_undo_reads_is_never_waited_on(scripted_server, configure, cli, sentinel_home,
                                                            plant, restored, b_kept):
    """Opening a FIFO waits for a writer: one planted where a recorded file was is replaced by the file; one planted
    as a blob or as the base manifest makes the restore say what it could not put back (exit 1), never hang. Without
    its base manifest, a file the run created is not removed either: whether it was there before is unknown."""
    ws = _workspace(sentinel_home)
    (ws / "a.txt").write_text("original\n")
    configure(server=scripted_server([_call("read_file", path="a.txt"),
                                      _call("write_file", path="a.txt", content="changed\n"),
                                      _call("write_file", path="b.txt", content="new\n"), "Changed a.txt."]))
    out = cli.json("run", "Change a.txt and write b.txt.", "--json", check=0)
    plant(ws, sentinel_home / "runs" / out["id"])
    undone = cli("undo", out["id"], check=0 if restored else 1, timeout=30)
    assert ((ws / "a.txt").read_text() == "original\n") == restored
    assert ("could not restore a.txt" in undone.stderr) != restored and (ws / "b.txt").exists() == b_kept


def test_undo_shows_a_file_name_that_holds_terminal_controls_escaped(scripted_server, configure, cli, sentinel_home):
    """The paths undo prints are the journal's (a file the agent named): a name holding an escape sequence is
    printed with the sequence shown, never sent to the operator's terminal."""
    _workspace(sentinel_home)
    configure(BASH_AUTO, server=scripted_server([_call("bash", command="printf x > \"$(printf 'e\\033[2Jx.txt')\""),
                                                 "Wrote it."]))
    out = cli.json("run", "Write the file.", "--json", check=4)  # done_unverified: how it ends is not the point
    undone = cli("undo", out["id"], check=0)
    assert "\x1b" not in undone.stdout and "removed e\\x1b[2Jx.txt" in undone.stdout


def test_what_a_chat_undo_goes_back_to():
    from sentinel.worker.undo import UndoError, point, previous_point

    steps = [{"changes": {}}, {"changes": {}}, {"changes": {}, "undo": 1}]
    assert point(steps, 3) == 1 and previous_point(steps) == 0
    assert previous_point(steps[:2]) == 1
    try:
        previous_point([{"changes": {}, "undo": 0}])
    except UndoError as exc:
        assert "nothing to undo" in str(exc)
    else:
        raise AssertionError("an undo back to the start leaves nothing to undo")


def test_a_workspace_that_holds_the_home_never_checkpoints_the_harness_files(scripted_server, configure, cli,
                                                                             sentinel_home):
    """A workspace holding the home (`sentinel run` from ~ with the home in ~/.sentinel, or the home itself): the
    run's own journal, blobs and state database are not workspace changes."""
    configure(BASH_AUTO, server=scripted_server([_call("bash", command="echo one > a.txt"),
                                                 _call("bash", command="echo two > b.txt"), "Wrote a.txt and b.txt."]))
    out = cli.json("run", "Write a.txt and b.txt.", "--workspace", str(sentinel_home), "--json", check=0)
    steps = cli.json("show", out["id"], "--json")["checkpoints"]
    assert [(c["changed"], c["removed"]) for c in steps] == [(["a.txt"], []), (["b.txt"], [])]
