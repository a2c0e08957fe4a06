"""Hostile input never stops the root supervisor: each request or run that used to end the process gets one
error reply (or a streamed answer), and the supervisor answers the next request."""

from __future__ import annotations

import json
import pwd
import socket
import struct
import time
from dataclasses import fields
from pathlib import Path

import pytest

from sentinel import frames
from sentinel.engine.api import RunDetail
from sentinel.client.system import SystemEngine
from sx_helpers import write_as

pytestmark = pytest.mark.root


def _raw(path: Path, payload: bytes, header: bytes | None = None) -> list[dict]:
    """Send one raw frame; every frame the supervisor sends back before it closes."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(str(path))
    try:
        sock.sendall((header if header is not None else struct.pack("!I", len(payload))) + payload)
        out = []
        while True:
            try:
                message = frames.recv(sock)
            except (ConnectionError, OSError):
                return out
            if message is None:
                return out
            out.append(message)
    finally:
        sock.close()


def _alive(system) -> None:
    assert SystemEngine(system.socket).status()["mode"] == "system"


@pytest.fixture
def sup(system, supervisor):
    proc = supervisor([])
    yield proc
    assert proc.proc.poll() is None, "the supervisor died"


@pytest.mark.parametrize("payload", [
    b"[" * 100_000 + b"]" * 100_000,                                   # nested far past any recursion limit
    b'{"op": "runs", "x": ' + b"[" * 70 + b"]" * 70 + b"}",            # just past the nesting bound
    b'{"op": "runs", "x": ' + b"[" * 5000 + b"}",                      # unbalanced
    b"[1, 2]", b"nope", b"\xff\xfe", b"",                              # not an object, not JSON
], ids=["deep", "past-bound", "unbalanced", "list", "text", "binary", "empty"])
def test_a_bad_frame_gets_one_error_and_the_next_request_an_answer(system, sup, payload):
    [answer] = _raw(system.socket, payload)
    assert answer["ok"] is False and answer["kind"] == "usage"
    _alive(system)


@pytest.mark.parametrize("request_,field", [
    ({"op": "runs", "limit": "x"}, "limit"), ({"op": "runs", "limit": -1}, "limit"), ({"op": "runs", "limit": [1]}, "limit"),
    ({"op": "runs", "limit": True}, "limit"), ({"op": "show", "run_id": ["r-1"]}, "run_id"), ({"op": "show"}, "run_id"),
    ({"op": "events", "run_id": {"a": 1}}, "run_id"), ({"op": "events", "after": "1"}, "after"),
    ({"op": "pending", "all_hosts": 7}, "all_hosts"), ({"op": "approve", "ident": {"$": 1}}, "ident"),
    ({"op": "deny", "ident": "a-x", "reason": ["r"]}, "reason"), ({"op": "approve", "ident": "a-x", "digest": 5}, "digest"),
    ({"op": "start", "task": 42}, "task"), ({"op": "start", "task": "t", "agent": []}, "agent"),
    ({"op": "start", "task": "t", "workspace": {"p": "/"}}, "workspace"), ({"op": "resume", "run_id": None}, "run_id"),
    ({"op": "cancel"}, "run_id"), ({"op": "start", "task": "t", "skills": "s"}, "skills"),
    ({"op": "decide_link", "secret": "x", "approved": "yes"}, "approved"),
    ({"op": "web_sign_in", "token": "t", "session_ttl_s": "1"}, "session_ttl_s"),
    ({"op": "audit_quarantined", "scope": "s", "findings": [1]}, "findings"),
])
def test_a_wrong_field_type_is_a_usage_error_naming_it(system, sup, request_, field):
    [answer] = _raw(system.socket, json.dumps(request_).encode())
    assert answer["ok"] is False and answer["kind"] == "usage", answer
    assert answer["error"].startswith(f"{field}: "), answer  # one line naming the field, before anything ran
    assert "Traceback" not in answer["error"] and "\n" not in answer["error"]
    _alive(system)


@pytest.mark.parametrize("request_", [{"op": ["status"]}, {"op": None}, {},
                                      # the names before each wire name became its engine method's
                                      {"op": "logs"}, {"op": "approvals"}, {"op": "workflow_start", "name": "w"},
                                      {"op": "watch_fire", "id": "w"}, {"op": "mcp_trust_get", "server": "s"},
                                      {"op": "link_decide", "secret": "s", "approved": True}])
def test_an_unknown_operation_is_one_usage_error(system, sup, request_):
    [answer] = _raw(system.socket, json.dumps(request_).encode())
    assert answer == {"ok": False, "kind": "usage", "error": f"unknown operation {request_.get('op')!r}"}
    _alive(system)


def test_a_frame_larger_than_the_limit_closes_only_that_connection(system, sup):
    assert _raw(system.socket, b"{}", header=struct.pack("!I", 0xFFFFFFF0)) == []
    _alive(system)


def test_a_stranger_cannot_make_the_supervisor_read_much(system, sup, make_agent):
    """A peer that is no operator is refused after at most a small frame, whatever it declares."""
    import subprocess
    import sys

    name = make_agent()
    code = ("import socket,struct,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
            "s.sendall(struct.pack('!I', 8 << 20) + b'x' * 65536)\ntry:\n print(s.recv(4096)[:200])\n"
            "except OSError as e:\n print('closed', e)")
    import os
    os.chmod(system.socket, 0o666)  # past the file mode: the supervisor itself must refuse
    out = subprocess.run(["runuser", "-u", name, "--", sys.executable, "-c", code, str(system.socket)],
                         capture_output=True, text=True, timeout=30)
    assert "Traceback" not in out.stderr
    _alive(system)


def _planted_run(system, name: str, lines: list[bytes]) -> str:
    """A run row of agent `name` (inserted as the supervisor would) whose journal the agent wrote."""
    from sentinel.engine.store import Store

    pw = pwd.getpwnam(name)
    run_id = f"r-hostile{int(time.time() * 1000) % 100000:05d}"
    run_dir = Path(pw.pw_dir) / ".sentinel" / "runs" / run_id
    store = Store.open(system.state / "sentinel.db")
    try:
        store.create_run(run_id, agent=name, task="t", model="fake/m", workspace=Path(pw.pw_dir), run_dir=run_dir)
        store.conn.execute("UPDATE runs SET user=?, status='failed' WHERE id=?", (name, run_id))
    finally:
        store.close()
    import subprocess

    subprocess.run(["runuser", "-u", name, "--", "mkdir", "-p", str(run_dir)], check=True)
    write_as(name, run_dir / "journal.jsonl", b"\n".join(lines).decode() + "\n")
    return run_id


def _record(seq: int, **fields) -> bytes:
    return json.dumps({"seq": seq, "t": time.time(), **fields}).encode()


def test_a_deeply_nested_journal_line_is_skipped_by_show_and_logs(system, sup, make_agent):
    name = make_agent()
    deep = b'{"seq": 2, "type": "message", "message": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    run_id = _planted_run(system, name, [
        _record(1, type="created", id="x", task="t", agent=name, model="fake/m"),
        deep,
        _record(3, type="message", message={"role": "user", "content": "still here"}),
    ])
    engine = SystemEngine(system.socket)
    shown = engine.show(run_id)
    assert [m["content"] for m in shown.messages] == ["still here"]
    # the supervisor answers `show` in exactly the shape local mode does: nothing dropped, nothing missing
    assert set(frames.result_object(engine.call("show", run_id=run_id))) == {f.name for f in fields(RunDetail)}
    assert [e.type for e in engine.events(run_id)] == ["run_started", "message"]
    _alive(system)


def test_a_run_larger_than_a_frame_is_shown_in_parts(system, sup, make_agent):
    name = make_agent()
    big = "y" * (900 * 1024)
    lines = [_record(1, type="created", id="x", task="t", agent=name, model="fake/m")]
    lines += [_record(i + 2, type="message", message={"role": "user", "content": f"{i}:{big}"}) for i in range(20)]
    lines.append(_record(30, type="message", message={"role": "user", "content": "z" * (3 << 20)}))
    run_id = _planted_run(system, name, lines)
    shown = SystemEngine(system.socket).show(run_id)
    assert len(shown.messages) == 21
    assert [m["content"] for m in shown.messages[:20]] == [f"{i}:{big}" for i in range(20)]
    assert "cut by the supervisor" in shown.messages[20]["content"]
    assert len(json.dumps(shown.to_dict())) > frames.MAX_FRAME
    _alive(system)


@pytest.mark.parametrize("worker", [False, True], ids=["operator", "worker-channel"])
def test_a_handler_that_raises_is_one_error_reply_and_an_audit_record(system, tmp_path, monkeypatch, worker):
    """Any bug a request reaches fails that request alone (here: a handler raising what nothing expects)."""
    from sentinel.engine.store import Store
    from sentinel.supervisor import auth, ops, workers
    from sentinel.supervisor.server import Settings, Supervisor

    def boom(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setitem(ops.OPS, "status", boom)
    monkeypatch.setitem(workers.CHANNEL_OPS, "hello", boom)
    sup = Supervisor(Settings(state_dir=tmp_path))
    sup._db = Store.open(tmp_path / "db")

    class Conn:
        peer = auth.Peer(1, 0, 0, "root", True)
        closed = False
        sent: list = []

        def send(self, message):
            self.sent.append(message)

        finish = send

    conn = Conn()
    conn.worker = workers.Worker("r-1", None, 1, "/", None) if worker else None  # type: ignore[arg-type]
    sup.dispatch(conn, {"op": "hello" if worker else "status"})
    [answer] = conn.sent
    assert answer["ok"] is False and answer["kind"] == "error" and "RecursionError" in answer["error"]
    assert [r["kind"] for r in sup.store.audit_records()] == ["request_failed"]
