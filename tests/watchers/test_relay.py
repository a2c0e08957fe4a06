"""The relay: exactly one outcome per firing, what the fallback says, deliveries retried then the inbox."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from sentinel.engine import relay
from sentinel.engine.store import Store
from sentinel.local.engine import LocalEngine
from sentinel.watchers import spec
from sentinel.watchers.deliver import command_runner
from sentinel.watchers.runner import Runner

from watch_helpers import NOTIFY, price_watcher

PLAIN = ["The price dropped; someone should look."]


def runner(sentinel_home, data, config_extra=None):
    path = sentinel_home / "watchers" / f"{data['id']}.yaml"
    path.parent.mkdir(exist_ok=True)
    import yaml

    path.write_text(yaml.safe_dump(data))
    engine = LocalEngine()
    return Runner(engine, engine.store, engine.config, [spec.load_file(path)],
                  command_runner(engine.config, None, engine.home), log=lambda line: None)


def first_user_message(r, firing_id):
    """The envelope: the run's task, after any skill the watcher's skillId attached."""
    run = r.engine.show(relay.get(r.conn, firing_id)["run_id"])
    users = [m["content"] for m in run.messages if m["role"] == "user"]
    assert run.task == users[-1] and run.kind == "hook"
    return json.loads(users[-1])


def test_envelope_has_exactly_the_seed_fields(sentinel_home, scripted_server, configure, tmp_path):
    configure(server=scripted_server(NOTIFY))
    goal = tmp_path / "goal.md"
    goal.write_text("policy v1")
    r = runner(sentinel_home, price_watcher("eth", "http://127.0.0.1:9/", skillId="file-discipline",
                                            fire={"operatorGoalFile": str(goal), "autonomy": "act", "environment": "prod",
                                                  "payloadTemplate": {"price": "{{data.price}}", "note": "at {{value}}"}}))
    env = first_user_message(r, r.wait(r.fire(r.watchers["eth"], {"price": 1990}, 1990))["id"])
    assert set(env) == {"watcher", "trigger", "mode", "context", "payload", "delivery"}
    assert r.engine.show(relay.history(r.conn)[0].run_id).skills == ["file-discipline"]
    assert env["watcher"] == {"id": "eth", "skillId": "file-discipline", "eventName": "eth.price.low",
                              "strategy": "http-poll", "endpoint": "http://127.0.0.1:9/", "tags": ["defi"]}
    assert set(env["trigger"]) == {"matchedAt", "dedupeKey", "priority"} and env["trigger"]["priority"] == "high"
    assert env["mode"] == {"environment": "prod", "operatorGoal": None, "autonomy": "act",
                           "operatorGoalRuntimeContext": "policy v1"}
    assert env["payload"] == {"price": 1990, "note": "at 1990"}
    assert env["context"]["data"] == {"price": 1990} and env["delivery"] == [{"name": "inbox", "type": "inbox"}]
    goal.write_text("policy v2")                      # read fresh at each firing
    env2 = first_user_message(r, r.wait(r.fire(r.watchers["eth"], {"price": 1980}, 1980))["id"])
    assert env2["mode"]["operatorGoalRuntimeContext"] == "policy v2"


def test_a_plain_answer_is_not_a_delivery(sentinel_home, scripted_server, configure):
    # The fallback comes at the deadline, and names the session's end when it ended before it: 8 s leaves a
    # loaded machine time to end the session, without waiting out the 20 s default.
    configure(server=scripted_server(PLAIN))
    r = runner(sentinel_home, price_watcher("eth", "http://127.0.0.1:9/", hookResponseTimeoutMs=8000))
    firing = r.wait(r.fire(r.watchers["eth"], {"price": 1990}, 1990))
    assert firing["status"] == "fallback"
    assert firing["outcome"]["reason"] == "the session ended without sentinel_act notify"
    [entry] = relay.inbox(r.conn)
    assert entry.kind == "fallback" and "[eth] eth.price.low" in entry.message and "1990" in entry.message


def test_fallback_mode_none_delivers_nothing(sentinel_home, scripted_server, configure):
    configure({"watchers": {"hookResponseFallbackMode": "none"}}, server=scripted_server(PLAIN))
    r = runner(sentinel_home, price_watcher("eth", "http://127.0.0.1:9/", hookResponseTimeoutMs=500))
    assert r.wait(r.fire(r.watchers["eth"], {"price": 1990}, 1990))["status"] == "suppressed"
    assert relay.inbox(r.conn) == []


def test_notify_to_named_targets_and_a_file_target(sentinel_home, scripted_server, configure, tmp_path):
    out = tmp_path / "alerts.jsonl"
    script = [{"tool_calls": [{"name": "sentinel_act", "arguments": {"action": "notify", "message": "low",
                                                                     "targets": ["nope"]}}]},
              {"tool_calls": [{"name": "sentinel_act", "arguments": {"action": "notify", "message": "low",
                                                                     "targets": ["log"]}}]},
              "done"]
    configure(server=scripted_server(script))
    r = runner(sentinel_home, price_watcher("eth", "http://127.0.0.1:9/",
                                            delivery=[{"type": "inbox"}, {"type": "file", "name": "log", "path": str(out)}]))
    fid = r.fire(r.watchers["eth"], {"price": 1990}, 1990)
    assert r.wait(fid)["status"] == "notified"
    results = [m["content"] for m in r.engine.show(relay.get(r.conn, fid)["run_id"]).messages if m["role"] == "tool"]
    assert results[0].startswith("Error: unknown delivery target(s) nope; configured: inbox, log")
    assert relay.inbox(r.conn) == []                               # only the named target
    [line] = out.read_text().splitlines()
    assert json.loads(line)["message"] == "low" and json.loads(line)["firing"] == fid


def test_failed_delivery_is_retried_with_backoff_then_lands_in_the_inbox(sentinel_home, scripted_server, configure):
    # A second of backoff: "not due yet" must still hold when a loaded machine takes a while between two lines.
    configure({"watchers": {"deliveryAttempts": 3, "deliveryBackoffS": 1.0}}, server=scripted_server(NOTIFY))
    r = runner(sentinel_home, price_watcher("eth", "http://127.0.0.1:9/",
                                            delivery=[{"type": "webhook", "url": "http://127.0.0.1:9/hook"}]))
    fid = r.wait(r.fire(r.watchers["eth"], {"price": 1990}, 1990))["id"]
    assert relay.inbox(r.conn) == []
    r.relay.tick()                                                  # attempt 1 fails (nothing listens on port 9)
    [d] = relay.deliveries(r.conn, fid)
    assert d["status"] == "pending" and d["attempts"] == 1 and d["next_at"] > time.time()
    r.relay.tick()                                                  # not due yet: no attempt
    assert relay.deliveries(r.conn, fid)[0]["attempts"] == 1
    deadline = time.time() + 20
    while relay.deliveries(r.conn, fid)[0]["status"] == "pending" and time.time() < deadline:
        r.relay.tick()
        time.sleep(0.02)
    [d] = relay.deliveries(r.conn, fid)
    assert d["status"] == "failed" and d["attempts"] == 3
    [entry] = relay.inbox(r.conn)
    assert entry.message.startswith("[delivery to webhook failed: POST http://127.0.0.1:9/hook") \
        and entry.message.endswith("ETH is low")


def test_command_target_gets_the_message_on_stdin(sentinel_home, scripted_server, configure, tmp_path):
    configure(server=scripted_server(NOTIFY))
    out = tmp_path / "got.txt"
    r = runner(sentinel_home, price_watcher("eth", "http://127.0.0.1:9/", delivery=[
        {"type": "command", "argv": ["/bin/sh", "-c", f"cat > {out}"]}]))
    r.wait(r.fire(r.watchers["eth"], {"price": 1990}, 1990))
    r.relay.tick()
    assert out.read_text() == "ETH is low"


RACE = """
import sys, time
from sentinel.engine.store import Store
from sentinel.engine import relay
store = Store.open(sys.argv[1])
while time.time() < float(sys.argv[2]):
    pass
won = relay.settle(store.conn, "f-race", sys.argv[3], {}, [({"type": "inbox"}, sys.argv[3])])
print(int(won))
"""


def test_racing_claims_settle_exactly_once(sentinel_home):
    """Four processes (a notify and three fallback timers, as after a restart) claim one firing at once."""
    db = sentinel_home / "state" / "sentinel.db"
    with Store.open(db) as store:
        relay.open_firing(store.conn, firing_id="f-race", watcher="eth", dedupe_key="k",
                          envelope={"delivery": [{"type": "inbox"}]}, fired_at=time.time(), deadline=0, fallback=True)
    start = str(time.time() + 1.0)
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(db), start, kind], stdout=subprocess.PIPE, text=True)
             for kind in ("notified", "fallback", "fallback", "fallback")]
    wins = [int(p.communicate(timeout=30)[0]) for p in procs]
    assert sum(wins) == 1
    with Store.open(db) as store:
        [entry] = relay.inbox(store.conn)
        assert entry.kind == relay.get(store.conn, "f-race")["status"]


def test_the_console_renders_firings_and_the_inbox_from_the_engine(sentinel_home, scripted_server, configure):
    from sentinel.web.render import Templates

    configure(server=scripted_server(PLAIN))
    r = runner(sentinel_home, price_watcher("eth", "http://127.0.0.1:9/", hookResponseTimeoutMs=8000))
    firing = r.wait(r.fire(r.watchers["eth"], {"price": 1990}, 1990))
    base = {"prefix": "/s/p", "csrf": "t", "operator": "op", "mode": "local", "pending_count": 0, "poll_error": None}
    page = Templates().render("watchers.html", firings=r.engine.firings(), inbox=r.engine.inbox(), **base)
    assert f'href="/s/p/runs/{firing["run_id"]}"' in page
    assert "the session ended without sentinel_act notify" in page and "[eth] eth.price.low" in page
