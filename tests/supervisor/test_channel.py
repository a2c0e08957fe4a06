"""The worker channel and the approval queue, without root: a worker may touch only its own run and can
never resolve an approval; approvals keep their invariants (once, exact payload, denied/expired never)."""

from __future__ import annotations

import time

import pytest

from sentinel.engine.store import Store, call_digest
from sentinel import frames as protocol
from sentinel.supervisor.workers import handle

ARGS = {"command": "echo hi"}


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "sup.db")
    for run_id in ("r-mine", "r-other"):
        s.create_run(run_id, agent="a", task="t", model="fake/m", workspace=tmp_path, run_dir=tmp_path / run_id)
    yield s
    s.close()


def ask(store, worker, op, **args):
    return handle(store, worker, {"op": op, **args}, lambda run_id, event: None)


def submit(store, worker, call_id="c1", run_id="r-mine", args=ARGS):
    decision = {"tool": "bash", "arguments": args, "outcome": "needs_approval", "reason": "r", "layers": []}
    ask(store, worker, "record_decision", run_id=run_id, call_id=call_id, decision=decision)
    return ask(store, worker, "submit_approval", run_id=run_id, call_id=call_id, tool="bash", arguments=args,
               reason="needs approval")


@pytest.mark.parametrize("op", ["resolve", "approve", "deny", "start", "cancel", "status", "sql", None])
def test_a_worker_can_never_resolve_or_operate(store, worker, op):
    a = submit(store, worker)["result"]
    answer = ask(store, worker, op, approval_id=a["id"], approved=True, ident=a["id"])
    assert answer["ok"] is False and answer["kind"] == "denied"
    assert store.get_approval(a["id"]).status == "pending"
    assert any(r["kind"] == "worker_refused" for r in store.audit_records("r-mine"))


def test_a_worker_touches_only_its_own_run(store, worker):
    foreign = store.submit_approval("r-other", "c9", "bash", ARGS, "x")
    store.resolve(foreign.id, True, "root")
    assert submit(store, worker, run_id="r-other")["kind"] == "denied"
    assert ask(store, worker, "set_status", run_id="r-other", status="done")["kind"] == "denied"
    assert ask(store, worker, "get_approval", approval_id=foreign.id)["kind"] == "not_found"
    assert ask(store, worker, "consume", approval_id=foreign.id, digest=foreign.digest)["kind"] == "not_found"
    assert store.get_approval(foreign.id).status == "approved"
    assert ask(store, worker, "set_status", status="cancelled")["kind"] == "denied"
    ask(store, worker, "audit", kind="decision", record={"run_id": "r-other", "x": 1})
    assert store.audit_records("r-other") == []


def test_duplicate_submit_makes_no_second_approval(store, worker):
    first, second = submit(store, worker)["result"], submit(store, worker)["result"]
    assert first["id"] == second["id"]
    assert store.conn.execute("SELECT COUNT(*) FROM approvals WHERE run_id='r-mine'").fetchone()[0] == 1


def test_consumed_once_and_only_for_the_approved_payload(store, worker):
    a = submit(store, worker)["result"]
    store.resolve(a["id"], True, "root")
    other = call_digest("bash", {"command": "rm -rf ~"})
    assert ask(store, worker, "consume", approval_id=a["id"], digest=other)["result"] is False
    digest = call_digest("bash", ARGS)
    assert [ask(store, worker, "consume", approval_id=a["id"], digest=digest)["result"] for _ in range(3)] == \
        [True, False, False]


def test_denied_and_expired_are_never_consumed(store, worker):
    denied = submit(store, worker, call_id="c1")["result"]
    store.resolve(denied["id"], False, "root", "no")
    submit(store, worker, call_id="c2")
    store.conn.execute("DELETE FROM approvals WHERE call_id='c2'")
    expiring = handle(store, worker, {"op": "submit_approval", "call_id": "c2", "tool": "bash", "arguments": ARGS,
                                      "reason": "r", "ttl_s": 0.01}, lambda *a: None)["result"]
    time.sleep(0.05)
    digest = call_digest("bash", ARGS)
    for a in (denied, expiring):
        assert ask(store, worker, "consume", approval_id=a["id"], digest=digest)["result"] is False
    with pytest.raises(Exception, match="expired"):
        store.resolve(expiring["id"], True, "root")


def test_an_approval_is_asked_only_for_a_call_decided_so_and_as_decided(store, worker):
    auto = {"tool": "bash", "arguments": ARGS, "outcome": "auto", "reason": "fine", "layers": []}
    ask(store, worker, "record_decision", call_id="c-auto", decision=auto)
    for call_id in ("c-auto", "c-never-decided"):
        answer = ask(store, worker, "submit_approval", call_id=call_id, tool="bash", arguments=ARGS, reason="r")
        assert answer["kind"] == "denied"
    submit(store, worker, call_id="c1")
    other = ask(store, worker, "submit_approval", call_id="c9", tool="bash", arguments={"command": "rm -rf ~"},
                reason="r")
    assert other["kind"] == "denied"
    store.conn.execute("DELETE FROM approvals")
    swapped = ask(store, worker, "submit_approval", call_id="c1", tool="bash", arguments={"command": "rm -rf ~"},
                  reason="r")
    assert swapped["kind"] == "denied" and store.pending_approvals() == []


def test_a_recorded_decision_stands(store, worker):
    first = {"tool": "bash", "arguments": ARGS, "outcome": "needs_approval", "reason": "r", "layers": []}
    assert ask(store, worker, "record_decision", call_id="c1", decision=first)["result"]["outcome"] == "needs_approval"
    again = ask(store, worker, "record_decision", call_id="c1", decision={**first, "outcome": "auto"})
    assert again["result"]["outcome"] == "needs_approval"
    assert ask(store, worker, "decision_for_call", call_id="c1")["result"]["outcome"] == "needs_approval"
    assert ask(store, worker, "decision_for_call", call_id="c1", run_id="r-other")["kind"] == "denied"
    assert ask(store, worker, "record_decision", call_id="c2", decision={"outcome": "yes"})["kind"] == "usage"


def test_frames_round_trip_and_garbage_is_refused():
    decoder = protocol.Decoder()
    data = protocol.encode({"op": "x", "n": 1}) + protocol.encode({"op": "y"})
    assert decoder.feed(data[:5]) == [] and [m["op"] for m in decoder.feed(data[5:])] == ["x", "y"]
    [bad] = protocol.Decoder().feed(b"\x00\x00\x00\x02[]")  # a bad frame, but the stream is still in step
    assert isinstance(bad, protocol.BadFrame)
    with pytest.raises(protocol.ProtocolError):
        protocol.Decoder().feed(b"\xff\xff\xff\xff")


@pytest.mark.parametrize("result", [["not", "an", "object"], "text", 3])
def test_a_reply_of_the_wrong_shape_is_one_clear_error(result):
    """The worker reads a decision, approval or child plan only as the object it must be; anything else (a
    broken or hostile channel) is refused by name, not handed on to fail later as an AttributeError."""
    import socket

    from sentinel.errors import SentinelError
    from sentinel.worker.remote import Channel, RemoteStore

    mine, theirs = socket.socketpair()
    try:
        remote = RemoteStore(Channel(mine), "r-1")
        for ask in (lambda: remote.decision_for_call("r-1", "c1"), lambda: remote.get_approval("a-1"),
                    lambda: remote.pending_approvals()):
            protocol.send(theirs, protocol.reply(result))
            with pytest.raises(SentinelError, match="where an object was due|where a list was due"):
                ask()
            assert protocol.recv(theirs) is not None  # the request went out
    finally:
        mine.close()
        theirs.close()


def test_an_undo_process_may_only_say_what_it_restored_and_a_worker_never_may(store, worker):
    """An undo process's channel (sentinel/supervisor/workers.py `start_undo`) answers hello and undone only; its
    answer is checked field by field and taken once; a run's worker cannot pass an undo's answer off."""
    from dataclasses import replace

    from sentinel.supervisor.workers import Undoing

    undoing = Undoing(client=None, by="root", to=0, deadline=0.0)  # type: ignore[arg-type]
    undo = replace(worker, undo=undoing, greeting={"id": "r-mine", "run_dir": "/x", "workspace": "/w", "to": 0})
    for op, args in (("set_status", {"status": "done"}), ("record_decision", {"call_id": "c1", "decision": {}}),
                     ("audit", {"kind": "decision", "record": {}}), ("child_plan", {})):
        assert ask(store, undo, op, **args)["kind"] == "denied"
    assert store.get_run("r-mine")["status"] != "done"
    assert ask(store, worker, "undone", result={"id": "r-mine"})["kind"] == "denied"
    good = {"id": "r-mine", "to": 0, "restored": ["a.txt"], "removed": [], "missing": [], "incomplete": []}
    for bad in ({**good, "restored": "a.txt"}, {**good, "to": "0"}, {**good, "id": "r-other"},
                {**good, "incomplete": ["1"]}):
        assert ask(store, undo, "undone", result=bad)["kind"] == "usage" and undoing.answer is None
    assert ask(store, undo, "hello")["result"]["workspace"] == "/w"
    assert ask(store, undo, "undone", result={**good, "extra": "dropped"})["ok"]
    # relayed field by field; the reasons a path was not put back are lists too (none here)
    assert undoing.answer == {"ok": True, "result": {**good, "kept": [], "unstored": [], "attributes": [],
                                                "children": [], "elsewhere": []}}
    assert ask(store, undo, "undone", refused="busy", message="x")["kind"] == "denied"  # once
