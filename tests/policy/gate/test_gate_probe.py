"""`probe_judges`: one line per configured judge, reachable or the error, with no judge call."""

from __future__ import annotations

from sentinel.policy.gate.config import GateConfig
from sentinel.policy.gate.rules import Rule
from sentinel.policy.settings import GateSettings


def test_each_judge_is_probed_once_reachable_or_named_unreachable(judge):
    from sentinel.policy.gate.probe import probe_judges

    j = judge({"": {"violation": False, "confidence": 1, "reason": "x"}})
    cfg = GateConfig(GateSettings.model_validate({
        "backends": {"ollama": {"url": "http://127.0.0.1:9"}, "gpt": {"url": j.base_url, "model": "m"},
                     "claude": {"command": "no-such-claude-binary"}}}).model_dump())
    rules = [Rule({"id": "a", "backend": "gpt"}), Rule({"id": "b", "backend": "claude"}), Rule({"id": "c"})]
    lines = probe_judges(cfg, rules, timeout_s=1)
    assert len(lines) == 3 and all("\n" not in line for line in lines)
    by = {line.split(": ")[0]: line for line in lines}
    assert "reachable" in by["judge gpt/m"] and "UNREACHABLE" not in by["judge gpt/m"]
    assert "UNREACHABLE" in by["judge ollama/gemma3:4b"] and "127.0.0.1:9" in by["judge ollama/gemma3:4b"]
    assert "NOT FOUND" in by["judge claude/haiku"]
    assert j.requests == []  # a probe judges nothing


def test_status_shows_judges(cli, configure, sentinel_home):
    configure({"gate": {"backends": {"ollama": {"url": "http://127.0.0.1:9"}}}})
    (sentinel_home / "rules").mkdir()
    (sentinel_home / "rules" / "r.yaml").write_text("trigger: bash\nprompt: x\n")
    data = cli.json("status", "--json", check=0)
    assert data["judges"][0].startswith("judge ollama/gemma3:4b: UNREACHABLE")
