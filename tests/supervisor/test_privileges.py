"""Attacks on the privilege properties of system mode: what the worker holds, who may reach the supervisor,
and whether the agent can approve its own request by any route."""

from __future__ import annotations

import json
import os
import pwd
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from sx_helpers import agent_config, as_user, scripted_bash

pytestmark = pytest.mark.root

STATUS_FIELDS = "^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):"


def _paused(make_agent, sentinel_cmd, supervisor, scripted_server, command: str):
    name = make_agent()
    server = scripted_server(scripted_bash(command))
    agent_config(name, server)
    supervisor([server.port])
    out = json.loads(sentinel_cmd("run", "write notes.txt", "--agent", name, "--json", check=3).stdout)
    return name, pwd.getpwnam(name), out


def _py(user: str, code: str, env: dict | None = None):
    return as_user(user, sys.executable, "-c", code, env=env)


def test_the_worker_holds_only_the_agents_uid_and_nothing_else(make_agent, sentinel_cmd, supervisor, scripted_server):
    command = (f"grep -E '{STATUS_FIELDS}' /proc/$PPID/status; tr '\\0' ' ' < /proc/$PPID/cmdline; echo; "
               "touch /tmp/sx-landlock-probe-$$ 2>/dev/null && echo wrote-tmp || echo tmp-refused")
    name, pw, out = _paused(make_agent, sentinel_cmd, supervisor, scripted_server, command)
    sentinel_cmd("approve", out["id"], check=0)
    shown = json.loads(sentinel_cmd("show", out["id"], "--json", check=0).stdout)
    result = [m["content"] for m in shown["messages"] if m["role"] == "tool"][-1]
    fields = dict(line.split(":", 1) for line in result.splitlines() if ":" in line and line.split(":")[0].isalpha())
    fields = {k: v.split() for k, v in fields.items()}
    assert "-m sentinel.worker " + out["id"] in result  # $PPID is the worker itself
    assert fields["Uid"] == [str(pw.pw_uid)] * 4 and fields["Gid"] == [str(pw.pw_gid)] * 4
    assert fields["Groups"] == []
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert fields[cap] == ["0000000000000000"], cap
    assert fields["NoNewPrivs"] == ["1"] and fields["Seccomp"] == ["2"]
    assert "tmp-refused" in result  # Landlock: /tmp is writable for the user, not for the worker


def test_the_agent_cannot_reach_the_socket_or_the_database(system, make_agent, sentinel_cmd, supervisor,
                                                           scripted_server):
    name, pw, out = _paused(make_agent, sentinel_cmd, supervisor, scripted_server, "echo hi > hi.txt")
    db = system.state / "sentinel.db"
    assert stat.S_IMODE(os.stat(system.state).st_mode) == 0o700 and stat.S_IMODE(os.stat(db).st_mode) == 0o600
    sock = os.stat(system.socket)
    assert stat.S_IMODE(sock.st_mode) == 0o660 and sock.st_uid == 0
    probe = _py(name, "import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
                      f"try:\n s.connect({str(system.socket)!r}); print('connected')\n"
                      "except PermissionError: print('refused')")
    assert probe.stdout.strip() == "refused"
    for path in (db, Path(f"{db}-wal")):
        reader = _py(name, f"open({str(path)!r}, 'rb').read(1)")
        assert "PermissionError" in reader.stderr
    writer = _py(name, f"import sqlite3; sqlite3.connect({str(db)!r}).execute(\"UPDATE approvals SET status='approved'\")")
    assert writer.returncode != 0
    assert json.loads(sentinel_cmd("approvals", "--json").stdout)[0]["id"] == out["approval_id"]


def test_peercred_refuses_non_operators_even_through_an_open_socket(system, make_agent, sentinel_cmd, supervisor,
                                                                   scripted_server):
    import subprocess

    name, pw, out = _paused(make_agent, sentinel_cmd, supervisor, scripted_server, "echo hi > hi.txt")
    os.chmod(system.socket, 0o666)  # take the file mode out of the way: SO_PEERCRED must still refuse
    human, operator = f"sxh{os.getpid()}", f"sxo{os.getpid()}"
    system.users += [human, operator]
    for user in (human, operator):
        subprocess.run(["useradd", "--no-create-home", user], check=True)
    subprocess.run(["usermod", "-aG", system.group, operator], check=True)
    ask = ("import json,sys\nfrom sentinel.client.system import SystemEngine\nfrom pathlib import Path\n"
           f"e=SystemEngine(Path({str(system.socket)!r}))\n"
           "try:\n print(json.dumps(e.call(sys.argv[1], ident=sys.argv[2]) if sys.argv[1]=='approve' else e.call(sys.argv[1])))\n"
           "except Exception as x: print(type(x).__name__, x)")
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for user in (name, human):
        for op in ("approve", "pending", "status", "trust_list", "trust_revoke", "fire_watcher", "web_token",
                   "audit_quarantined"):
            got = as_user(user, sys.executable, "-c", ask, op, out["approval_id"], env=env).stdout
            assert got.startswith("Denied permission denied"), (user, op, got)
    listed = as_user(operator, sys.executable, "-c", ask, "pending", "-", env=env).stdout
    assert json.loads(listed)[0]["id"] == out["approval_id"]
    assert [a["id"] for a in json.loads(sentinel_cmd("approvals", "--json").stdout)] == [out["approval_id"]]


def test_the_agents_own_cli_approves_nothing(system, make_agent, sentinel_cmd, supervisor, scripted_server):
    name, pw, out = _paused(make_agent, sentinel_cmd, supervisor, scripted_server, "echo ran > ran.txt")
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for extra in ({}, {"SENTINEL_SOCKET": str(system.socket)}, {"SENTINEL_MODE": "system",
                                                               "SENTINEL_SOCKET": str(system.socket)}):
        proc = as_user(name, sys.executable, "-m", "sentinel", "approve", out["approval_id"], env={**env, **extra})
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert [a["id"] for a in json.loads(sentinel_cmd("approvals", "--json").stdout)] == [out["approval_id"]]
    assert not (Path(pw.pw_dir) / ".sentinel" / "workspace" / "ran.txt").exists()


def test_a_journal_the_agent_rewrote_does_not_change_what_runs(make_agent, sentinel_cmd, supervisor,
                                                                scripted_server):
    name, pw, out = _paused(make_agent, sentinel_cmd, supervisor, scripted_server, "echo ran > ran.txt")
    run_dir = Path(pw.pw_dir) / ".sentinel" / "runs" / out["id"]
    for file in ("journal.jsonl", "snapshot.json"):
        tamper = as_user(name, "sed", "-i", "s/echo ran > ran.txt/echo evil > evil.txt/g", str(run_dir / file))
        assert tamper.returncode == 0, tamper.stderr
    sentinel_cmd("approve", out["approval_id"], check=0)
    ws = Path(pw.pw_dir) / ".sentinel" / "workspace"
    assert not (ws / "evil.txt").exists()  # the edited call never runs...
    assert (ws / "ran.txt").read_text() == "ran\n"  # ...what runs is the call as decided and approved
    shown = json.loads(sentinel_cmd("show", out["id"], "--json").stdout)
    assert [d["arguments"] for d in shown["decisions"] if d["tool"] == "bash"] == [{"command": "echo ran > ran.txt"}]


def test_concurrent_approvers_resolve_once_and_the_call_runs_once(system, make_agent, sentinel_cmd, supervisor,
                                                                  scripted_server):
    from sentinel.client.system import SystemEngine

    name, pw, out = _paused(make_agent, sentinel_cmd, supervisor, scripted_server, "echo ran >> counter.txt")
    engine = SystemEngine(system.socket)
    results: list[str] = []

    def approve() -> None:
        try:
            engine.call("approve", ident=out["approval_id"])
            results.append("ok")
        except Exception as exc:  # noqa: BLE001
            results.append(str(exc))

    threads = [threading.Thread(target=approve) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("ok") == 1 and all("not pending" in r for r in results if r != "ok"), results
    _wait_status(sentinel_cmd, out["id"], "done")
    assert (Path(pw.pw_dir) / ".sentinel" / "workspace" / "counter.txt").read_text() == "ran\n"


def test_the_cli_streams_events_and_logs_follow_replays_them(system, make_agent, supervisor, scripted_server,
                                                             sentinel_cmd):
    from sentinel.client.system import SystemEngine

    name = make_agent()
    server = scripted_server(scripted_bash("echo hi > hi.txt"))
    agent_config(name, server)
    supervisor([server.port])
    seen: list = []
    outcome = SystemEngine(system.socket).start("stream it", agent=name, on_event=seen.append)
    assert outcome.status == "waiting_approval"
    kinds = [e.type for e in seen]
    assert kinds[0] == "run_started" and "model_call_started" in kinds and "model_call_ended" in kinds
    assert "tool_call_begin" in kinds and kinds[-1] == "paused" and {e.run_id for e in seen} == {outcome.id}
    logged = sentinel_cmd("logs", outcome.id, "--json", check=0).stdout.splitlines()
    assert [json.loads(line)["type"] for line in logged] == [e.type for e in seen if e.durable]


def test_deny_resumes_with_the_denial_and_cancel_ends_a_run(make_agent, sentinel_cmd, supervisor, scripted_server):
    name, pw, out = _paused(make_agent, sentinel_cmd, supervisor, scripted_server, "echo ran > ran.txt")
    done = json.loads(sentinel_cmd("deny", out["id"], "--reason", "not today", "--json", check=0).stdout)
    assert done["status"] == "done"
    shown = json.loads(sentinel_cmd("show", out["id"], "--json").stdout)
    assert [m["content"] for m in shown["messages"] if m["role"] == "tool"][-1] == "Denied by the operator: not today"
    assert not (Path(pw.pw_dir) / ".sentinel" / "workspace" / "ran.txt").exists()
    bad = sentinel_cmd("cancel", out["id"])
    assert bad.returncode == 2 and "already done" in bad.stderr


def _wait_status(sentinel_cmd, run_id: str, status: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = json.loads(sentinel_cmd("show", run_id, "--json").stdout)
        if row["status"] == status:
            return row
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} is {row['status']}, not {status}")

