"""The agent door: an agent's own user chats with its agent through the supervisor (its turns are supervised
runs, its bash call asked y/N where it chats), and gets nothing else: not an operator's runs or their
approvals, not another agent, not a task run; and nothing that runs inside a sandbox gets in at all."""

from __future__ import annotations

import json
import pwd
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from sx_helpers import as_user, operator_config, scripted_bash

pytestmark = pytest.mark.root

CLIENT = """
import json, sys
from pathlib import Path
from sentinel.errors import SentinelError
from sentinel.client.system import SystemEngine
door, op, arg = Path(sys.argv[1]), sys.argv[2], (sys.argv[3:] or [None])[0]
engine = SystemEngine(door)
try:
    if op == "approve":
        result = engine.approve(arg).to_dict()
    elif op == "approvals":
        result = [a.to_dict() for a in engine.pending()]
    elif op == "show":
        result = engine.show(arg).to_dict()
    elif op == "task":
        result = engine.start("not a chat").to_dict()
    elif op == "other":
        result = engine.start("hi", agent=arg, chat=True).to_dict()
    elif op.startswith("call:"):
        result = engine.call(op[5:])
    else:
        result = engine.status()
    print(json.dumps({"ok": result}))
except SentinelError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
"""


def door_call(user: str, door: Path, *args: str, sandboxed: bool = False) -> dict:
    argv = [sys.executable, "-c", CLIENT, str(door), *args]
    if sandboxed:  # what every tool and worker runs under: no_new_privs, which nothing can clear
        argv = ["setpriv", "--no-new-privs", *argv]
    proc = as_user(user, *argv)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def _door(system) -> Path:
    return system.socket.parent.with_name(system.socket.parent.name + "-agent") / "agent.sock"


def test_the_agents_own_user_chats_through_the_supervisor_and_approves_inline(system, make_agent, supervisor,
                                                                              scripted_server, sentinel_cmd):
    name = make_agent()
    pw = pwd.getpwnam(name)
    server = scripted_server(scripted_bash("echo ran >> counter.txt; id -u"))
    operator_config(system.etc, {"providers": {"fake": {"base_url": server.base_url}}, "default_model": "fake/m"})
    supervisor()
    # the agent's own config names no model: a local-mode chat could not answer; the supervised one does
    out = as_user(name, sys.executable, "-m", "sentinel", "chat", input="take notes\ny\n",
                  env={"SENTINEL_AGENT_SOCKET": str(_door(system))})
    assert out.returncode == 0 and out.stdout == "All done.\n", out.stderr
    assert "system mode: the supervisor runs this chat as agent" in out.stderr
    ws = Path(pw.pw_dir) / ".sentinel" / "workspace"
    assert (ws / "counter.txt").read_text() == "ran\n" and (ws / "counter.txt").stat().st_uid == pw.pw_uid
    [session] = json.loads(sentinel_cmd("chats", "--json", check=0).stdout)
    shown = json.loads(sentinel_cmd("show", session["id"], "--json", check=0).stdout)
    assert [d["approval"]["by"] for d in shown["decisions"] if d.get("approval")] == [name]
    door = [r for r in _audit(system) if r["kind"] == "approval_resolved"]
    assert [(r["by"], r["uid"], r["door"]) for r in door] == [(name, pw.pw_uid, "agent")]


def test_a_sandboxed_process_of_the_agent_gets_nothing_from_the_door(system, make_agent, supervisor):
    name = make_agent()
    supervisor()
    assert door_call(name, _door(system), "status")["ok"]["agent"] == name
    refused = door_call(name, _door(system), "status", sandboxed=True)
    assert refused["error"] == "Denied" and "sandbox" in refused["message"]


def test_the_operators_own_operations_are_refused_at_the_door(system, make_agent, supervisor):
    """What the engine protocol gives operators (trust, firing a watcher, console sign-in, the quarantine audit)
    is refused to an agent's own user at its door, and audited."""
    name = make_agent()
    supervisor()
    ops = ("trust_list", "trust_revoke", "fire_watcher", "web_token", "audit_quarantined")
    for op in ops:
        refused = door_call(name, _door(system), f"call:{op}")
        assert refused["error"] == "Denied" and "is for operators" in refused["message"], (op, refused)
    assert {r["op"] for r in _audit(system) if r["kind"] == "agent_door_refused"} >= set(ops)


def test_an_operators_run_stays_the_operators(system, make_agent, supervisor, scripted_server, sentinel_cmd):
    name, other = make_agent(), make_agent()
    server = scripted_server(scripted_bash("echo ran >> counter.txt"))
    operator_config(system.etc, {"providers": {"fake": {"base_url": server.base_url}}, "default_model": "fake/m"})
    supervisor()
    paused = json.loads(sentinel_cmd("run", "write notes.txt", "--agent", name, "--json", check=3).stdout)
    door = _door(system)
    assert door_call(name, door, "approvals")["ok"] == []
    refused = door_call(name, door, "approve", paused["approval_id"])
    assert refused["error"] == "NotFound" and "sudo sentinel approve" in refused["message"]
    assert door_call(name, door, "show", paused["id"])["error"] == "NotFound"
    assert len(json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)) == 1  # still pending
    assert door_call(name, door, "task")["error"] == "UsageError"  # only chat sessions start here
    assert "you chat as" in door_call(name, door, "other", other)["message"]
    stranger = f"sxs{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--no-create-home", stranger], check=True)
    system.users.append(stranger)
    assert "no registered agent" in door_call(stranger, door, "status")["message"]


def _audit(system) -> list[dict]:
    from sentinel.engine.store import Store
    from sentinel.supervisor import layout

    with Store.open(layout.db_path(system.state)) as store:
        return store.audit_records()
