"""Chat sessions on the engine protocol: a durable run that waits for the next message instead of ending."""

from __future__ import annotations

import os
from dataclasses import fields

import pytest

from sentinel.engine import events as ev
from sentinel.engine.api import RunDetail
from sentinel.errors import UsageError

BASH = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]}


@pytest.fixture
def engine(configure, scripted_server):
    from sentinel.local.engine import LocalEngine

    opened = []

    def make(script, config=None, **server_kw):
        server = scripted_server(script, **server_kw)
        configure(config, server=server)
        eng = LocalEngine()
        opened.append(eng)
        return eng, server

    yield make
    for eng in opened:
        eng.close()


def test_a_session_answers_waits_and_continues_with_the_whole_conversation(engine):
    eng, server = engine(["first answer", "second answer"])
    first = eng.start("hello", chat=True)
    assert (first.status, first.output) == ("idle", "first answer")
    second = eng.send(first.id, "and then?")
    assert (second.status, second.output) == ("idle", "second answer")
    sent = [(m["role"], m["content"]) for m in server.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == [("user", "hello"), ("assistant", "first answer"), ("user", "and then?")]
    assert [s.id for s in eng.sessions()] == [first.id]
    assert eng.sessions()[0].title == "hello"


def test_an_idle_session_is_not_resumed_into_another_model_call(engine):
    eng, server = engine(["answer"])
    session = eng.start("hello", chat=True)
    calls = len(server.requests)
    assert eng.resume(session.id).status == "idle"
    assert len(server.requests) == calls


def test_a_message_cannot_jump_a_pending_approval(engine, sentinel_home):
    eng, _ = engine([BASH, "ran it", "next"])
    paused = eng.start("count", chat=True)
    assert paused.status == "waiting_approval"
    with pytest.raises(UsageError, match="pending approval"):
        eng.send(paused.id, "do something else meanwhile")
    done = eng.approve(paused.approval_id)
    assert (done.status, done.output) == ("idle", "ran it")
    assert (sentinel_home / "workspace" / "counter.txt").read_text() == "ran\n"


def test_interrupt_cancels_the_pending_approval_and_closes_the_call(engine, sentinel_home, scripted_server):
    eng, server = engine([BASH, "after the stop"])
    paused = eng.start("count", chat=True)
    stopped = eng.interrupt(paused.id)
    assert stopped.status == "idle" and "stopped" in stopped.error
    with pytest.raises(UsageError, match="cancelled, not pending"):  # approving it later elsewhere does nothing
        eng.approve(paused.approval_id)
    assert eng.send(paused.id, "never mind").output == "after the stop"
    assert not (sentinel_home / "workspace" / "counter.txt").exists()
    tool = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tool) == 1 and tool[0]["content"].startswith("Cancelled: the operator stopped this turn")


def test_limits_count_per_turn_and_a_failed_turn_leaves_the_session_usable(engine):
    listing = {"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}
    eng, _ = engine([listing, "one", listing, "two", {"repeat": 5, **listing}], {"limits": {"max_steps": 2}})
    session = eng.start("a", chat=True)
    assert eng.send(session.id, "b").output == "two"  # 4 model calls in all, 2 per turn
    failed = eng.send(session.id, "c")
    assert failed.status == "idle" and "step limit" in failed.error
    assert eng.sessions()[0].status == "idle"


def test_skills_join_the_context_once_and_a_bad_name_persists_nothing(engine, sentinel_home):
    eng, server = engine(["ok", "ok again"])
    with pytest.raises(UsageError, match="skill '../x'"):
        eng.start("hi", chat=True, skills=["../x"])
    assert eng.sessions() == []
    session = eng.start("hi", chat=True, skills=["file-discipline"])
    eng.send(session.id, "again", skills=["file-discipline"])
    texts = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
    assert sum("# File discipline" in t for t in texts) == 1 and texts[-1] == "again"
    shown = eng.show(session.id)
    assert shown.skills == ["file-discipline"] and shown.kind == "chat"
    # `show --json` prints this shape in local and system mode alike (the supervisor's is checked in
    # tests/supervisor/test_hostile_input.py)
    assert list(shown.to_dict()) == [f.name for f in fields(RunDetail)]


def test_a_new_model_applies_from_the_next_message(engine):
    eng, server = engine(["one", "two"])
    session = eng.start("hi", chat=True)
    eng.send(session.id, "again", model="fake/other")
    assert server.requests[-1]["model"] == "other" and eng.sessions()[0].model == "fake/other"
    with pytest.raises(UsageError):
        eng.send(session.id, "x", model="no-provider-here")


def test_send_and_interrupt_refuse_a_plain_run(engine):
    eng, _ = engine(["done"])
    run = eng.start("task")
    assert run.status == "done_unverified"  # a plain run, answered (nothing the harness could check)
    for op in (lambda: eng.send(run.id, "more"), lambda: eng.interrupt(run.id)):
        with pytest.raises(UsageError, match="not a chat session"):
            op()


def test_idle_is_an_event_every_renderer_sees(engine):
    eng, _ = engine(["hello there"])
    seen: list[ev.Event] = []
    session = eng.start("hi", chat=True, on_event=seen.append)
    assert isinstance(seen[-1], ev.Idle) and seen[-1].output == "hello there"
    assert list(eng.events(session.id))[-1] == seen[-1]


def test_approving_a_run_someone_else_took_up_follows_it_instead_of_failing(engine, sentinel_home):
    import threading
    import time
    from pathlib import Path

    from sentinel.engine.run import Run
    from sentinel.local.engine import LocalEngine

    eng, _ = engine([BASH, {"content": "ran it", "delay_ms": 800}])
    paused = eng.start("count", chat=True)
    run_dir = Path(eng.store.get_run(paused.id)["run_dir"])
    chat = LocalEngine()  # the chat that was asking about this approval sees it resolved and takes the run up
    taker = threading.Thread(target=lambda: chat.resume(paused.id))
    real_resume = eng.resume

    def resume_second(run_id, on_event=None):
        taker.start()
        while not Run.is_leased(run_dir):
            time.sleep(0.001)
        return real_resume(run_id, on_event=on_event)

    eng.resume = resume_second
    seen: list[ev.Event] = []
    outcome = eng.approve(paused.approval_id, on_event=seen.append)
    taker.join()
    chat.close()
    assert (outcome.status, outcome.output) == ("idle", "ran it")
    assert isinstance(seen[-1], ev.Idle) and not any(isinstance(e, ev.RunStarted) for e in seen)  # only what's new
    assert (sentinel_home / "workspace" / "counter.txt").read_text() == "ran\n"


def test_a_lease_is_not_refused_because_another_process_only_looked(tmp_path):
    """`is_leased` takes a shared lock for an instant; a lease attempt landing in that instant must not be told
    the run is busy (a concurrent `sentinel runs` would otherwise fail an approve's resume)."""
    import threading

    from sentinel.engine.run import Run

    run_dir = tmp_path / "r-probe"
    run_dir.mkdir()
    stop = threading.Event()

    def probe() -> None:
        while not stop.is_set():
            Run.is_leased(run_dir)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        for _ in range(200):
            os.close(Run.lease(run_dir))
    finally:
        stop.set()
        prober.join()
