"""System mode: the supervisor issues console sign-in tokens to operators only (SO_PEERCRED), and a console an
operator started decides through the supervisor's store, exactly as the CLI does."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from sx_helpers import agent_config, as_user, scripted_bash

pytestmark = pytest.mark.root

REPO = str(Path(__file__).resolve().parents[2])


def _paused(make_agent, sentinel_cmd, supervisor, scripted_server):
    name = make_agent()
    server = scripted_server(scripted_bash("echo ran >> ran.txt"))
    agent_config(name, server)
    supervisor([server.port])
    return name, json.loads(sentinel_cmd("run", "write notes.txt", "--agent", name, "--json", check=3).stdout)


def _audit(system, kind: str) -> list[dict]:
    with sqlite3.connect(system.state / "sentinel.db") as db:
        rows = db.execute("SELECT record FROM audit WHERE kind=?", (kind,)).fetchall()
    return [json.loads(r[0]) for r in rows]


def test_an_agents_uid_can_never_obtain_a_console_token(system, make_agent, sentinel_cmd, supervisor,
                                                        scripted_server):
    name, out = _paused(make_agent, sentinel_cmd, supervisor, scripted_server)
    os.chmod(system.socket, 0o666)  # take the socket's file mode out of the way: SO_PEERCRED must still refuse
    ask = ("from pathlib import Path\nfrom sentinel.client.system import SystemEngine\n"
           f"try:\n print(SystemEngine(Path({str(system.socket)!r})).web_token())\n"
           "except Exception as x: print(type(x).__name__, x)")
    got = as_user(name, sys.executable, "-c", ask, env={"PYTHONPATH": REPO}).stdout
    assert got.startswith("Denied permission denied") and "token" not in got
    web = as_user(name, sys.executable, "-m", "sentinel", "web", "--port", "0",
                  env={"PYTHONPATH": REPO, "SENTINEL_SOCKET": str(system.socket)})
    assert web.returncode == 2 and "permission denied" in web.stderr and "Traceback" not in web.stderr
    assert "http://" not in web.stdout
    refused = [r for r in _audit(system, "operator_refused") if r["op"] == "web_token"]
    assert len(refused) == 2 and {r["user"] for r in refused} == {name}
    assert _audit(system, "web_token_issued") == []


def test_an_operators_console_approves_through_the_supervisor(system, make_agent, sentinel_cmd, supervisor,
                                                              scripted_server, web_process):
    name, out = _paused(make_agent, sentinel_cmd, supervisor, scripted_server)
    web = web_process(env=system.env)
    issued = _audit(system, "web_token_issued")
    assert [(r["by"], r["uid"]) for r in issued] == [("root", 0)]
    assert issued[0]["token_sha256"] not in web.url  # the audit log never holds the token
    session = web.console.signed_in()
    inbox = session.get("/", headers={"accept": "text/html"}).text
    assert "system mode" in inbox and "echo ran &gt;&gt; ran.txt" in inbox and out["approval_id"] in inbox
    digest = re.search(r'data-digest="([0-9a-f]{64})"', inbox).group(1)
    assert session.decide(out["approval_id"], digest="f" * 64).status_code == 409
    answer = session.decide(out["approval_id"], digest=digest)
    assert answer.status_code == 200, answer.text
    deadline = time.monotonic() + 30
    while (shown := json.loads(sentinel_cmd("show", out["id"], "--json").stdout))["status"] != "done":
        assert time.monotonic() < deadline, shown["status"]
        time.sleep(0.2)
    assert shown["decisions"][-1]["approval"]["by"] == "root"
    workspace = Path(f"~{name}").expanduser() / ".sentinel" / "workspace"
    assert (workspace / "ran.txt").read_text() == "ran\n"


def test_a_person_taken_out_of_the_operator_group_is_signed_out_of_every_console(system, supervisor):
    """A console session is asked about at every use: once its person is no longer an operator it ends (with
    their unused sign-in tokens), in every console, and it does not come back when they rejoin."""
    import subprocess

    from sentinel.client.system import SystemEngine

    supervisor()
    person = f"sxop{os.urandom(3).hex()}"
    subprocess.run(["useradd", "--no-create-home", "-G", system.group, person], check=True)
    system.users.append(person)
    ask = ("import json\nfrom pathlib import Path\nfrom sentinel.client.system import SystemEngine\n"
           f"e = SystemEngine(Path({str(system.socket)!r}))\n"
           "print(json.dumps([e.web_token()['token'], e.web_token()['token']]))")
    tokens = json.loads(as_user(person, sys.executable, "-c", ask, env={"PYTHONPATH": REPO}).stdout)
    root = SystemEngine(system.socket)
    session = root.web_sign_in(tokens[0], 3600)
    assert session["operator"] == person
    assert root.web_session(session["secret"])["operator"] == person  # any console of the store: still works

    subprocess.run(["gpasswd", "-d", person, system.group], check=True, capture_output=True)
    assert root.web_session(session["secret"]) is None
    assert root.web_sign_in(tokens[1], 3600) is None  # the unused token ended with the session
    assert _audit(system, "web_sessions_ended") == [{"operator": person, "ended": 2, "why": "no longer an operator"}]
    subprocess.run(["gpasswd", "-a", person, system.group], check=True, capture_output=True)
    assert root.web_session(session["secret"]) is None  # rejoining needs a new sign-in
