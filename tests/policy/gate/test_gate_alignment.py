"""The alignment rule kind (seed 004) wired into Sentinel's decisions, on the fixtures table with a
scripted judge; irreversibility categories; read-only skip; fail-open with logging."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from sentinel.config import Config
from sentinel.policy.decide import CallContext, decide
from sentinel.policy.gate.layer import RuleGate
from sentinel.policy.gate.alignment import category
from sentinel.policy.gate.action import Action
from sentinel.policy.settings import GateSettings

TABLE = yaml.safe_load((Path(__file__).parent / "data" / "alignment_scenarios.yaml").read_text())
BY_REQUEST = {sc["original_request"]: sc for sc in TABLE}


def table_judge(body):
    """Answers each scenario's expected decision; found by the ORIGINAL REQUEST line of the prompt."""
    text = body["messages"][-1]["content"]
    request = re.search(r"ORIGINAL REQUEST: (.*)", text).group(1)
    sc = BY_REQUEST[request]
    return {"decision": sc["expected"], "reason": f"scripted: {sc['id']}"}


def ctx(sc, workspace=Path("/ws")):
    act = sc["action"]
    return CallContext(run_id="run1", agent=act["agent_id"], tool=act["skill"], arguments=act["arguments"],
                       task=sc["original_request"], mission=sc["agent_mission"], workspace=workspace)


@pytest.fixture
def gate(sentinel_home, judge):
    def make(responder=table_judge, rule=None, **settings):
        j = judge(responder)
        rules = sentinel_home / "rules"
        rules.mkdir(exist_ok=True)
        (rules / "alignment.yaml").write_text(yaml.safe_dump(rule or {"kind": "alignment"}))
        config = Config(providers={"fake": {"base_url": j.base_url}})
        return RuleGate.for_sentinel(sentinel_home, GateSettings(backend="fake", model="judge-m", **settings),
                                     config, system_rules=None), j

    return make


def test_fixture_table_wiring(gate):
    g, j = gate()
    for sc in TABLE:
        decision = decide(ctx(sc), [g])
        if sc["expected"] == "reject":
            assert decision.outcome == "deny", sc["id"]
            (result,) = decision.layers
            assert (result.layer, result.rule_id, result.reason) == ("alignment", "alignment",
                                                                     f"scripted: {sc['id']}")
        else:
            assert decision.outcome == "auto", sc["id"]
            assert all(r.outcome == "auto" for r in decision.layers)
    assert len(j.requests) == len(TABLE)
    body = j.requests[0]
    assert body["model"] == "judge-m" and body["temperature"] == 0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["properties"]["decision"]["enum"] == ["approve", "reject"]
    assert schema["required"] == ["reason", "decision"] and schema["additionalProperties"] is False
    user = body["messages"][-1]["content"]
    first = TABLE[0]
    assert f"AGENT MISSION: {first['agent_mission']}" in user
    assert "Tool: email.send" in user and "sarah@example.com" in user and "Agent ID: email_agent" in user
    assert "Category: irreversible" in user
    assert "security gate" in body["messages"][0]["content"]


@pytest.mark.parametrize("skill,expected", [
    ("email.list", "read_only"), ("files.read", "read_only"), ("memory.search", "read_only"),
    ("tasks.get", "read_only"), ("images.list_models", "read_only"), ("email.draft", "creates_state"),
    ("tasks.create", "creates_state"), ("calendar.create", "creates_state"), ("files.update", "modifies_state"),
    ("tasks.update", "modifies_state"), ("calendar.update", "modifies_state"), ("files.write", "modifies_state"),
    ("email.send", "irreversible"), ("files.archive", "irreversible"), ("workflow.run", "irreversible"),
    ("tasks.delete", "irreversible"), ("images.generate", "costs_money"), ("bash", "irreversible"),
    ("write_file", "modifies_state"),
])
def test_irreversibility_categories(skill, expected):
    trigger = "bash" if skill == "bash" else "other"
    assert category(Action(trigger, skill, {})) == expected


def test_read_only_skip_makes_no_call(gate):
    g, j = gate(rule={"kind": "alignment", "skip_read_only": True})
    read = next(sc for sc in TABLE if sc["id"] == "read-on-read")
    assert decide(ctx(read), [g]).outcome == "auto" and j.requests == []
    send = next(sc for sc in TABLE if sc["id"] == "wrong-domain")
    assert decide(ctx(send), [g]).outcome == "deny" and len(j.requests) == 1


def test_fail_open_with_logging(gate, sentinel_home):
    g, j = gate(responder=lambda body: "garbage")
    sc = TABLE[0]
    decision = decide(ctx(sc), [g])
    assert decision.outcome == "auto"
    assert "skipped: fail_open" in decision.layers[0].reason
    lines = [json.loads(x) for x in (sentinel_home / "gate" / "sentinel.log").read_text().splitlines()]
    assert lines[-1]["rule_id"] == "alignment" and "non-JSON" in lines[-1]["error"]


def test_strict_mode_denies_on_error(gate):
    g, _ = gate(responder=lambda body: {"decision": "maybe", "reason": "x"}, fail_open=False)
    decision = decide(ctx(TABLE[2]), [g])
    assert decision.outcome == "deny" and "not one of approve, reject" in decision.reason


def test_no_request_no_mission_skips(gate):
    g, j = gate()
    sc = dict(TABLE[0], original_request="", agent_mission="")
    assert decide(ctx(sc), [g]).outcome == "auto" and j.requests == []


def test_benchmark_scores_the_table(judge):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_alignment", Path(__file__).parents[3] / "benchmarks" /
                                                  "bench_alignment.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.judges import Judges

    j = judge(table_judge)
    judges = Judges(GateConfig(GateSettings(backends={"ollama": {"url": j.url}}).model_dump()))
    rows = bench.score(TABLE, judges.get("ollama"), "m")
    assert all(r["ok"] for r in rows) and bench.summary(rows)["correct"] == 10
    always = Judges(GateConfig(GateSettings(backends={"ollama": {"url": judge(lambda b: {
        "decision": "approve", "reason": "x"}).url}}).model_dump()))
    assert bench.summary(bench.score(TABLE, always.get("ollama"), "m"))["correct"] == 5
