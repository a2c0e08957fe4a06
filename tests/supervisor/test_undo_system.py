"""`sentinel undo` in system mode: the supervisor starts the restore through Leash as the agent's user, confined to
the run's directory and workspace; it puts back what a run deleted, overwrote and created, and what the agent
planted or rewrote (a symlink where a file was, kept and named; a journal or base manifest naming paths outside;
a rewritten blob) never makes it write outside the workspace. Who may undo is who may resume: an operator, or an
agent's own user for its own door sessions only."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sx_helpers import PY, agent_config, as_user, write_as
from test_agent_door import _door

pytestmark = pytest.mark.root

BASH_AUTO = {"policy": {"bash": {"default": "auto"}}}


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _workspace(name: str) -> Path:
    return Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "workspace"


def _agent_run(make_agent, supervisor, scripted_server, sentinel_cmd, files: dict, script: list, task: str,
               executable: tuple[str, ...] = ()):
    """An agent whose workspace holds `files` (written as the agent; `executable` ones 0755), a supervisor, and one
    run of `script`."""
    name = make_agent()
    ws = _workspace(name)
    for rel, text in files.items():
        write_as(name, ws / rel, text)
    for rel in executable:
        _as_agent(name, "chmod", "755", str(ws / rel))
    server = scripted_server(script)
    agent_config(name, server, BASH_AUTO)
    supervisor([server.port])
    out = json.loads(sentinel_cmd("run", task, "--agent", name, "--json").stdout)  # how it ends is not the point
    return name, ws, out["id"]


def _as_agent(name: str, *argv: str, input: str | None = None) -> None:
    proc = as_user(name, *argv, input=input)
    assert proc.returncode == 0, proc.stderr


def test_system_undo_restores_the_workspace_as_the_agents_user(system, make_agent, supervisor, scripted_server,
                                                                 sentinel_cmd):
    name, ws, run_id = _agent_run(make_agent, supervisor, scripted_server, sentinel_cmd,
                                  {"keep.txt": "untouched\n", "old.log": "old log\n", "data.csv": "a,b\n1,2\n",
                                   "run.sh": "echo hi\n"}, [
        _call("bash", command="rm old.log && chmod 600 run.sh"),          # step 1: a delete, a mode change
        _call("read_file", path="data.csv"),                              # read only: no checkpoint
        _call("write_file", path="data.csv", content="wrong\n"),          # step 2: an overwrite
        _call("write_file", path="sub/new.txt", content="made up\n"),     # step 3: a new file
        "Done: removed old.log, rewrote data.csv and created sub/new.txt."],
        "Remove old.log, rewrite data.csv and create sub/new.txt.", executable=("run.sh",))
    uid = pwd.getpwnam(name).pw_uid
    shown = json.loads(sentinel_cmd("show", run_id, "--json", check=0).stdout)["checkpoints"]
    assert [(c["step"], c["tool"], c["changed"], c["removed"]) for c in shown] == [
        (1, "bash", ["run.sh"], ["old.log"]), (2, "write_file", ["data.csv"], []),
        (3, "write_file", ["sub/new.txt"], [])]

    partial = json.loads(sentinel_cmd("undo", run_id, "--to", "1", "--json", check=0).stdout)  # keeps step 1
    assert partial["restored"] == ["data.csv"] and partial["to"] == 1
    assert partial["removed"] == ["sub/", "sub/new.txt"]  # sub: made by the run, empty once undone
    assert (ws / "data.csv").read_text() == "a,b\n1,2\n" and not (ws / "old.log").exists()
    assert (ws / "run.sh").stat().st_mode & 0o777 == 0o600

    undone = sentinel_cmd("undo", run_id, check=0)  # everything the run did, printed as local mode prints it
    assert undone.stdout.splitlines() == ["restored old.log", "restored run.sh"], undone.stderr
    assert (ws / "old.log").read_text() == "old log\n" and (ws / "keep.txt").read_text() == "untouched\n"
    assert (ws / "data.csv").read_text() == "a,b\n1,2\n" and not (ws / "sub" / "new.txt").exists()
    assert (ws / "run.sh").stat().st_mode & 0o777 == 0o755
    assert {str(p.relative_to(ws)): p.read_text() for p in ws.rglob("*") if p.is_file()} == {
        "keep.txt": "untouched\n", "old.log": "old log\n", "data.csv": "a,b\n1,2\n", "run.sh": "echo hi\n"}
    for restored in ("old.log", "data.csv"):  # new inodes, made by the restore: the agent's, never root's
        assert (ws / restored).stat().st_uid == uid
    run_dir = Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "runs" / run_id
    assert (run_dir / "journal.jsonl").stat().st_uid == uid

    steps = json.loads(sentinel_cmd("show", run_id, "--json", check=0).stdout)["checkpoints"]
    assert [c["undo"] for c in steps[3:]] == [1, 0]  # journaled as checkpoints, as local mode does
    assert "step 5 undo to step 0: changed old.log, run.sh" in sentinel_cmd("show", run_id, check=0).stdout
    again = json.loads(sentinel_cmd("undo", run_id, "--to", "3", "--json", check=0).stdout)  # redo
    assert (ws / "sub" / "new.txt").read_text() == "made up\n" and again["removed"] == ["old.log"]
    same = sentinel_cmd("undo", run_id, "--to", "3", check=0)
    assert f"the workspace's files and symlinks already match checkpoint 3 of run {run_id}" in same.stdout
    bad = sentinel_cmd("undo", run_id, "--to", "9", check=2)  # a usage error, one line, as in local mode
    assert "no step 9" in bad.stderr and "Traceback" not in bad.stderr


def test_a_link_planted_where_a_file_was_is_never_written_through(system, make_agent, supervisor, scripted_server,
                                                                  sentinel_cmd):
    """Symlinks where the run's files were: to a root-owned file, to a file the agent's user may write outside its
    workspace, into another agent's workspace; and a hard link to a file of the agent's outside its workspace.
    None is written through: the hard link is replaced, each symlink (which the run did not leave) is kept and
    named; once the links are gone, each file comes back as a file of its own, the agent's."""
    other = make_agent()
    theirs = _workspace(other) / "theirs.txt"
    write_as(other, theirs, "other agent's\n")
    root_owned = system.etc / "root.conf"
    root_owned.write_text("root's\n")
    files = {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n"}
    name, ws, run_id = _agent_run(make_agent, supervisor, scripted_server, sentinel_cmd, files,
                                  [*(_call("read_file", path=f) for f in files),
                                   _call("bash", command="for f in a b c d; do echo changed > $f.txt; done"),
                                   "Changed them."], "Change a.txt, b.txt, c.txt and d.txt.")
    pw = pwd.getpwnam(name)
    agents_own = Path(pw.pw_dir) / "outside.txt"  # the agent's user may write it: only the confinement stops it
    hard = Path(pw.pw_dir) / "hard.txt"
    for path in (agents_own, hard):
        write_as(name, path, "agent's own, outside\n")
    for link, target in (("a.txt", root_owned), ("b.txt", agents_own), ("c.txt", theirs)):
        _as_agent(name, "ln", "-sf", str(target), str(ws / link))
    _as_agent(name, "ln", "-f", str(hard), str(ws / "d.txt"))

    undone = sentinel_cmd("undo", run_id, check=1)
    assert undone.stdout.splitlines() == ["restored d.txt"]
    for link, target in (("a.txt", root_owned), ("b.txt", agents_own), ("c.txt", theirs)):
        assert f"kept {link} as it is" in undone.stderr and os.readlink(ws / link) == str(target)
    assert root_owned.read_text() == "root's\n" and root_owned.stat().st_uid == 0
    assert agents_own.read_text() == hard.read_text() == "agent's own, outside\n"
    assert theirs.read_text() == "other agent's\n"

    _as_agent(name, "rm", str(ws / "a.txt"), str(ws / "b.txt"), str(ws / "c.txt"))
    again = sentinel_cmd("undo", run_id, check=0)
    assert sorted(again.stdout.splitlines()) == ["restored a.txt", "restored b.txt", "restored c.txt"]
    assert root_owned.read_text() == "root's\n" and theirs.read_text() == "other agent's\n"
    for rel, text in files.items():
        assert not (ws / rel).is_symlink() and (ws / rel).read_text() == text
        assert (ws / rel).stat().st_uid == pw.pw_uid and (ws / rel).stat().st_nlink == 1


def test_a_journal_base_or_blob_the_agent_rewrote_never_writes_outside_and_the_undo_says_it_failed(
        system, make_agent, supervisor, scripted_server, sentinel_cmd):
    name, ws, run_id = _agent_run(make_agent, supervisor, scripted_server, sentinel_cmd,
                                  {"data.csv": "a,b\n", "notes.txt": "notes\n"},
                                  [_call("read_file", path="data.csv"),
                                   _call("write_file", path="data.csv", content="wrong\n"),
                                   _call("bash", command="echo more >> notes.txt"), "Rewrote data.csv."],
                                  "Rewrite data.csv and add to notes.txt.")
    pw = pwd.getpwnam(name)
    run_dir = Path(pw.pw_dir) / ".sentinel" / "runs" / run_id
    undo_dir = run_dir / "undo"
    base = json.loads((undo_dir / "base.json").read_text())
    sha = base["files"]["data.csv"][0]  # [sha256, mode, uid, gid]
    _as_agent(name, "sh", "-c", f"cat > '{undo_dir / 'blobs' / sha}'", input="forged by the agent\n")  # the blob
    planted = Path(pw.pw_dir) / "planted.txt"   # ../../planted.txt from the workspace: the agent's own home
    gone = system.base / "agents-file.txt"      # an absolute path outside, which the agent's user may write
    gone.write_text("stays\n")
    os.chown(gone, pw.pw_uid, pw.pw_gid)
    etc_file = system.etc / "x"                 # ../../etc/x, as far up as it takes
    climb = "../" * len(ws.parts) + str(etc_file).lstrip("/")
    notes_sha = base["files"]["notes.txt"][0]
    base["files"].update({"../../planted.txt": [notes_sha, 0o644], climb: [notes_sha, 0o644]})
    _as_agent(name, "sh", "-c", f"cat > '{undo_dir / 'base.json'}'", input=json.dumps(base))
    last = json.loads((run_dir / "journal.jsonl").read_text().splitlines()[-1])
    forged = {"seq": last["seq"] + 1, "t": time.time(), "type": "workspace_step", "call_id": "c-forged",
              "tool": "bash", "changes": {"../../planted.txt": None, climb: None, str(gone): None},
              "complete": True}
    _as_agent(name, "sh", "-c", f"cat >> '{run_dir / 'journal.jsonl'}'", input=json.dumps(forged) + "\n")

    undone = sentinel_cmd("undo", run_id, check=1)
    assert "restored notes.txt" in undone.stdout and "Traceback" not in undone.stderr
    for path in ("data.csv", "../../planted.txt", climb, str(gone)):
        assert f"could not restore {path}" in undone.stderr
    assert (ws / "data.csv").read_text() == "wrong\n"  # the forged blob was refused by its hash
    assert (ws / "notes.txt").read_text() == "notes\n"
    assert not planted.exists() and not etc_file.exists() and gone.read_text() == "stays\n"


def test_the_undo_process_is_the_agents_under_leash_and_a_busy_run_is_refused(system, make_agent, supervisor,
                                                                                scripted_server, sentinel_cmd):
    """While the run's worker executes, undo is Busy; once it ended, the undo runs as the agent's uid under the
    worker's layers (the audit says which), and the operator's name is recorded."""
    name = make_agent()
    ws = _workspace(name)
    write_as(name, ws / "a.txt", "a\n")
    wait = "echo changed > a.txt; touch started; while [ ! -e go ]; do sleep 0.05; done"
    server = scripted_server([_call("read_file", path="a.txt"), _call("bash", command=wait), "Changed a.txt."])
    agent_config(name, server, BASH_AUTO)
    supervisor([server.port])
    run = subprocess.Popen([PY, "-m", "sentinel", "run", "Change a.txt.", "--agent", name, "--json"],
                           env={**os.environ, **system.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        deadline = time.monotonic() + 60
        while not (ws / "started").exists():
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read() if run.stderr else ""
            time.sleep(0.05)
        run_id = json.loads(sentinel_cmd("runs", "--json", check=0).stdout)[0]["id"]
        busy = sentinel_cmd("undo", run_id, check=1)
        assert "is being executed by its worker" in busy.stderr and "Traceback" not in busy.stderr
        assert (ws / "a.txt").read_text() == "changed\n"
    finally:
        if (ws / "started").exists():
            write_as(name, ws / "go", "")
        out, err = run.communicate(timeout=90)
    assert json.loads(out)["status"] == "done", err
    assert sentinel_cmd("undo", run_id, check=0).stdout.splitlines() == ["restored a.txt", "removed go",
                                                                          "removed started"]
    assert (ws / "a.txt").read_text() == "a\n" and (ws / "a.txt").stat().st_uid == pwd.getpwnam(name).pw_uid
    from sentinel.supervisor.server import open_store

    store = open_store(system.state)
    try:
        (started,) = [r for r in store.audit_records(run_id) if r["kind"] == "undo_started"]
        (undone,) = [r for r in store.audit_records(run_id) if r["kind"] == "run_undone"]
    finally:
        store.close()
    assert started["uid"] == pwd.getpwnam(name).pw_uid and started["by"] == "root"
    assert {"landlock-fs", "seccomp-net", "uid"} <= set(started["applied"])
    assert undone["restored"] == ["a.txt"] and undone["removed"] == ["go", "started"]


DOOR_UNDO = """
import json, sys
from pathlib import Path
from sentinel.errors import SentinelError
from sentinel.client.system import SystemEngine
try:
    print(json.dumps({"ok": SystemEngine(Path(sys.argv[1])).undo(sys.argv[2])}))
except SentinelError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
"""


def test_only_an_operator_or_the_runs_own_door_user_may_undo(system, make_agent, supervisor, scripted_server,
                                                             sentinel_cmd):
    """An operator's run of agent A: A's own user (at the agent door) and another agent's user may not undo it,
    nor may a user outside the operator group on the operator socket; the workspace stays as the run left it."""
    other = make_agent()
    name, ws, run_id = _agent_run(make_agent, supervisor, scripted_server, sentinel_cmd, {"a.txt": "a\n"},
                                  [_call("read_file", path="a.txt"), _call("bash", command="echo changed > a.txt"),
                                   "Changed a.txt."], "Change a.txt.")
    for user in (name, other):
        proc = as_user(user, sys.executable, "-c", DOOR_UNDO, str(_door(system)), run_id)
        assert json.loads(proc.stdout)["error"] == "NotFound", proc.stdout + proc.stderr
        refused = as_user(user, sys.executable, "-m", "sentinel", "undo", run_id,
                          env={"SENTINEL_SOCKET": str(system.socket)})
        assert refused.returncode != 0 and "permission denied" in refused.stderr + refused.stdout
    assert (ws / "a.txt").read_text() == "changed\n"
    sentinel_cmd("undo", run_id, check=0)
    assert (ws / "a.txt").read_text() == "a\n"


def test_a_chats_undo_goes_through_the_supervisor_for_the_operator_and_at_the_agent_door(
        system, make_agent, supervisor, scripted_server, tmp_path):
    """`/undo` in a system-mode chat: the operator's (operator socket) and the agent's own user's (agent door, its
    own session) both put the turn's change back, as the agent's user."""
    name = make_agent()
    ws = _workspace(name)
    stamp = _call("bash", command="date > when.txt")
    server = scripted_server([stamp, "Wrote when.txt.", stamp, "Wrote it again."])
    agent_config(name, server, BASH_AUTO)
    supervisor([server.port])
    env = {**os.environ, **system.env, "SENTINEL_HOME": str(tmp_path / "operator")}
    chat = subprocess.run([PY, "-m", "sentinel", "chat", "--agent", name], input="Put the date in when.txt\n/undo\n",
                          capture_output=True, text=True, env=env, timeout=90)
    assert chat.returncode == 0, chat.stderr
    assert "removed when.txt" in chat.stdout + chat.stderr and not (ws / "when.txt").exists()

    door = as_user(name, PY, "-m", "sentinel", "chat", input="Put the date in when.txt\n/undo\n",
                   env={"SENTINEL_AGENT_SOCKET": str(_door(system))})
    assert door.returncode == 0 and "Traceback" not in door.stderr, door.stderr
    assert "removed when.txt" in door.stdout + door.stderr and not (ws / "when.txt").exists()


def test_an_undo_that_hangs_on_what_the_agent_planted_is_stopped_and_the_run_is_not_busy_for_good(
        system, make_agent, supervisor, scripted_server, sentinel_cmd, monkeypatch):
    """A FIFO where the run's journal was makes the restore wait for a writer: the supervisor stops it at its time
    and says so; the run is not left busy, and once the journal is back the undo works."""
    monkeypatch.setenv("SENTINEL_UNDO_TIMEOUT_S", "10")
    name, ws, run_id = _agent_run(make_agent, supervisor, scripted_server, sentinel_cmd, {"a.txt": "a\n"},
                                  [_call("read_file", path="a.txt"), _call("bash", command="echo changed > a.txt"),
                                   "Changed a.txt."], "Change a.txt.")
    journal = Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "runs" / run_id / "journal.jsonl"
    _as_agent(name, "sh", "-c", f"mv '{journal}' '{journal}.kept' && mkfifo '{journal}'")
    stopped = sentinel_cmd("undo", run_id, timeout=120)
    assert stopped.returncode == 1 and "did not finish within 10s and was stopped" in stopped.stderr, stopped.stderr
    assert (ws / "a.txt").read_text() == "changed\n"
    _as_agent(name, "sh", "-c", f"rm '{journal}' && mv '{journal}.kept' '{journal}'")
    assert sentinel_cmd("undo", run_id, check=0).stdout == "restored a.txt\n"
