"""Issue 16's done-when, end to end through the CLI in local mode: `sentinel watch run` in the foreground."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_threshold_watchers_notify_and_escalate(price_server, write_watcher, two_models, cli, sentinel_home):
    server = price_server(2100)
    write_watcher("eth-notify", server.url, fire={"model": "notify/m", "operatorGoal": "Notify the operator."})
    write_watcher("eth-escalate", server.url, fire={"model": "escalate/m"}, hookResponseTimeoutMs=800)
    env = {**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "test-key"}
    proc = subprocess.Popen([sys.executable, "-m", "sentinel", "watch", "run"], env=env, cwd=sentinel_home,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: server.hits >= 4)           # polling above the threshold
        assert cli.json("watch", "history", "--json") == []
        server.value = 1990                          # drops below
        wait_for(lambda: len(rows := cli.json("watch", "history", "--json")) == 2
                 and all(r["status"] != "pending" for r in rows))
        hits = server.hits
        wait_for(lambda: server.hits >= hits + 4)    # still below at later polls: no new firing
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    history = {f["watcher"]: f for f in cli.json("watch", "history", "--json")}
    assert set(history) == {"eth-notify", "eth-escalate"}
    assert history["eth-notify"]["status"] == "notified"
    assert history["eth-escalate"]["status"] == "fallback"
    assert history["eth-escalate"]["outcome"]["reason"] == "escalated (warning): needs a person"
    esc = history["eth-escalate"]
    assert esc["resolved_at"] - esc["fired_at"] >= 0.8   # the fallback waited for the timeout
    inbox = cli.json("inbox", "--json")
    assert sorted((e["watcher"], e["kind"]) for e in inbox) == [("eth-escalate", "fallback"), ("eth-notify", "notified")]
    assert [e["message"] for e in inbox if e["kind"] == "notified"] == ["ETH is low"]
    text = cli("inbox", check=0).stdout
    assert "ETH is low" in text and "escalated (warning)" in text
