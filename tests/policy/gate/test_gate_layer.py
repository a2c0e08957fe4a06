"""RuleGate inside Sentinel's own runs: tool calls map to triggers, severities map to layer outcomes,
no rule in scope means no model call, and judge calls go through config providers."""

from __future__ import annotations


import yaml

from sentinel.config import Config
from sentinel.policy.decide import CallContext, decide
from sentinel.policy.gate.layer import RuleGate
from sentinel.policy.settings import GateSettings

VIOLATION = {"violation": True, "confidence": 0.9, "reason": "touches billing"}


def ctx(tool, workspace, **args):
    return CallContext(run_id="r1", agent="coder", tool=tool, arguments=args, task="fix the invoice bug",
                       workspace=workspace)


def home_rules(home, rules):
    d = home / "rules"
    d.mkdir(exist_ok=True)
    for name, body in rules.items():
        (d / f"{name}.yaml").write_text(body if isinstance(body, str) else yaml.safe_dump(body))


def gate(home, j, **settings):
    settings = {"backends": {"ollama": {"url": j.url}}, **settings}
    return RuleGate.for_sentinel(home, GateSettings.model_validate(settings), Config(), system_rules=None)


BILLING = {"trigger": "file_write", "scope": ["src/billing/**"], "prompt": "FILE {{file_path}} {{content_snippet}}"}


def test_block_warn_info_map_to_layer_results(sentinel_home, judge, tmp_path):
    j = judge({"billing": VIOLATION, "push": {**VIOLATION, "reason": "force push"}})
    home_rules(sentinel_home, {
        "billing": BILLING,
        "push": {"trigger": "bash", "severity": "warn", "scope": ["git push --force*"], "prompt": "CMD {{command}}"},
        "owners": {"trigger": "file_write", "severity": "info", "scope": ["src/**"], "prompt": "Owned by @payments"},
    })
    g = gate(sentinel_home, j)
    ws = tmp_path / "ws"
    d = decide(ctx("write_file", ws, path="src/billing/invoice.py", content="TAX = 1"), [g])
    assert d.outcome == "deny" and d.reason == "gate: touches billing"
    assert {(r.layer, r.outcome, r.rule_id) for r in d.layers} == {("gate", "deny", "billing"),
                                                                   ("gate", "auto", "owners")}
    assert "src/billing/invoice.py" in j.requests[0]["messages"][-1]["content"]
    w = decide(ctx("bash", ws, command="git push --force origin"), [g])
    assert w.outcome == "auto" and w.notes == ["Warning from rule push: force push"]
    e = decide(ctx("edit_file", ws, path="src/app.py", old_string="a", new_string="b"), [g])
    assert e.outcome == "auto" and e.notes == ["Owned by @payments"]


def test_no_rules_or_out_of_scope_means_no_call(sentinel_home, judge, tmp_path):
    j = judge({"": VIOLATION})
    assert gate(sentinel_home, j).check(ctx("write_file", tmp_path, path="src/billing/a.py", content="")) == []
    home_rules(sentinel_home, {"billing": BILLING})
    g = gate(sentinel_home, j)
    assert g.check(ctx("write_file", tmp_path, path="README.md", content="")) == []
    assert g.check(ctx("read_file", tmp_path, path="src/billing/a.py")) == []
    assert g.check(ctx("bash", tmp_path, command="cat src/billing/a.py")) == []
    assert j.requests == []


def test_paths_are_relative_to_the_workspace(sentinel_home, judge, tmp_path):
    j = judge({"": VIOLATION})
    home_rules(sentinel_home, {"billing": BILLING})
    g = gate(sentinel_home, j)
    ws = tmp_path / "ws"
    assert g.check(ctx("write_file", ws, path=str(ws / "src/billing/a.py"), content=""))[0].outcome == "deny"
    assert g.check(ctx("write_file", ws, path="lib/../src/billing/b.py", content=""))[0].outcome == "deny"
    assert g.check(ctx("write_file", ws, path="../outside/src/billing/c.py", content="")) == []


def test_bad_rule_is_skipped_with_note(sentinel_home, judge, tmp_path, capsys):
    j = judge({"": VIOLATION})
    home_rules(sentinel_home, {"billing": BILLING, "broken": "trigger: nope\nprompt: x\n"})
    g = gate(sentinel_home, j)
    assert [r.id for r in g.rules] == ["billing"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken.yaml" in err and "trigger" in err


def test_judge_calls_go_through_config_providers(sentinel_home, judge, tmp_path):
    j = judge({"": VIOLATION})
    home_rules(sentinel_home, {"billing": {**BILLING, "backend": "fake", "model": "m1"}})
    config = Config(providers={"fake": {"base_url": j.base_url, "api_key_env": "FAKE_GATE_KEY"}})
    g = RuleGate.for_sentinel(sentinel_home, config.gate, config, system_rules=None)
    assert g.check(ctx("write_file", tmp_path, path="src/billing/a.py", content=""))[0].outcome == "deny"
    assert j.paths == ["/v1/chat/completions"] and j.requests[0]["model"] == "m1"


def test_injected_judges_seam(sentinel_home, tmp_path):
    home_rules(sentinel_home, {"billing": BILLING})
    seen = []

    class Backend:
        name, gpu = "muzzle", False

        def complete(self, request):
            seen.append(request.model)
            return {"violation": False, "confidence": 1.0, "reason": "ok"}

    class Factory:
        def get(self, name):
            return Backend()

    g = RuleGate.for_sentinel(sentinel_home, GateSettings(), None, judges=Factory(), system_rules=None)
    results = g.check(ctx("write_file", tmp_path, path="src/billing/a.py", content=""))
    assert seen == ["gemma3:4b"] and results[0].outcome == "auto" and "passed: billing" in results[0].reason


def test_system_rules_come_first_and_win(sentinel_home, judge, tmp_path):
    j = judge({"": VIOLATION})
    system = tmp_path / "etc-rules"
    system.mkdir()
    (system / "billing.yaml").write_text(yaml.safe_dump({**BILLING, "severity": "block"}))
    home_rules(sentinel_home, {"billing": {**BILLING, "severity": "info"}})
    g = RuleGate.for_sentinel(sentinel_home, GateSettings(backends={"ollama": {"url": j.url}}), None,
                              system_rules=str(system))
    assert [(r.id, r.severity) for r in g.rules] == [("billing", "block")]
    assert any("already defined" in e for e in g.errors)


def test_unreachable_judge_is_a_warning_naming_rule_and_judge(sentinel_home, tmp_path):
    """Fail-open must not be silent: the skipped block rule is named, with its judge, on the layer's verdict."""
    home_rules(sentinel_home, {"billing": BILLING})
    g = RuleGate.for_sentinel(sentinel_home, GateSettings.model_validate(
        {"backends": {"ollama": {"url": "http://127.0.0.1:9"}}, "timeout_ms": 2000}), Config(), system_rules=None)
    d = decide(ctx("write_file", tmp_path, path="src/billing/invoice.py", content="TAX = 1"), [g])
    assert d.outcome == "auto"  # seed 000: fail open
    (result,) = [r for r in d.layers if r.warnings]
    (warning,) = result.warnings
    assert warning.startswith("rule billing skipped: judge ollama/gemma3:4b failed") and "\n" not in warning
    assert result.to_dict()["warnings"] == (warning,)


def test_ask_pauses_the_run_and_a_scope_rule_calls_no_judge(sentinel_home, judge, tmp_path):
    """In Sentinel's own runs `ask` is the approval the run already knows how to wait for."""
    j = judge({"": VIOLATION})
    home_rules(sentinel_home, {"push": {"kind": "scope", "trigger": "bash", "severity": "ask", "scope": ["git push*"],
                                        "description": "pushing needs a person"},
                               "billing": {**BILLING, "severity": "ask"}})
    g = gate(sentinel_home, j)
    ws = tmp_path / "ws"
    d = decide(ctx("bash", ws, command="git push origin main"), [g])
    assert d.outcome == "needs_approval" and d.reason == "gate: pushing needs a person"
    assert j.requests == []  # the scope decided
    assert decide(ctx("bash", ws, command="git status"), [g]).outcome == "auto"
    b = decide(ctx("write_file", ws, path="src/billing/a.py", content="x"), [g])
    assert b.outcome == "needs_approval" and b.reason == "gate: touches billing" and len(j.requests) == 1
