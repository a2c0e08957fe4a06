"""`sentinel rules ...` commands on a repository and on $SENTINEL_HOME."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from sentinel.cli.app import build
from sentinel.errors import SentinelError

VIOLATION = {"violation": True, "confidence": 0.92, "reason": "billing is protected"}
BILLING = {"trigger": "file_write", "scope": ["src/core/billing/**"], "prompt": "FILE: {{file_path}}"}


@pytest.fixture
def run(monkeypatch):
    app = build()

    def invoke(cwd, *args):
        monkeypatch.chdir(cwd)
        result = CliRunner().invoke(app, list(args))
        if isinstance(result.exception, SentinelError):  # what sentinel.cli.app.run prints and exits with
            return SimpleNamespace(exit_code=result.exception.exit_code, stdout=result.stdout,
                                   stderr=f"error: {result.exception}\n")
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        return result

    return invoke


def test_list_lint_and_errors(repo, run):
    root = repo({"billing": {**BILLING, "unless": [r"\bBILL-[0-9]+\b"]},
                 "bad": {"trigger": "file_write", "severity": "nope", "prompt": "x"}})
    out = run(root / ".claude", "rules", "list", "--json")
    data = json.loads(out.stdout)
    assert [(r["id"], r.get("built_in", False)) for r in data["rules"]] == [("billing", False),
                                                                            ("sentinel-own-files", True)]
    assert "bad.yaml" in data["errors"][0]
    table = run(root, "rules", "list").stdout  # the hook meets the built-in rule too: the list says so
    assert "billing" in table and "sentinel-own-files" in table and "the gate's own files (built in" in table
    assert data["rules"][0]["unless"] == [r"\bBILL-[0-9]+\b"] and data["rules"][0]["when"] == []
    lint = run(root, "rules", "lint")
    assert lint.exit_code == 1 and "severity" in lint.stdout and "1 rule(s) valid, 1 invalid" in lint.stdout
    (root / ".claude/sentinel/rules/bad.yaml").unlink()
    assert run(root, "rules", "lint").exit_code == 0


def test_test_command_and_stats(repo, run, judge, tmp_path):
    j = judge({"billing": VIOLATION})
    root = repo({"billing": BILLING}, {"backends": {"ollama": {"url": j.url}}})
    payload = tmp_path / "p.json"
    payload.write_text(json.dumps({"tool_name": "Write", "cwd": str(root),
                                   "tool_input": {"file_path": str(root / "src/core/billing/x.ts"), "content": "1"}}))
    out = json.loads(run(root, "rules", "test", "billing", "--payload", str(payload), "--json").stdout)
    assert out["in_scope"] and out["verdict"] == "block" and out["findings"][0]["reason"] == "billing is protected"
    dry = json.loads(run(root, "rules", "test", "billing", "--payload", str(payload), "--dry-run", "--json").stdout)
    assert dry["prompt"] == "FILE: src/core/billing/x.ts" and "verdict" not in dry and len(j.requests) == 1
    readme = tmp_path / "r.json"
    readme.write_text(json.dumps({"tool_name": "Write", "tool_input": {"file_path": "README.md", "content": ""}}))
    out = json.loads(run(root, "rules", "test", "billing", "--payload", str(readme), "--json").stdout)
    assert out["in_scope"] is False and len(j.requests) == 1
    stats = json.loads(run(root, "rules", "stats", "--json").stdout)
    assert stats["rules"][0]["rule_id"] == "billing" and stats["rules"][0]["violations"] == 1
    missing = run(root, "rules", "test", "nope", "--payload", str(payload))
    assert missing.exit_code == 2 and "no rule 'nope'" in missing.stderr


def test_drafts_promote_dismiss(repo, run):
    root = repo({})
    drafts = root / ".claude/sentinel/drafts"
    drafts.mkdir()
    (drafts / "no-gen.yaml").write_text("id: no-gen\ntrigger: file_write\nseverity: warn\nscope: [gen/**]\n"
                                        "prompt: x\ndraft: {source: user_feedback, evidence: said so, statement: s}\n")
    (drafts / "other.yaml").write_text("id: other\ntrigger: bash\nprompt: y\ndraft: {source: documentation}\n")
    listed = json.loads(run(root, "rules", "drafts", "--json").stdout)["drafts"]
    assert [(d["id"], d["source"]) for d in listed] == [("no-gen", "user_feedback"), ("other", "documentation")]
    assert run(root, "rules", "promote", "no-gen").exit_code == 0
    assert [r["id"] for r in json.loads(run(root, "rules", "list", "--json").stdout)["rules"]
            if not r.get("built_in")] == ["no-gen"]
    assert run(root, "rules", "dismiss", "other").exit_code == 0
    assert json.loads(run(root, "rules", "drafts", "--json").stdout)["drafts"] == []
    gone = run(root, "rules", "promote", "other")
    assert gone.exit_code == 2 and "no draft 'other'" in gone.stderr


def test_home_rules_when_no_repo(sentinel_home, run, tmp_path):
    (sentinel_home / "rules").mkdir()
    (sentinel_home / "rules/x.yaml").write_text("trigger: bash\nprompt: p\n")
    out = json.loads(run(tmp_path, "rules", "list", "--json").stdout)
    assert [r["id"] for r in out["rules"]] == ["x"] and out["location"] == str(sentinel_home)


def test_bad_repo_config_is_one_line(repo, run):
    root = repo({})
    (root / ".claude/sentinel/config.yaml").write_text("max_parallel: -1\n")
    out = run(root, "rules", "list")
    assert out.exit_code == 2 and "max_parallel" in out.stderr and out.stderr.count("\n") == 1
