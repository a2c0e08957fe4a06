"""sentinel_act / sentinel_escalate: only in hook sessions; run_command is judged as the command it runs;
a worker reaches only its own run's contract and can only name configured targets, never describe one."""

from __future__ import annotations

import time

import pytest

from sentinel.engine import relay
from sentinel.engine.store import Store
from sentinel.local.engine import LocalEngine
from sentinel.supervisor import registry
from sentinel.supervisor.workers import Worker, handle


def act(command, args):
    return {"tool_calls": [{"name": "sentinel_act", "arguments": {"action": "run_command", "command": command,
                                                                   "args": args}}]}


def hook_run(engine, firing_id="f-1", delivery=None):
    relay.open_firing(engine.store.conn, firing_id=firing_id, watcher="eth", dedupe_key="k",
                      envelope={"delivery": delivery or [{"type": "inbox", "name": "inbox"}]},
                      fired_at=time.time(), deadline=time.time() + 60, fallback=True)
    return engine.start('{"watcher": {"id": "eth"}}', hook=firing_id)


def tool_results(engine, run_id):
    return [m["content"] for m in engine.show(run_id).messages if m["role"] == "tool"]


def test_run_command_is_decided_by_the_bash_rules(scripted_server, configure):
    configure(server=scripted_server([act("echo", ["hi"]), act("sudo", ["id"]), act("rm", ["-f", "x"]), "done"]))
    engine = LocalEngine()
    outcome = hook_run(engine)
    results = tool_results(engine, outcome.id)
    assert results[0] == "exit code: 0\nhi\n"                                # auto: a read-only command
    assert results[1] == "Denied by policy: policy: privilege escalation is never allowed"  # the no-privilege-escalation rule
    assert outcome.status == "waiting_approval"                              # rm: needs approval, like bash
    assert engine.pending()[0].arguments["command"] == "rm"


def test_the_relay_tools_exist_only_in_hook_sessions(scripted_server, configure):
    notify = {"tool_calls": [{"name": "sentinel_act", "arguments": {"action": "notify", "message": "hi"}}]}
    configure(server=scripted_server([notify, "done"]))
    engine = LocalEngine()
    outcome = engine.start("an ordinary task")
    assert tool_results(engine, outcome.id)[0].startswith("Denied by policy: unknown tool 'sentinel_act'")
    assert relay.inbox(engine.store.conn) == []


@pytest.fixture
def channel(tmp_path):
    store = Store.open(tmp_path / "sup.db")
    for run_id in ("r-mine", "r-other"):
        store.create_run(run_id, agent="a", task="t", model="fake/m", workspace=tmp_path, run_dir=tmp_path / run_id,
                         kind="hook")
        relay.open_firing(store.conn, firing_id=f"f-{run_id}", watcher="w", dedupe_key="k",
                          envelope={"delivery": [{"type": "inbox", "name": "inbox"}]}, fired_at=time.time(),
                          deadline=time.time() + 60, fallback=True)
        relay.link(store.conn, f"f-{run_id}", run_id)
    agent = registry.Agent("a", "A", "a", 1234, "/home/a", "setup", 0.0)
    worker = Worker("r-mine", agent, 1234, "/home/a", spawned=None)  # type: ignore[arg-type]
    yield store, lambda op, **args: handle(store, worker, {"op": op, **args}, lambda run_id, event: None)
    store.close()


def test_a_worker_cannot_settle_another_runs_contract(channel):
    store, ask = channel
    assert ask("relay_notify", run_id="r-other", message="forged")["kind"] == "denied"
    assert ask("relay_escalate", run_id="r-other", reason="x", severity="info")["kind"] == "denied"
    assert relay.get(store.conn, "f-r-other")["status"] == "pending"
    assert relay.inbox(store.conn) == []


def test_a_worker_names_targets_it_cannot_describe_them(channel):
    store, ask = channel
    forged = [{"type": "command", "argv": ["/bin/sh", "-c", "id > /tmp/pwned"]}]
    assert ask("relay_notify", message="x", targets=forged)["kind"] == "usage"
    assert ask("relay_notify", message="x", targets=["command"])["kind"] == "usage"
    assert relay.get(store.conn, "f-r-mine")["status"] == "pending"
    assert ask("relay_notify", message="ok")["result"]["status"] == "notified"
    assert ask("relay_notify", message="again")["kind"] == "denied"     # one outcome: a second notify is refused
    assert [e.message for e in relay.inbox(store.conn)] == ["ok"]
    assert store.conn.execute("SELECT COUNT(*) FROM watch_deliveries").fetchone()[0] == 0
