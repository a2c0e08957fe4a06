"""System mode's trust store, attacked over the worker channel (no root needed): a worker may ask whether a code
hash is trusted for its own run's agent, never record trust, and an approval it submits binds the code hash."""

from __future__ import annotations

import pytest

from sentinel.agents.authored import code_digest
from sentinel.engine.store import Store, call_digest
from sentinel.supervisor import registry
from sentinel.supervisor.workers import Worker, handle

CODE = {"tool.yaml": "name: t\n", "tool.py": "def run(args):\n    return 'x'\n"}
SHA = code_digest(CODE)


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "sup.db")
    for run_id, agent in (("r-mine", "naomi"), ("r-other", "bob")):
        s.create_run(run_id, agent=agent, task="t", model="fake/m", workspace=tmp_path, run_dir=tmp_path / run_id)
        s.conn.execute("UPDATE runs SET user=? WHERE id=?", (agent, run_id))
    yield s
    s.close()


@pytest.fixture
def worker():
    return Worker("r-mine", registry.Agent("naomi", "Naomi", "naomi", 1234, "/home/naomi", "setup", 0.0), 1234,
                  "/home/naomi", spawned=None)  # type: ignore[arg-type]


def ask(store, worker, op, **args):
    return handle(store, worker, {"op": op, **args}, lambda run_id, event: None)


def decided(store, worker, call_id, arguments, sha=SHA):
    """The worker records the decision first, as the loop does: an approval is only for a decided call."""
    decision = {"tool": "t", "arguments": arguments, "outcome": "needs_approval", "reason": "untrusted",
                "layers": [], "code_sha256": sha}
    assert ask(store, worker, "record_decision", call_id=call_id, decision=decision)["ok"]


@pytest.mark.parametrize("op", ["trust_tool", "trust", "record_trust", "trust_revoke", "revoke_trust", "sql"])
def test_a_worker_can_never_record_or_revoke_trust(store, worker, op):
    store.trust_tool("naomi", "keep", SHA, "root")
    answer = ask(store, worker, op, agent="naomi", tool="t", code_sha256=SHA, by="root",
                 sql="INSERT INTO tool_trust VALUES ('naomi', 't', 'x', 'me', 0)")
    assert answer["ok"] is False and answer["kind"] == "denied"
    assert [(r["tool"], r["code_sha256"]) for r in store.trusted_tools()] == [("keep", SHA)]


def test_tool_trusted_answers_for_the_workers_own_agent_only(store, worker):
    store.trust_tool("bob", "t", SHA, "root")
    assert ask(store, worker, "tool_trusted", tool="t", code_sha256=SHA)["result"] is False
    assert ask(store, worker, "tool_trusted", run_id="r-other", tool="t", code_sha256=SHA)["kind"] == "denied"
    store.trust_tool("naomi", "t", SHA, "root")
    assert ask(store, worker, "tool_trusted", tool="t", code_sha256=SHA)["result"] is True
    assert ask(store, worker, "tool_trusted", tool="t", code_sha256="b" * 64)["result"] is False


def test_an_approval_carries_the_code_binds_its_hash_and_approving_trusts_it(store, worker):
    decided(store, worker, "c1", {"x": 1})
    submitted = ask(store, worker, "submit_approval", call_id="c1", tool="t", arguments={"x": 1}, reason="untrusted",
                    code=CODE, code_sha256=SHA)["result"]
    assert submitted["code"] == CODE and submitted["code_sha256"] == SHA
    assert store.get_approval(submitted["id"]).public()["code"] == CODE
    store.resolve(submitted["id"], True, "root", trusts=True)  # as the operator socket resolves it
    assert ask(store, worker, "consume", approval_id=submitted["id"], digest=call_digest("t", {"x": 1}))["result"] is False
    assert ask(store, worker, "consume", approval_id=submitted["id"],
               digest=call_digest("t", {"x": 1}, "b" * 64))["result"] is False
    assert ask(store, worker, "consume", approval_id=submitted["id"],
               digest=call_digest("t", {"x": 1}, SHA))["result"] is True
    assert [(r["agent"], r["tool"], r["code_sha256"], r["trusted_by"]) for r in store.trusted_tools()] == [
        ("naomi", "t", SHA, "root")]


def test_a_denied_approval_trusts_nothing_and_bad_code_fields_are_refused(store, worker):
    decided(store, worker, "c1", {})
    decided(store, worker, "c2", {})
    a = ask(store, worker, "submit_approval", call_id="c1", tool="t", arguments={}, reason="r", code=CODE,
            code_sha256=SHA)["result"]
    store.resolve(a["id"], False, "root")
    assert store.trusted_tools() == []
    for code, sha in ((CODE, "not-a-hash"), ({"tool.py": 3}, SHA), ("text", SHA)):
        answer = ask(store, worker, "submit_approval", call_id="c2", tool="t", arguments={}, reason="r", code=code,
                     code_sha256=sha)
        assert answer["ok"] is False and answer["kind"] == "usage"


def test_an_approval_never_shows_other_code_than_the_hash_decided(store, worker):
    """A worker that shows the operator harmless code while the decided hash is of other code is refused."""
    decided(store, worker, "c3", {})
    harmless = {**CODE, "tool.py": "def run(args):\n    return 'harmless'\n"}
    for code, sha in ((harmless, SHA), (harmless, code_digest(harmless)), (None, SHA), (CODE, None)):
        answer = ask(store, worker, "submit_approval", call_id="c3", tool="t", arguments={}, reason="r", code=code,
                     code_sha256=sha)
        assert answer["ok"] is False, (code, sha)
    assert store.approval_for_call("r-mine", "c3") is None
    assert ask(store, worker, "submit_approval", call_id="c3", tool="t", arguments={}, reason="r", code=CODE,
               code_sha256=SHA)["ok"]
