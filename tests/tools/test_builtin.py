"""Built-in tools: confinement to the workspace, argument validation, bash timeouts and truncation."""

from __future__ import annotations

import subprocess
import time

import pytest

from sentinel.tools import ToolContext, ToolError, parse_arguments
from sentinel.tools.builtin import default_registry


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    return d


@pytest.fixture
def run(ws):
    reg = default_registry()
    ctx = ToolContext(workspace=ws, tools_mode="plain", output_max_chars=1000, bash_timeout_s=10)
    return lambda name, **args: reg.run(name, parse_arguments(args, reg.get(name)), ctx)


def test_write_read_edit_list(run, ws):
    assert "Wrote" in run("write_file", path="d/a.txt", content="one two")
    assert run("read_file", path="d/a.txt") == "one two"
    assert "replaced 1" in run("edit_file", path="d/a.txt", old_string="two", new_string="three")
    assert (ws / "d" / "a.txt").read_text() == "one three"
    assert run("list_dir", path=".") == "d/"


def test_edit_file_reports_missing_and_ambiguous_text(run):
    run("write_file", path="a.txt", content="x x")
    assert run("edit_file", path="a.txt", old_string="y", new_string="z").startswith("Error: old_string not found")
    assert "appears 2 times" in run("edit_file", path="a.txt", old_string="x", new_string="z")


@pytest.mark.parametrize("path", ["../outside.txt", "/tmp/outside.txt", "d/../../outside.txt"])
def test_writes_outside_the_workspace_fail(run, ws, path):
    assert "outside the workspace" in run("write_file", path=path, content="x")
    assert not (ws.parent / "outside.txt").exists()


def test_planted_symlinks_never_redirect_a_write(run, ws, tmp_path):
    target = tmp_path / "victim"
    target.mkdir()
    (ws / "link").symlink_to(target)
    (ws / "file-link").symlink_to(target / "f.txt")
    assert run("write_file", path="link/f.txt", content="x").startswith("Error")
    assert run("write_file", path="file-link", content="x").startswith("Error")
    assert run("read_file", path="link/../../victim/f.txt").startswith("Error")
    assert list(target.iterdir()) == []


def test_bad_arguments_become_corrections():
    reg = default_registry()
    with pytest.raises(ToolError, match="'content' is a required property"):
        parse_arguments('{"path": "a"}', reg.get("write_file"))
    with pytest.raises(ToolError, match="not valid JSON"):
        parse_arguments('{"path": ', reg.get("read_file"))
    with pytest.raises(ToolError, match="field 'path'.*not of type 'string'"):
        parse_arguments({"path": 5}, reg.get("read_file"))
    assert parse_arguments({"command": "ls", "timeout_s": "5"}, reg.get("bash")) == {"command": "ls", "timeout_s": 5}


def test_bash_timeout_kills_the_whole_process_group(run, ws):
    began = time.monotonic()
    out = run("bash", command="(sleep 31.5; echo late > late.txt) & sleep 31.5", timeout_s=0.5)
    assert out.startswith("Error: command timed out") and time.monotonic() - began < 5
    time.sleep(0.2)
    assert not (ws / "late.txt").exists()
    left = subprocess.run(["pgrep", "-f", "sleep 31.5"], capture_output=True, text=True).stdout.split()
    assert left == []


def test_bash_output_is_truncated_with_a_note(run):
    out = run("bash", command="head -c 5000 /dev/zero | tr '\\0' a")
    assert "characters truncated" in out and len(out) < 1200


def test_edit_file_replaces_every_occurrence_when_asked(run, ws):
    """A word replacement that needs replace-all gets it; without the flag the error says how to ask."""
    run("write_file", path="a.txt", content="cat and cat and cat")
    assert 'replace_all": true' in run("edit_file", path="a.txt", old_string="cat", new_string="dog")
    assert run("edit_file", path="a.txt", old_string="cat", new_string="dog", replace_all=True) == (
        "Edited a.txt: replaced 3 occurrences")
    assert (ws / "a.txt").read_text() == "dog and dog and dog"


def test_write_file_appends_on_a_line_of_its_own(run, ws):
    (ws / "notes.txt").write_text("one\ntwo\nthree")
    assert run("write_file", path="notes.txt", content="four\n", append=True).startswith("Appended 5 characters")
    assert (ws / "notes.txt").read_text() == "one\ntwo\nthree\nfour\n"
    run("write_file", path="new.txt", content="first\n", append=True)  # a missing file is created
    assert (ws / "new.txt").read_text() == "first\n"
    assert "append" in run("edit_file", path="notes.txt", old_string="", new_string="five")  # the error says how


def test_a_file_tool_never_writes_through_a_hard_link(tmp_path):
    """write_file, edit_file and append to a name with other names (hard links) write that name only: the other
    names keep what they held (a decision on the path would otherwise not cover them)."""
    import os

    from sentinel.tools.fs import Confined

    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    for target in (ws / "secret.pem", elsewhere / "outside.txt"):
        target.write_text("KEEP\n")
        os.chmod(target, 0o640)
        link = ws / f"alias-{target.name}"
        os.link(target, link)
        Confined(ws).write_bytes(str(link.relative_to(ws)), b"new\n")
        assert target.read_text() == "KEEP\n" and link.read_text() == "new\n"
        assert os.stat(link).st_nlink == 1 and (os.stat(link).st_mode & 0o777) == 0o640
    assert not [p.name for p in ws.iterdir() if ".sentinel-" in p.name]  # no temporary file left


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    import errno
    import os

    from sentinel.tools.fs import Confined

    os.mkfifo(tmp_path / "pipe")
    for call in (lambda fs: fs.read_bytes("pipe"), lambda fs: fs.write_bytes("pipe", b"x")):
        with pytest.raises(OSError) as caught:
            call(Confined(tmp_path))
        assert caught.value.errno in (errno.EINVAL, errno.ENXIO)
