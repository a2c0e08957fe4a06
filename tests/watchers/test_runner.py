"""The watcher loop in-process: a threshold crossing fires once, the envelope, notify vs fallback."""

from __future__ import annotations

import time

from sentinel.engine import relay
from sentinel.local.engine import LocalEngine
from sentinel.watchers import spec
from sentinel.watchers.deliver import command_runner
from sentinel.watchers.runner import Runner


def runner_for(*watchers):
    engine = LocalEngine()
    return Runner(engine, engine.store, engine.config, list(watchers), command_runner(engine.config, None, engine.home),
                  log=lambda line: None)


def poll(runner, times=1):
    fired = []
    for _ in range(times):
        for source in runner.sources.values():
            source.due_at = 0
        fired += runner.tick()
    return fired


def test_crossing_fires_once_and_dedupe_holds(price_server, write_watcher, two_models):
    server = price_server(2100)
    runner = runner_for(spec.load_file(write_watcher("eth", server.url, fire={"model": "notify/m"})))
    runner.open()
    assert poll(runner, 2) == []            # above the threshold: nothing
    server.value = 1990
    fired = poll(runner, 3)                 # crosses, then stays below: one firing
    assert len(fired) == 1
    server.value = 2050
    assert poll(runner) == []               # lapses: re-armed
    server.value = 1900
    assert len(poll(runner)) == 1           # crosses again: fires again
    assert server.hits == 7


def test_notify_fulfils_the_contract_and_cancels_the_fallback(price_server, write_watcher, two_models):
    runner = runner_for(spec.load_file(write_watcher("eth", "http://127.0.0.1:9/", fire={"model": "notify/m"})))
    firing = runner.wait(runner.fire(runner.watchers["eth"], {"price": 1990}, 1990))
    assert firing["status"] == "notified"
    time.sleep(0.5)
    runner.relay.tick()
    entries = relay.inbox(runner.conn)
    assert [(e.kind, e.message) for e in entries] == [("notified", "ETH is low")]


def test_escalation_gives_exactly_one_fallback(price_server, write_watcher, two_models):
    runner = runner_for(spec.load_file(write_watcher("eth", "http://127.0.0.1:9/", fire={"model": "escalate/m"},
                                                     hookResponseTimeoutMs=500)))
    fid = runner.fire(runner.watchers["eth"], {"price": 1990}, 1990)
    assert relay.get(runner.conn, fid)["status"] == "pending"   # escalating does not settle it
    firing = runner.wait(fid)
    assert firing["status"] == "fallback" and firing["outcome"]["reason"] == "escalated (warning): needs a person"
    assert firing["resolved_at"] >= firing["deadline"]          # delivered when the response time ran out
    for _ in range(3):
        runner.relay.tick()
    entries = relay.inbox(runner.conn)
    assert len(entries) == 1 and entries[0].kind == "fallback" and "needs a person" in entries[0].message


def test_a_session_past_its_timeout_gets_the_fallback_and_its_late_notify_is_refused(scripted_server, configure,
                                                                                     write_watcher):
    from watch_helpers import NOTIFY

    configure(server=scripted_server([{**NOTIFY[0], "delay_ms": 700}, NOTIFY[1]]))
    runner = runner_for(spec.load_file(write_watcher("eth", "http://127.0.0.1:9/", hookResponseTimeoutMs=300)))
    fid = runner.fire(runner.watchers["eth"], {"price": 1990}, 1990)
    firing = runner.wait(fid)
    assert firing["status"] == "fallback" and firing["outcome"]["reason"].startswith("no notify within 300 ms")
    run = runner.engine.show(firing["run_id"])
    assert [m["content"] for m in run.messages if m["role"] == "tool"] == [
        f"Error: firing {fid}: the response time ran out; the fallback delivers it"]
    assert [e.kind for e in relay.inbox(runner.conn)] == ["fallback"]
