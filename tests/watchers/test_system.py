"""System mode: the supervisor's watcher child runs /etc watchers; hook sessions are workers; the relay
contract is a row in the supervisor's database, so a kill -9 of the supervisor mid-session still ends in
exactly one delivery."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from watch_helpers import ESCALATE, NOTIFY, price_watcher
from sx_helpers import agent_config, operator_config

pytestmark = pytest.mark.root


def wait_for(predicate, timeout=40.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def etc_watcher(system, data):
    (system.etc / "watchers").mkdir(mode=0o755, exist_ok=True)
    (system.etc / "watchers" / f"{data['id']}.yaml").write_text(yaml.safe_dump(data))


def history(sentinel_cmd):
    return json.loads(sentinel_cmd("watch", "history", "--json", check=0).stdout)


def inbox(sentinel_cmd):
    return json.loads(sentinel_cmd("inbox", "--json", check=0).stdout)


def settled(sentinel_cmd, count):
    rows = history(sentinel_cmd)
    return rows if len(rows) == count and all(r["status"] != "pending" for r in rows) else None


def test_system_mode_notify_and_escalate(system, make_agent, supervisor, scripted_server, price_server,
                                         sentinel_cmd):
    name = make_agent()
    notifier, escalator = scripted_server(NOTIFY), scripted_server(ESCALATE)
    agent_config(name, notifier)
    operator_config(system.etc, {"providers": {"fake": {"base_url": notifier.base_url},
                                               "esc": {"base_url": escalator.base_url}},
                                 "system": {"models": ["fake/m", "esc/m"]}})
    server = price_server(1990)
    etc_watcher(system, price_watcher("eth-notify", server.url, fire={"agent": name, "model": "fake/m"},
                                      hookResponseTimeoutMs=20000))
    etc_watcher(system, price_watcher("eth-escalate", server.url, fire={"agent": name, "model": "esc/m"},
                                      hookResponseTimeoutMs=8000))
    supervisor()
    rows = {r["watcher"]: r for r in wait_for(lambda: settled(sentinel_cmd, 2))}
    assert rows["eth-notify"]["status"] == "notified"
    assert rows["eth-escalate"]["status"] == "fallback"
    assert rows["eth-escalate"]["outcome"]["reason"] == "escalated (warning): needs a person"
    entries = inbox(sentinel_cmd)
    assert sorted((e["watcher"], e["kind"]) for e in entries) == [("eth-escalate", "fallback"),
                                                                   ("eth-notify", "notified")]
    hits = server.hits
    wait_for(lambda: server.hits >= hits + 5)   # the held condition does not fire again
    assert len(history(sentinel_cmd)) == 2


def test_kill_9_mid_session_still_one_delivery(system, make_agent, supervisor, scripted_server, price_server,
                                               sentinel_cmd):
    name = make_agent()
    slow = scripted_server([{**NOTIFY[0], "delay_ms": 4000}, NOTIFY[1]])
    agent_config(name, slow)
    server = price_server(1990)
    etc_watcher(system, price_watcher("eth", server.url, fire={"agent": name}, hookResponseTimeoutMs=3000))
    sup = supervisor()
    firing = wait_for(lambda: (rows := history(sentinel_cmd)) and rows[0]["run_id"] and slow.requests and rows[0])
    sup.kill9()                                   # mid-session: the model has not answered yet
    supervisor()                                  # the run resumes; the deadline passes; the timer survived
    rows = wait_for(lambda: settled(sentinel_cmd, 1))
    assert rows[0]["id"] == firing["id"] and rows[0]["status"] == "fallback"
    assert "no notify within 3000 ms" in rows[0]["outcome"]["reason"]
    shown = wait_for(lambda: (run := json.loads(sentinel_cmd("show", firing["run_id"], "--json").stdout))
                     and run["status"] == "done" and run)
    results = [m["content"] for m in shown["messages"] if m["role"] == "tool"]
    assert len(results) == 1 and "fallback" in results[0]   # the late notify was refused, not delivered
    entries = [e for e in inbox(sentinel_cmd) if e["firing_id"] == firing["id"]]
    assert [e["kind"] for e in entries] == ["fallback"]


def test_watch_fire_in_system_mode(system, make_agent, supervisor, scripted_server, sentinel_cmd):
    name = make_agent()
    agent_config(name, scripted_server(NOTIFY))
    etc_watcher(system, {"id": "nightly", "eventName": "report.due", "fire": {"agent": name},
                         "strategy": {"type": "schedule", "intervalS": 3600}, "hookResponseTimeoutMs": 20000})
    supervisor()
    firing = json.loads(sentinel_cmd("watch", "fire", "nightly", "--payload", '{"n": 7}', "--json", check=0).stdout)
    assert firing["status"] == "notified" and firing["envelope"]["context"]["data"] == {"n": 7}
    assert [e["message"] for e in inbox(sentinel_cmd)] == ["ETH is low"]
    assert sentinel_cmd("watch", "fire", "nope").stderr.strip().startswith("error: no watcher 'nope' in ")
