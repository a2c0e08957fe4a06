"""Rule files: fields, defaults, one-line errors, a bad rule never disables the others, the JSON cache."""

from __future__ import annotations

import os
import subprocess
import sys

from sentinel.policy.gate import loader
from sentinel.policy.gate.loader import load_repo

GOOD = {"trigger": "file_write", "severity": "block", "scope": ["src/**"], "prompt": "FILE: {{file_path}}"}


def test_id_defaults_to_file_stem_and_fields_load(repo):
    root = repo({"billing-protection": {**GOOD, "exclude": "**/*.test.ts", "backend": "claude", "model": "sonnet"}})
    (rule,) = load_repo(str(root)).rules
    assert rule.id == "billing-protection"
    assert (rule.trigger, rule.severity, rule.scope, rule.exclude) == ("file_write", "block", ["src/**"],
                                                                       ["**/*.test.ts"])
    assert (rule.backend, rule.model, rule.post, rule.kind) == ("claude", "sonnet", False, "judge")


def test_bad_rule_is_skipped_with_one_line_error_others_load(repo):
    root = repo({"a-good": GOOD, "b-bad": {**GOOD, "severity": "fatal"}, "c-good": {**GOOD, "trigger": "bash"},
                 "d-noprompt": {"trigger": "bash"}, "e-list": "- 1\n- 2\n", "f-yaml": "id: [\n"})
    bundle = load_repo(str(root))
    assert [r.id for r in bundle.rules] == ["a-good", "c-good"]
    assert len(bundle.errors) == 4
    assert all("\n" not in e for e in bundle.errors)
    by_file = {os.path.basename(e.split(":")[0]): e for e in bundle.errors}
    assert "severity" in by_file["b-bad.yaml"]
    assert "prompt" in by_file["d-noprompt.yaml"]
    assert "one rule" in by_file["e-list.yaml"]
    assert "invalid YAML" in by_file["f-yaml.yaml"]


def test_post_only_for_info_and_duplicate_ids(repo):
    root = repo({"a": {**GOOD, "post": True}, "b": {**GOOD, "id": "same"}, "c": {**GOOD, "id": "same"}})
    bundle = load_repo(str(root))
    assert [r.id for r in bundle.rules] == ["same"]
    assert any("post" in e and "a.yaml" in e for e in bundle.errors)
    assert any("already defined" in e and "c.yaml" in e for e in bundle.errors)


def test_unknown_template_variable_is_a_warning(repo):
    root = repo({"a": {**GOOD, "prompt": "{{file_path}} {{filepath}}"}})
    bundle = load_repo(str(root))
    assert len(bundle.rules) == 1 and any("{{filepath}}" in w for w in bundle.warnings)


def test_cache_is_used_and_invalidated_by_edits(repo, monkeypatch):
    root = repo({"a": GOOD})
    assert [r.id for r in load_repo(str(root)).rules] == ["a"]
    calls = []
    real = loader.compile_repo
    monkeypatch.setattr(loader, "compile_repo", lambda r: calls.append(r) or real(r))
    load_repo(str(root))
    assert calls == []  # warm cache
    (root / ".claude/sentinel/rules/b.yaml").write_text("trigger: bash\nprompt: x\n")
    assert sorted(r.id for r in load_repo(str(root)).rules) == ["a", "b"]
    assert len(calls) == 1
    (root / ".claude/sentinel/rules/a.yaml").write_text("trigger: bash\nseverity: warn\nprompt: changed\n")
    assert {r.id: r.severity for r in load_repo(str(root)).rules}["a"] == "warn"


def test_rules_dir_is_relative_to_config_dir(repo):
    root = repo({}, config={"rules_dir": "policies"})
    other = root / ".claude/sentinel/policies"
    other.mkdir()
    (other / "x.yaml").write_text("trigger: bash\nprompt: p\n")
    assert [r.id for r in load_repo(str(root)).rules] == ["x"]


def test_warm_cache_load_imports_no_yaml_pydantic_or_wcmatch(repo):
    root = repo({"a": GOOD})
    load_repo(str(root))
    code = ("import sys; from sentinel.policy.gate.loader import load_repo; b = load_repo(sys.argv[1]); "
            "assert [r.id for r in b.rules] == ['a']; "
            "print(sorted(m for m in ('yaml', 'pydantic', 'wcmatch', 'typer', 'rich', 'openai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_shipped_example_rules_are_valid():
    from pathlib import Path

    examples = Path(__file__).resolve().parents[3] / "policies" / "rules"
    rules, errors, warnings = loader.compile_rules([str(examples)])
    assert errors == [] and warnings == []
    assert {"billing-protection", "no-force-push", "payments-ownership", "migration-awareness",
            "alignment"} <= {r["id"] for r in rules}


def test_scope_rules_need_no_prompt_but_a_trigger_and_a_scope(repo):
    """`kind: scope` decides by scope alone (no judge): it must say which calls, and it has no `info`."""
    push = {"kind": "scope", "trigger": "bash", "severity": "ask", "scope": ["git push*"]}
    root = repo({"a-push": push, "b-noscope": {**push, "scope": []}, "c-any": {**push, "trigger": "any"},
                 "d-info": {**push, "severity": "info"}, "e-judged-ask": {**GOOD, "severity": "ask"}})
    bundle = load_repo(str(root))
    assert [r.id for r in bundle.rules] == ["a-push", "e-judged-ask"]
    by_file = {os.path.basename(e.split(":")[0]): e for e in bundle.errors}
    assert "needs a trigger" in by_file["b-noscope.yaml"] and "needs a trigger" in by_file["c-any.yaml"]
    assert "block, warn or ask" in by_file["d-info.yaml"]
    assert [r.judged for r in bundle.rules] == [False, True]
