"""System mode: the supervisor delivers (its watcher child, so its own loop never blocks) from its root-only
store, and a one-tap link decides through the supervisor once."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "supervisor"))

from sx_helpers import agent_config, make_agent, operator_config, scripted_bash, sentinel_cmd, supervisor, system  # noqa: E402,F401,E501

pytestmark = pytest.mark.root


def test_the_supervisor_notifies_once_and_a_link_decides_once(system, make_agent, sentinel_cmd, supervisor,
                                                               scripted_server, webhook):
    hook = webhook()
    operator_config(system.etc, {"notify": [{"type": "webhook", "url": hook.url, "one_tap": True,
                                             "on": ["approval", "done"]}]})
    name = make_agent()
    server = scripted_server(scripted_bash("echo ran >> ran.txt"))
    agent_config(name, server)
    supervisor([server.port])
    out = json.loads(sentinel_cmd("run", "write notes.txt", "--agent", name, "--json", check=3).stdout)
    paused_at = time.time()
    (got,) = hook.wait(1, timeout=10)
    assert got["t"] - paused_at < 1.0, f"{got['t'] - paused_at:.2f} s"
    doc = got["json"]
    assert (doc["event"], doc["run_id"], doc["approval_id"]) == ("approval", out["id"], out["approval_id"])
    secret = doc["decide_url"].rsplit("/link/", 1)[1]
    with sqlite3.connect(system.state / "sentinel.db") as db:  # the store keeps the link's hash, never the link
        rows = db.execute("SELECT secret_sha256 FROM notify_links").fetchall()
    assert rows == [(hashlib.sha256(secret.encode()).hexdigest(),)]

    from sentinel.errors import UsageError
    from sentinel.client.system import SystemEngine

    engine = SystemEngine(system.socket)
    assert engine.link(secret)["approval"]["id"] == out["approval_id"]
    assert engine.decide_link(secret, approved=True).status in ("running", "done")
    with pytest.raises(UsageError, match="already used"):
        engine.decide_link(secret, approved=True)
    deadline = time.monotonic() + 30
    while (shown := json.loads(sentinel_cmd("show", out["id"], "--json").stdout))["status"] != "done":
        assert time.monotonic() < deadline, shown["status"]
        time.sleep(0.2)
    assert shown["decisions"][-1]["approval"]["by"].startswith("one-tap link (webhook http://127.0.0.1:")
    assert [r["json"]["event"] for r in hook.wait(2)] == ["approval", "done"]
    status = json.loads(sentinel_cmd("status", "--json", check=0).stdout)
    assert status["notify"] == [{"target": f"webhook {hook.url}", "state": "ok"}]
    time.sleep(1.0)
    assert len(hook.received) == 2


def test_a_supervised_link_names_the_operators_console(system, make_agent, sentinel_cmd, supervisor, scripted_server,
                                                        webhook):
    """The operator's `sentinel web` listens on a port of its own: the supervisor's links name it."""
    from sentinel.client.system import SystemEngine
    from sentinel.web.app import InThread, engines_for
    from sentinel.web.settings import WebSettings

    hook = webhook()
    operator_config(system.etc, {"notify": [{"type": "webhook", "url": hook.url, "one_tap": True, "on": ["approval"]}]})
    name = make_agent()
    server = scripted_server(scripted_bash("echo ran >> ran.txt"))
    agent_config(name, server)
    supervisor([server.port])
    console = InThread(engines_for(SystemEngine(system.socket)), WebSettings(poll_s=0.1)).start()
    try:
        sentinel_cmd("run", "write notes.txt", "--agent", name, "--json", check=3)
        (got,) = hook.wait(1, timeout=10)
        link = got["json"]["decide_url"]
        assert link.startswith(f"http://127.0.0.1:{console.port}/s/"), link
        import httpx

        assert httpx.get(link, timeout=10).status_code == 200
    finally:
        console.stop()
