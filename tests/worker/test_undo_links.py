"""`sentinel undo` records symbolic links as links: a link the run made is removed, one it removed or pointed
elsewhere comes back, a file it replaced with a link (or a link with a file) comes back, and undo never follows a
link, never writes through one, and keeps a link the person changed after the run. Directories the run made go
once undo empties them. A run recorded before links were is undone as it was then."""

from __future__ import annotations

import hashlib
import json
import os
import signal

import pytest

from test_undo_nothing_lost import BASH_AUTO, _call, _steps, _workspace


def _run(scripted_server, configure, cli, *commands):
    """One run of `commands`, one bash call each; its id (how the run ends is not the point)."""
    configure(BASH_AUTO, server=scripted_server([*(_call("bash", command=c) for c in commands), "Done."]))
    ran = cli("run", "Tidy the project", "--json")
    assert "Traceback" not in ran.stderr, ran.stderr
    return json.loads(ran.stdout)["id"]


def _tree(root):
    """Every name beneath `root` (not following links) with a file's content or a link's target."""
    out = {}
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(here, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                out[rel] = ("dir", None)
            else:
                with open(path, "rb") as f:
                    out[rel] = ("file", f.read())
    return out


def _host_file(path):
    """A host file's content digest and, for it and the link naming it if any, what a write or replace moves."""
    def moved(st):
        return st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns

    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return digest, moved(os.stat(path)), moved(os.lstat(path))


def test_the_attack_a_link_to_etc_os_release_is_gone_after_undo_and_the_host_file_untouched(
        scripted_server, configure, cli, sentinel_home):
    """`ln -s /etc/os-release notes.md` in a run: before links were recorded, undo left the link and said the
    workspace matched checkpoint 0. Now `show` lists it, undo removes it and says so."""
    ws = _workspace(sentinel_home, **{"other.md": "other\n"})
    before = _host_file("/etc/os-release")
    run_id = _run(scripted_server, configure, cli, "ln -s /etc/os-release notes.md")
    assert [(s["changed"], s["removed"]) for s in _steps(cli, run_id)] == [(["notes.md"], [])]

    undone = cli("undo", run_id, check=0)
    assert undone.stdout.splitlines() == ["removed notes.md"] and "already match" not in undone.stdout
    assert not os.path.lexists(ws / "notes.md") and (ws / "other.md").read_text() == "other\n"
    assert _host_file("/etc/os-release") == before


def test_a_file_the_run_replaced_with_a_link_comes_back_with_its_content_and_mode(
        scripted_server, configure, cli, sentinel_home, tmp_path):
    ws = _workspace(sentinel_home, **{"notes.md": "# Notes\n"})
    os.chmod(ws / "notes.md", 0o640)
    outside = tmp_path / "outside.md"
    outside.write_text("operator's\n")
    run_id = _run(scripted_server, configure, cli, f"rm notes.md && ln -s {outside} notes.md")
    assert os.readlink(ws / "notes.md") == str(outside)

    assert cli("undo", run_id, check=0).stdout.splitlines() == ["restored notes.md"]
    assert not (ws / "notes.md").is_symlink() and (ws / "notes.md").read_text() == "# Notes\n"
    assert os.stat(ws / "notes.md").st_mode & 0o7777 == 0o640
    assert outside.read_text() == "operator's\n"


def test_a_link_the_run_replaced_with_a_file_comes_back_and_the_file_it_named_is_untouched(
        scripted_server, configure, cli, sentinel_home, tmp_path):
    ws = _workspace(sentinel_home)
    target = tmp_path / "shared.ini"
    target.write_text("shared\n")
    (ws / "cfg.ini").symlink_to(target)
    run_id = _run(scripted_server, configure, cli, "printf 'agent\\n' > cfg.new && mv cfg.new cfg.ini")
    assert not (ws / "cfg.ini").is_symlink()

    assert cli("undo", run_id, check=0).stdout.splitlines() == ["restored cfg.ini"]
    assert os.readlink(ws / "cfg.ini") == str(target) and target.read_text() == "shared\n"


def test_a_link_the_run_pointed_elsewhere_gets_its_old_target_back(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    (ws / "current").symlink_to("releases/v1")  # dangling: a link is recorded by its text, not what it names
    run_id = _run(scripted_server, configure, cli, "ln -sfn releases/v2 current")
    assert [s["changed"] for s in _steps(cli, run_id)] == [["current"]]
    assert cli("undo", run_id, check=0).stdout.splitlines() == ["restored current"]
    assert os.readlink(ws / "current") == "releases/v1"


def test_a_link_the_run_removed_is_made_again(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    (ws / "latest").symlink_to("data/v1.csv")
    run_id = _run(scripted_server, configure, cli, "rm latest")
    assert [(s["changed"], s["removed"]) for s in _steps(cli, run_id)] == [([], ["latest"])]
    assert cli("undo", run_id, check=0).stdout.splitlines() == ["restored latest"]
    assert os.readlink(ws / "latest") == "data/v1.csv"


def test_links_whose_names_and_targets_are_not_utf8_are_recorded_and_undone_byte_for_byte(
        scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    wsb = os.fsencode(ws)
    os.symlink(b"tar\xff/get", wsb + b"/keep\xfe")
    run_id = _run(scripted_server, configure, cli,
                  "ln -sfn other \"$(printf 'keep\\376')\"; mkdir \"$(printf 'd\\377')\"; "
                  "ln -s \"$(printf '\\377x')\" \"$(printf 'd\\377/l\\376')\"")
    assert os.readlink(wsb + b"/d\xff/l\xfe") == b"\xffx"
    assert [sorted(s["changed"]) for s in _steps(cli, run_id)] == [["d\0ff/l\0fe", "keep\0fe"]]
    base = json.loads((sentinel_home / "runs" / run_id / "undo" / "base.json").read_text())
    assert base["files"]["keep\0fe"][:2] == ["symlink", "tar\0ff/get"]  # the target keyed as a name is

    undone = cli("undo", run_id, check=0)
    assert sorted(undone.stdout.splitlines()) == ["removed d\\xff/", "removed d\\xff/l\\xfe", "restored keep\\xfe"]
    assert os.readlink(wsb + b"/keep\xfe") == b"tar\xff/get"
    assert not os.path.lexists(wsb + b"/d\xff")


def test_a_link_the_person_changed_after_the_run_is_kept_and_named(scripted_server, configure, cli, sentinel_home):
    """The run made `link` and pointed `cur` elsewhere; then the person pointed `link` at another file and put a
    file of their own at `cur`. Undo keeps both as they are and says so; moved aside, the run's start comes back."""
    ws = _workspace(sentinel_home, **{"a.txt": "a\n", "b.txt": "b\n"})
    (ws / "cur").symlink_to("v1")
    run_id = _run(scripted_server, configure, cli, "ln -s a.txt link && ln -sfn v2 cur")
    (ws / "link").unlink()
    (ws / "link").symlink_to("b.txt")
    (ws / "cur").unlink()
    (ws / "cur").write_text("mine\n")

    undone = cli("undo", run_id, check=1)
    for path in ("link", "cur"):
        assert f"kept {path} as it is: it changed after the run's last step" in undone.stderr
    assert os.readlink(ws / "link") == "b.txt" and (ws / "cur").read_text() == "mine\n"
    assert sorted(cli.json("undo", run_id, "--json", check=1)["kept"]) == ["cur", "link"]

    (ws / "cur").rename(ws / "cur.mine")
    (ws / "link").unlink()
    assert cli("undo", run_id, check=0).stdout.splitlines() == ["restored cur"]
    assert os.readlink(ws / "cur") == "v1" and (ws / "cur.mine").read_text() == "mine\n"
    assert not os.path.lexists(ws / "link")


def test_undo_never_follows_a_link_the_run_put_where_a_directory_was(scripted_server, configure, cli,
                                                                     sentinel_home, tmp_path):
    """The run replaced `dir` (holding a.txt) with `dir -> /tmp/…/outside`, which holds an a.txt of its own: undo
    removes the link and makes dir/a.txt in a directory again, and redoing puts the link back; nothing is ever
    written or removed in the directory outside."""
    ws = _workspace(sentinel_home)
    (ws / "dir").mkdir()
    (ws / "dir" / "a.txt").write_text("original\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("operator's\n")
    (outside / "b.txt").write_text("operator's b\n")
    seen = _tree(outside)
    run_id = _run(scripted_server, configure, cli, f"rm -r dir && ln -s {outside} dir")
    assert [(s["changed"], s["removed"]) for s in _steps(cli, run_id)] == [(["dir"], ["dir/a.txt"])]

    undone = cli("undo", run_id, check=0)
    assert sorted(undone.stdout.splitlines()) == ["removed dir", "restored dir/a.txt"]
    assert not (ws / "dir").is_symlink() and (ws / "dir" / "a.txt").read_text() == "original\n"
    assert _tree(outside) == seen

    redone = cli("undo", run_id, "--to", "1", check=0)
    assert sorted(redone.stdout.splitlines()) == ["removed dir/", "removed dir/a.txt", "restored dir"]
    assert os.readlink(ws / "dir") == str(outside) and _tree(outside) == seen
    cli("undo", run_id, "--to", "0", check=0)
    assert (ws / "dir" / "a.txt").read_text() == "original\n" and _tree(outside) == seen


def test_a_run_killed_mid_command_records_its_link_changes_and_undo_reverts_them(
        scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home, **{"notes.md": "# Notes\n"})
    (ws / "cur").symlink_to("v1")
    configure(BASH_AUTO, server=scripted_server([
        _call("bash", command="ln -sfn v2 cur; ln -s /etc/os-release made.md; kill -9 $PPID"),
        "The command was interrupted."]))
    assert cli("run", "Point cur at v2", "--json").returncode == -signal.SIGKILL
    run_id = cli.json("runs", "--json")[0]["id"]
    cli("resume", run_id, "--json")
    assert [(s["changed"], s["removed"]) for s in _steps(cli, run_id)] == [(["cur", "made.md"], [])]

    undone = cli("undo", run_id, check=0)
    assert sorted(undone.stdout.splitlines()) == ["removed made.md", "restored cur"]
    assert os.readlink(ws / "cur") == "v1" and not os.path.lexists(ws / "made.md")


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a link to another user takes root")
def test_the_owner_of_a_link_is_recorded_and_given_back(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    (ws / "l").symlink_to("x")
    run_id = _run(scripted_server, configure, cli, "chown -h 65534:65534 l")
    assert [s["changed"] for s in _steps(cli, run_id)] == [["l"]]
    assert cli("undo", run_id, check=0).stdout.splitlines() == ["restored l"]
    assert (os.lstat(ws / "l").st_uid, os.lstat(ws / "l").st_gid) == (os.getuid(), os.getgid())


def test_directories_the_run_made_go_once_undo_empties_them_and_no_other(scripted_server, configure, cli,
                                                                         sentinel_home):
    """out/ and out/sub/ held only what the run wrote: removed. old/ was there before the run: stays. made/ holds a
    file the person wrote after the run: stays, with the file."""
    ws = _workspace(sentinel_home)
    (ws / "old").mkdir()
    run_id = _run(scripted_server, configure, cli, "mkdir -p out/sub made && echo r > out/sub/r.txt && "
                                                   "echo n > old/n.txt && echo m > made/m.txt")
    (ws / "made" / "mine.txt").write_text("mine\n")
    undone = cli("undo", run_id, check=0)
    assert sorted(undone.stdout.splitlines()) == ["removed made/m.txt", "removed old/n.txt", "removed out/",
                                                  "removed out/sub/", "removed out/sub/r.txt"]
    assert not (ws / "out").exists() and (ws / "old").is_dir() and not (ws / "old" / "n.txt").exists()
    assert (ws / "made" / "mine.txt").read_text() == "mine\n" and not (ws / "made" / "m.txt").exists()


def test_an_empty_directory_with_nothing_recorded_in_it_is_said_to_stay(scripted_server, configure, cli,
                                                                         sentinel_home):
    ws = _workspace(sentinel_home)
    run_id = _run(scripted_server, configure, cli, "mkdir build")
    undone = cli("undo", run_id, check=0)
    assert "files and symlinks already match checkpoint 0" in undone.stdout
    assert "directories are not recorded: an empty one the run made stays" in undone.stdout
    assert (ws / "build").is_dir()


# -- a run recorded before links were --------------------------------------------------------------------


def _as_before_links(entry):
    """An entry as the code before links wrote it: a link was not seen (a path it replaced was removed), and
    a file's entry held [sha256, mode] (journals from before owners were kept)."""
    if entry is None or entry[0] == "symlink":
        return None
    return entry[:2]


def test_a_journal_written_before_links_were_recorded_undoes_as_it_did(scripted_server, configure, cli,
                                                                        sentinel_home, tmp_path):
    """The run replaced a.txt with a link outside and made a link and a directory; its base and journal are
    rewritten as the older code wrote them. Undo does what it did then: a.txt back as a file (the link replaced,
    never written through), sub/b.txt removed, the link it never recorded and the directory left."""
    ws = _workspace(sentinel_home, **{"a.txt": "original\n"})
    outside = tmp_path / "outside.txt"
    outside.write_text("operator's\n")
    run_id = _run(scripted_server, configure, cli,
                  f"rm a.txt && ln -s {outside} a.txt && mkdir sub && echo b > sub/b.txt && ln -s a.txt c.lnk")
    run_dir = sentinel_home / "runs" / run_id
    base = json.loads((run_dir / "undo" / "base.json").read_text())
    old_base = {"complete": base["complete"], "files": {p: _as_before_links(e) for p, e in base["files"].items()}}
    (run_dir / "undo" / "base.json").write_text(json.dumps(old_base))
    lines = []
    for line in (run_dir / "journal.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "workspace_step":
            record["changes"] = {p: _as_before_links(e) for p, e in record["changes"].items()
                                 if not (e is not None and e[0] == "symlink" and p not in base["files"])}
        lines.append(json.dumps(record))
    (run_dir / "journal.jsonl").write_text("\n".join(lines) + "\n")
    (run_dir / "snapshot.json").unlink(missing_ok=True)  # the state is read from the journal as rewritten
    assert [(s["changed"], s["removed"]) for s in _steps(cli, run_id)] == [(["sub/b.txt"], ["a.txt"])]

    undone = cli("undo", run_id, check=0)
    assert sorted(undone.stdout.splitlines()) == ["removed sub/b.txt", "restored a.txt"]
    assert not (ws / "a.txt").is_symlink() and (ws / "a.txt").read_text() == "original\n"
    assert outside.read_text() == "operator's\n"
    assert (ws / "sub").is_dir() and os.readlink(ws / "c.lnk") == "a.txt"


def test_a_run_begun_before_links_were_recorded_goes_on_recording_files_only(tmp_path):
    """Resumed by this version, a run whose base has no links keeps its journal in one format: a link it makes
    is not recorded, a file is."""
    from sentinel.worker.undo import Checkpoints

    run_dir = tmp_path / "home" / "runs" / "r-0000000001"
    run_dir.mkdir(parents=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    Checkpoints(run_dir, ws).before("bash", {}, set())
    base_file = run_dir / "undo" / "base.json"
    base = json.loads(base_file.read_text())
    base_file.write_text(json.dumps({"complete": base["complete"], "files": base["files"]}))

    points = Checkpoints(run_dir, ws)  # the resume's process
    points.before("bash", {}, set())
    (ws / "link").symlink_to("a.txt")
    (ws / "b.txt").write_text("b\n")
    changes, complete = points.after()
    assert list(changes) == ["b.txt"] and complete
