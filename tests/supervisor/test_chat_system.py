"""Chat sessions in system mode: the operator chats with an agent that runs as its own user under the
supervisor and answers approvals inline; an agent's own user chats in its own home; a stopped turn's
dying worker changes nothing; the catalog never follows the agent's links."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from sentinel.engine.store import Store
from sentinel.supervisor import registry
from sentinel.supervisor.workers import Worker, handle
from sx_helpers import agent_config, as_user, scripted_bash

REPO = str(Path(__file__).resolve().parents[2])


def _chat(system, home: Path, text: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **system.env, "SENTINEL_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "sentinel", "chat", *args], input=text, capture_output=True,
                          text=True, env=env, timeout=90)


@pytest.mark.root
def test_operator_chat_runs_as_the_agent_and_approves_inline(system, make_agent, sentinel_cmd, supervisor,
                                                             scripted_server, tmp_path):
    name = make_agent()
    pw = pwd.getpwnam(name)
    server = scripted_server(scripted_bash("echo ran >> counter.txt; id -u") + ["Still here."])
    agent_config(name, server)
    supervisor([server.port])
    operator_home = tmp_path / "operator"

    first = _chat(system, operator_home, "take notes\ny\n", "--agent", name)
    assert first.returncode == 0 and first.stdout == "All done.\n", first.stderr
    ws = Path(pw.pw_dir) / ".sentinel" / "workspace"
    assert (ws / "notes.txt").stat().st_uid == pw.pw_uid and (ws / "counter.txt").read_text() == "ran\n"
    (session,) = json.loads(sentinel_cmd("chats", "--json", check=0).stdout)
    assert (session["title"], session["status"], session["user"]) == ("take notes", "idle", name)
    assert json.loads(sentinel_cmd("approvals", "--json", check=0).stdout) == []

    again = _chat(system, operator_home, "anything else?\n")
    assert again.stdout == "Still here.\n" and f"↻ session {session['id']}" in again.stderr
    shown = json.loads(sentinel_cmd("show", session["id"], "--json", check=0).stdout)
    assert shown["decisions"][1]["approval"]["by"] == "root"
    assert f"{pw.pw_uid}\n" in [m["content"] for m in shown["messages"] if m["role"] == "tool"][1]


@pytest.mark.root
def test_a_stopped_turn_cancels_its_supervised_approval(system, make_agent, supervisor, scripted_server):
    from sentinel.client.system import connect
    from sentinel.errors import UsageError

    name = make_agent()
    server = scripted_server([{"tool_calls": [{"name": "bash", "arguments": {"command": "echo x >> stop.txt"}}]},
                              "after the stop"])
    agent_config(name, server)
    supervisor([server.port])
    engine = connect()
    paused = engine.start("count", agent=name, chat=True)
    assert paused.status == "waiting_approval"
    assert engine.interrupt(paused.id).status == "idle"
    with pytest.raises(UsageError, match="not pending"):
        engine.approve(paused.approval_id)
    with pytest.raises(UsageError, match="skills"):
        engine.send(paused.id, "x", skills=["../../etc"])
    done = engine.send(paused.id, "never mind")
    assert (done.status, done.output) == ("idle", "after the stop")
    tool = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tool) == 1 and tool[0]["content"].startswith("Cancelled")
    assert not (Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "workspace" / "stop.txt").exists()


@pytest.mark.root
def test_the_agents_own_user_chats_in_its_own_home_and_workspace(system, make_agent, scripted_server):
    name = make_agent()
    pw = pwd.getpwnam(name)
    server = scripted_server([{"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt",
                                                                                   "content": "mine\n"}}]},
                              "Noted."])
    agent_config(name, server)
    out = as_user(name, sys.executable, "-m", "sentinel", "chat", input="write it down\n",
                  env={"PYTHONPATH": REPO})
    assert out.returncode == 0 and out.stdout == "Noted.\n", out.stderr
    notes = Path(pw.pw_dir) / ".sentinel" / "workspace" / "notes.txt"  # a bare filename, in the user's workspace
    assert notes.read_text() == "mine\n" and notes.stat().st_uid == pw.pw_uid
    listed = as_user(name, sys.executable, "-m", "sentinel", "chats", "--json",
                     env={"PYTHONPATH": REPO})
    assert [s["title"] for s in json.loads(listed.stdout)] == ["write it down"]


@pytest.mark.root
def test_the_catalog_never_follows_the_agents_links(system, make_agent, supervisor, scripted_server, tmp_path):
    from sentinel.client.system import connect

    name = make_agent()
    home = Path(pwd.getpwnam(name).pw_dir) / ".sentinel"
    secret = tmp_path / "secret-skills" / "root-only"
    secret.mkdir(parents=True)
    (secret / "SKILL.md").write_text("---\ndescription: a root secret\n---\nbody\n")
    as_user(name, "rm", "-rf", str(home / "skills"), str(home / "workflows"))
    as_user(name, "ln", "-s", str(secret.parent), str(home / "skills"))
    as_user(name, "ln", "-s", "/etc", str(home / "workflows"))
    server = scripted_server(["hi"])
    supervisor([server.port])
    catalog = connect().catalog(name)
    assert "root-only" not in [s["name"] for s in catalog["skills"]]
    assert "file-discipline" in [s["name"] for s in catalog["skills"]]  # bundled skills still listed
    assert catalog["workflows"] == [] and name in [a["name"] for a in catalog["agents"]]


def test_a_stopped_workers_last_frames_change_nothing(tmp_path):
    store = Store.open(tmp_path / "sup.db")
    store.create_run("r-chat", agent="a", task="t", model="fake/m", workspace=tmp_path, run_dir=tmp_path, kind="chat")
    store.set_status("r-chat", "idle", error="turn stopped by root")
    agent = registry.Agent("a", "A", "a", 1234, "/home/a", "setup", 0.0)
    worker = Worker("r-chat", agent, 1234, "/home/a", spawned=None, stopped=True)  # type: ignore[arg-type]
    frames = [{"op": "submit_approval", "call_id": "c1", "tool": "bash", "arguments": {"command": "x"},
               "reason": "r"}, {"op": "set_status", "status": "waiting_approval"},
              {"op": "set_status", "status": "running"}]
    for frame in frames:
        assert handle(store, worker, frame, lambda run_id, event: None)["kind"] == "denied"
    assert store.pending_approvals("r-chat") == [] and store.get_run("r-chat")["status"] == "idle"
    store.close()


def _pids_of_group(pgid: int) -> list[int]:
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(name))
    return found


def _live(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _gone(pgid: int, others: list[int], within_s: float = 20) -> bool:
    """Wait for the group and the others to die (the supervisor kills the worker; each keeper then kills
    what it runs): true as soon as they are gone."""
    import time

    deadline = time.monotonic() + within_s
    while _pids_of_group(pgid) or any(map(_live, others)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


LONG = ("echo $$ > group.txt; sleep 600 & echo $! > child.txt; setsid sleep 601 & echo $! > escaped.txt; "
        "touch began; wait; echo late > late.txt")


@pytest.mark.root
@pytest.mark.parametrize("how", ["operator-ctrl-c", "agent-user-ctrl-c", "operator-hangup"])
def test_ctrl_c_in_a_supervised_chat_kills_the_agents_command_tree(how, system, make_agent, supervisor,
                                                                   scripted_server, tmp_path):
    """The command runs as the agent's user under Leash in the supervisor's worker: Ctrl-C in the chat (the
    operator's as root, or the agent's own user's through the agent door, as `sudo -u AGENT sentinel chat`
    does) or its terminal closing stops the turn and kills the command's whole tree, and /quit answers."""
    import signal
    import time

    from screen import Screen, Terminals

    name = make_agent()
    pw = pwd.getpwnam(name)
    server = scripted_server([{"tool_calls": [{"name": "bash", "arguments": {"command": LONG}}]}, "after the stop"])
    agent_config(name, server, {"leash": {"tools": "sandboxed"}})
    supervisor([server.port])
    ws = Path(pw.pw_dir) / ".sentinel" / "workspace"
    env = {**os.environ, **system.env, "SENTINEL_HOME": str(tmp_path / "operator"), "PROMPT_TOOLKIT_NO_CPR": "1",
           "TERM": "xterm"}
    args: tuple[str, ...] = ("chat", "--agent", name)
    if how == "agent-user-ctrl-c":  # runuser as the agent, like sudo -u AGENT: through the door
        door = system.socket.parent.with_name(system.socket.parent.name + "-agent") / "agent.sock"
        env = {"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir, "LANG": "C.UTF-8", "TERM": "xterm",
               "PROMPT_TOOLKIT_NO_CPR": "1", "SENTINEL_AGENT_SOCKET": str(door)}
        args = ("chat",)
    terminals = Terminals(env, tmp_path, (50, 160), Screen)
    if how == "agent-user-ctrl-c":
        import pexpect

        import shutil

        child = pexpect.spawn(shutil.which("runuser") or "/usr/sbin/runuser", ["-u", name, "--", sys.executable, "-m", "sentinel", *args], env=env,
                              cwd="/", encoding="utf-8", timeout=30, dimensions=(50, 160))
        terminals.children.append(child)
        chat = Screen(child)
    else:
        chat = terminals(*args)
    try:
        chat.expect("›")
        chat.child.sendline("take your time")
        chat.expect(r"approve\? \[y/N\]")
        chat.send("y\r")
        deadline = time.monotonic() + 60
        while not (ws / "began").exists():
            assert time.monotonic() < deadline and chat.child.isalive(), chat.text[-2000:]
            time.sleep(0.05)
        group = int((ws / "group.txt").read_text())
        others = [int((ws / "child.txt").read_text()), int((ws / "escaped.txt").read_text())]
        assert _pids_of_group(group) and all(map(_live, others))
        if how == "operator-hangup":
            os.kill(chat.child.pid, signal.SIGHUP)
            chat.killed()
        else:
            chat.send("\x03")
            chat.expect("turn stopped")
        assert _gone(group, others), (_pids_of_group(group), [p for p in others if _live(p)])
        if how != "operator-hangup":
            chat.expect("›")
            chat.child.sendline("/quit")
            assert chat.wait(timeout=20) == 0
        assert not (ws / "late.txt").exists()
    finally:
        terminals.close()
