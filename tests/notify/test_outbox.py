"""The outbox and its deliverer in this process, on a real store: escalations and failures are events too, two
deliverers never send one row twice, and a deliverer that died mid-send leaves the row to the next one."""

from __future__ import annotations

import threading
import time

import pytest

from sentinel import config as config_mod
from sentinel.engine import outbox, relay
from sentinel.engine.store import Store
from sentinel.notify.dispatch import LEASE_S, Dispatcher


@pytest.fixture
def store(sentinel_home):
    s = Store.open(sentinel_home / "state" / "sentinel.db")
    yield s
    s.close()


def _dispatcher(store, configure, sentinel_home, targets):
    configure({"notify": targets})
    return Dispatcher(store, config_mod.load(sentinel_home), log=lambda line: None)


def _run(store, sentinel_home, run_id, status):
    store.create_run(run_id, agent="a", task="t", model="m", workspace=sentinel_home, run_dir=sentinel_home / run_id)
    store.set_status(run_id, status, error="boom" if status == "failed" else None)


def test_an_escalation_and_a_failed_run_are_notified_once(store, configure, sentinel_home, webhook):
    hook = webhook()
    d = _dispatcher(store, configure, sentinel_home, [{"type": "webhook", "url": hook.url}])
    _run(store, sentinel_home, "r-hook", "running")
    store.conn.execute("UPDATE runs SET kind='hook' WHERE id='r-hook'")
    relay.open_firing(store.conn, firing_id="f-1", watcher="disk", dedupe_key="k", envelope={}, fired_at=time.time(),
                      deadline=time.time() + 60, fallback=True)
    relay.link(store.conn, "f-1", "r-hook")
    store.relay_escalate("r-hook", "the disk is almost full", "warning")
    _run(store, sentinel_home, "r-bad", "failed")
    d.tick()
    d.tick()
    d.close()
    docs = {r["json"]["event"]: r["json"] for r in hook.wait(2)}
    assert len(hook.received) == 2 and set(docs) == {"escalated", "failed"}
    assert docs["escalated"]["watcher"] == "disk" and docs["escalated"]["reason"] == "the disk is almost full"
    assert docs["escalated"]["url"].endswith("/watchers")
    assert docs["failed"]["run_id"] == "r-bad" and docs["failed"]["error"] == "boom"


def test_two_deliverers_send_each_row_once(store, configure, sentinel_home, webhook):
    hook = webhook()
    targets = [{"type": "webhook", "url": hook.url}]
    for i in range(20):
        _run(store, sentinel_home, f"r-{i}", "done")
    second = Store.open(sentinel_home / "state" / "sentinel.db")
    ds = [_dispatcher(store, configure, sentinel_home, targets), _dispatcher(second, configure, sentinel_home, targets)]
    threads = [threading.Thread(target=d.tick) for d in ds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for d in ds:
        d.close()
    second.close()
    assert sorted(r["json"]["run_id"] for r in hook.wait(20)) == sorted(f"r-{i}" for i in range(20))
    time.sleep(0.3)
    assert len(hook.received) == 20


def test_a_row_leased_by_a_deliverer_that_died_is_sent_after_the_lease(store, configure, sentinel_home, webhook):
    hook = webhook()
    d = _dispatcher(store, configure, sentinel_home, [{"type": "webhook", "url": hook.url}])
    _run(store, sentinel_home, "r-1", "done")
    d.scan()
    (claimed,) = outbox.claim(store.conn, time.time(), LEASE_S)  # a deliverer took it, then was killed
    d.tick()
    assert hook.received == []                                    # leased: nobody else sends it yet
    d.tick(now=time.time() + LEASE_S + 1)
    d.close()
    assert [r["json"]["run_id"] for r in hook.wait(1)] == ["r-1"]
    (row,) = outbox.history(store.conn)
    assert row["status"] == "delivered"


def test_sign_in_tokens_and_sessions_expire_and_tokens_work_once(store):
    from sentinel.engine import websessions

    token = websessions.issue_sign_in(store.conn, "alice", 60)
    session = websessions.trade_sign_in(store.conn, token, 0.2)
    assert session["operator"] == "alice" and websessions.session(store.conn, session["secret"])["csrf"] == session["csrf"]
    assert websessions.trade_sign_in(store.conn, token, 60) is None                 # once
    time.sleep(0.3)
    assert websessions.session(store.conn, session["secret"]) is None              # the session ran out
    late = websessions.issue_sign_in(store.conn, "bob", 0.1)
    time.sleep(0.2)
    assert websessions.trade_sign_in(store.conn, late, 60) is None                 # the token ran out
    kept = {r[0] for r in store.conn.execute("SELECT token_sha256 FROM web_signins")}
    assert token not in kept and outbox.sha256(token) in kept                 # only hashes are kept


def test_a_done_unverified_run_goes_to_who_follows_done_marked_so(sentinel_home, configure, webhook):
    """Whoever asked to hear of finished runs hears of this one too, and reads that nobody checked it."""
    from sentinel.engine.status import RunStatus
    from sentinel.notify.send import title

    hook = webhook()
    store = Store.open(sentinel_home / "state" / "sentinel.db")
    try:
        d = _dispatcher(store, configure, sentinel_home, [{"type": "webhook", "url": hook.url, "on": ["done"]}])
        store.create_run("r-u", agent="a", task="t", model="m", workspace=sentinel_home, run_dir=sentinel_home / "r")
        store.set_status("r-u", RunStatus.DONE_UNVERIFIED, output="the answer", error="not verified: the answer")
        d.tick()
        d.close()
    finally:
        store.close()
    doc = hook.wait(1)[0]["json"]
    assert doc["event"] == "done_unverified" and doc["output"] == "the answer"
    assert doc["error"] == "not verified: the answer"
    assert title(doc) == "Sentinel: run r-u finished, not verified"
