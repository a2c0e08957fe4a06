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
