"""Judging: one call per rule in scope, in parallel, under a JSON schema; thresholds, fail_open, timeouts,
per-rule backend and model, severities, telemetry."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from sentinel.policy.gate import action as actions
from sentinel.policy.gate.engine import Gate
from sentinel.policy.gate.judges import Judges
from sentinel.policy.gate.loader import load_repo

VIOLATION = {"violation": True, "confidence": 0.92, "reason": "File is in the protected billing directory"}


def billing(**over):
    return {"trigger": "file_write", "severity": "block", "scope": ["src/core/billing/**"],
            "prompt": "FILE: {{file_path}}\nCONTENT: {{content_snippet}}\nRULE: no billing edits", **over}


def gate_for(root):
    bundle = load_repo(str(root))
    assert not bundle.errors and not bundle.config_error, (bundle.errors, bundle.config_error)
    return Gate(bundle.config, bundle.rules, bundle.paths, Judges(bundle.config)), bundle


def write(root, rel, content="export const TAX = 0.2;\n"):
    return actions.file_write("Write", {"file_path": str(root / rel), "content": content}).locate(str(root))


def log_lines(bundle):
    with open(bundle.paths.log_file) as fh:
        return [json.loads(x) for x in fh]


def cfg(j, **extra):
    return {"backends": {"ollama": {"url": j.url}}, **extra}


def test_no_rule_in_scope_makes_no_call(repo, judge):
    j = judge({"": VIOLATION})
    gate, _ = gate_for(repo({"billing": billing()}, cfg(j)))
    verdict = gate.pre(write(Path(gate.paths.root), "README.md"))
    assert verdict.silent and verdict.calls == 0 and j.requests == []


def test_block_with_judge_reason_and_ollama_request_shape(repo, judge):
    j = judge({"billing": VIOLATION})
    root = repo({"billing": billing()}, cfg(j, model="gemma3:12b"))
    gate, bundle = gate_for(root)
    verdict = gate.pre(write(root, "src/core/billing/invoice.ts"))
    assert [(f.rule_id, f.severity, f.reason) for f in verdict.findings] == [
        ("billing", "block", "File is in the protected billing directory")]
    (body,) = j.requests
    assert j.paths == ["/api/chat"]
    assert body["model"] == "gemma3:12b" and body["stream"] is False and body["think"] is False
    assert body["format"]["required"] == ["reason", "violation", "confidence"]
    assert body["format"]["properties"]["violation"]["type"] == "boolean"
    assert body["options"]["temperature"] == 0
    assert "src/core/billing/invoice.ts" in body["messages"][-1]["content"]
    assert "export const TAX" in body["messages"][-1]["content"]


def test_rules_are_judged_in_parallel_up_to_max_parallel(repo, judge):
    j = judge({"": VIOLATION}, delay_ms=400)  # four in a row take 1.6 s: parallel shows at a wide margin
    rules = {f"r{i}": billing(prompt=f"rule {i}: {{{{file_path}}}}") for i in range(4)}
    root = repo(rules, cfg(j, max_parallel=4, ollama_concurrency=4))
    gate, _ = gate_for(root)
    began = time.monotonic()
    verdict = gate.pre(write(root, "src/core/billing/a.ts"))
    elapsed = time.monotonic() - began
    assert len(verdict.blocks) == 4 and len(j.requests) == 4
    assert elapsed < 1.2, elapsed
    root2 = repo(rules, cfg(j, max_parallel=4, ollama_concurrency=1), name="serial")
    gate2, _ = gate_for(root2)
    began = time.monotonic()
    gate2.pre(write(root2, "src/core/billing/a.ts"))
    assert time.monotonic() - began >= 1.55  # ollama_concurrency 1: the GPU serialises


def test_confidence_threshold(repo, judge):
    j = judge({"": {"violation": True, "confidence": 0.6, "reason": "maybe"}})
    root = repo({"billing": billing()}, cfg(j))
    gate, _ = gate_for(root)
    assert gate.pre(write(root, "src/core/billing/a.ts")).silent
    root2 = repo({"billing": billing()}, cfg(j, confidence_threshold=0.5), name="low")
    gate2, _ = gate_for(root2)
    assert len(gate2.pre(write(root2, "src/core/billing/a.ts")).blocks) == 1


@pytest.mark.parametrize("fail_open", [True, False])
def test_judge_errors_fail_open_or_strict(repo, judge, fail_open):
    j = judge({"": VIOLATION}, status=500)
    root = repo({"billing": billing()}, cfg(j, fail_open=fail_open))
    gate, bundle = gate_for(root)
    verdict = gate.pre(write(root, "src/core/billing/a.ts"))
    if fail_open:
        assert verdict.silent and "HTTP 500" in verdict.errors[0]
    else:
        assert len(verdict.blocks) == 1 and "strict mode" in verdict.blocks[0].reason
    (line,) = log_lines(bundle)
    assert line["violation"] is None and "HTTP 500" in line["error"]


def test_unreachable_judge_and_bad_answers_are_errors(repo, judge):
    j = judge({"bad-json": "not json at all", "missing": {"violation": True}})
    root = repo({"a": billing(prompt="bad-json {{file_path}}"), "b": billing(prompt="missing {{file_path}}"),
                 "c": billing(backend="ollama2", prompt="x")},
                {"backends": {"ollama": {"url": j.url}, "ollama2": {"url": "http://127.0.0.1:9/v1"}}})
    gate, _ = gate_for(root)
    verdict = gate.pre(write(root, "src/core/billing/a.ts"))
    assert verdict.silent and len(verdict.errors) == 3
    text = " ".join(verdict.errors)
    assert "non-JSON" in text and "answer has no 'reason'" in text and "ollama2" in text


def test_timeout_ms_bounds_each_call(repo, judge):
    j = judge({"": VIOLATION}, delay_ms=1500)
    root = repo({"billing": billing()}, cfg(j, timeout_ms=200))
    gate, _ = gate_for(root)
    began = time.monotonic()
    verdict = gate.pre(write(root, "src/core/billing/a.ts"))
    assert time.monotonic() - began < 1.2
    assert verdict.silent and "within 0.2s" in verdict.errors[0]


def test_per_rule_backend_and_model_openai_compatible(repo, judge, configure):
    j = judge({"": VIOLATION})
    configure({"gate": {"backends": {"vllm": {"url": j.base_url, "api_key_env": "VLLM_KEY"}}}})
    root = repo({"billing": billing(backend="vllm", model="qwen3-8b")})
    gate, _ = gate_for(root)
    verdict = gate.pre(write(root, "src/core/billing/a.ts"))
    assert len(verdict.blocks) == 1
    (body,) = j.requests
    assert j.paths == ["/v1/chat/completions"]
    assert body["model"] == "qwen3-8b" and body["temperature"] == 0
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["schema"]["additionalProperties"] is False


def test_warn_and_static_info(repo, judge):
    j = judge({"": VIOLATION})
    root = repo({"warned": billing(severity="warn"),
                 "owners": {"trigger": "file_write", "severity": "info", "scope": ["src/core/**"],
                            "prompt": "Owned by Payments ({{file_path}}). Slack #payments-eng"}}, cfg(j))
    gate, _ = gate_for(root)
    verdict = gate.pre(write(root, "src/core/billing/a.ts"))
    assert not verdict.blocks
    assert [f.reason for f in verdict.warnings] == ["File is in the protected billing directory"]
    assert verdict.context_text() == "Owned by Payments (src/core/billing/a.ts). Slack #payments-eng"
    assert len(j.requests) == 1  # the info rule made no call


def test_post_info_synthesis_uses_tool_output_and_session_summary(repo, judge):
    j = judge({"": {"context": "Update CHANGELOG.md and the OpenAPI spec."}})
    root = repo({"migrations": {"trigger": "file_write", "severity": "info", "post": True,
                                "scope": ["**/migrations/**"],
                                "prompt": "DOMAIN: CHANGELOG must be updated.\nOUTPUT: {{tool_output}}\n"
                                          "SESSION: {{session_context}}"}}, cfg(j))
    gate, bundle = gate_for(root)
    sdir = root / ".sentinel/sessions/s1"
    sdir.mkdir(parents=True)
    (sdir / "summary.json").write_text(json.dumps({"summary": "adding a billing column"}))
    act = write(root, "db/migrations/0007.sql")
    assert gate.pre(act, session_id="s1").silent and j.requests == []  # post rules wait for the tool
    act.tool_output = '{"success": true}'
    verdict = gate.post(act, session_id="s1")
    assert verdict.context_text() == "Update CHANGELOG.md and the OpenAPI spec."
    user = j.requests[0]["messages"][-1]["content"]
    assert '{"success": true}' in user and "adding a billing column" in user
    assert j.requests[0]["format"]["required"] == ["context"]


def test_telemetry_has_seed_fields(repo, judge):
    j = judge({"billing": VIOLATION})
    root = repo({"billing": billing()}, cfg(j))
    gate, bundle = gate_for(root)
    gate.pre(write(root, "src/core/billing/invoice.ts"))
    assert bundle.paths.log_file == str(root / ".claude/sentinel/sentinel.log")
    (line,) = log_lines(bundle)
    for key in ("ts", "rule_id", "trigger", "target", "violation", "confidence", "reason", "elapsed_ms", "model",
                "backend"):
        assert key in line, key
    assert (line["rule_id"], line["trigger"], line["target"], line["violation"], line["confidence"],
            line["model"], line["backend"]) == ("billing", "file_write", "src/core/billing/invoice.ts", True, 0.92,
                                                "gemma3:4b", "ollama")
    assert line["ts"].endswith("Z") and isinstance(line["elapsed_ms"], int)


def secrets(**over):
    return {"trigger": "file_write", "severity": "warn", "scope": ["**"], "when": [r"sk_live_[0-9A-Za-z]{10,}"],
            "prompt": "CONTENT: {{content_snippet}}\nRULE: no secret values", **over}


def test_a_when_pattern_sends_only_the_actions_that_hold_it_to_the_judge(repo, judge):
    """`when` is a content test as certain as the scope: a write with no candidate costs no model call, one with a
    candidate is judged, and the judge is shown the text where the candidate is, even past the snippet."""
    j = judge({"": {"violation": True, "confidence": 0.9, "reason": "a live key"}})
    root = repo({"secrets": secrets()}, cfg(j, content_max_chars=200))
    gate, _ = gate_for(root)
    quiet = gate.pre(write(root, "app/settings.py", "API_KEY = os.environ['API_KEY']\n"))
    assert quiet.silent and quiet.calls == 0 and j.requests == []
    padded = "# filler\n" * 500 + "KEY = 'sk_live_51H8eXaMpLeKeY00aBcD'\n"  # far past the 200 characters shown
    found = gate.pre(write(root, "app/stripe.py", padded))
    assert [f.rule_id for f in found.findings] == ["secrets"] and found.calls == 1
    shown = j.requests[0]["messages"][-1]["content"]
    assert "sk_live_51H8eXaMpLeKeY00aBcD" in shown and len(shown) < 600


def test_unless_exempts_and_when_applies_to_commands_and_mcp_arguments(repo, judge):
    j = judge({"": {"violation": True, "confidence": 0.9, "reason": "flagged"}})
    rules = {"billing": billing(unless=[r"\bBILL-[0-9]+\b"]),
             "rm": {"trigger": "bash", "severity": "block", "scope": ["*"], "when": [r"\brm\b"], "prompt": "x"},
             "sql": {"trigger": "mcp", "severity": "block", "scope": ["db:*"], "when": [r"(?i)\bdrop\b"],
                     "prompt": "x"}}
    root = repo(rules, cfg(j))
    gate, _ = gate_for(root)
    assert gate.pre(write(root, "src/core/billing/tax.py", "# BILL-12\nRATE = 0.3\n")).calls == 0
    assert gate.pre(write(root, "src/core/billing/tax.py", "RATE = 0.3\n")).calls == 1
    command = actions.bash("Bash", {"command": "ls -la"}).locate(str(root))
    assert gate.pre(command).calls == 0
    assert gate.pre(actions.bash("Bash", {"command": "rm -rf build"}).locate(str(root))).calls == 1
    select = actions.mcp("mcp__db__query", {"sql": "SELECT 1"}, "db", "query").locate(str(root))
    drop = actions.mcp("mcp__db__query", {"sql": "drop table users"}, "db", "query").locate(str(root))
    assert gate.pre(select).calls == 0 and gate.pre(drop).calls == 1


def test_a_when_that_is_no_regular_expression_is_one_line_naming_file_and_field(repo):
    root = repo({"a": {**billing(), "when": ["(unclosed"]}, "b": billing()})
    bundle = load_repo(str(root))
    assert [r.id for r in bundle.rules] == ["b"]
    (error,) = bundle.errors
    assert "a.yaml" in error and "when" in error and "\n" not in error


@pytest.mark.parametrize(("line", "judged"), [
    ("r''m -rf build", True),                # quotes removed, as the shell runs it
    ("\\rm -rf build", True),
    ("ls; rm -rf build", True),
    ("$(printf rm) -rf build", True),        # a command only its expansion spells: judged
    ("ls -la", False),
    ("echo hello", False),
    ("rm -rf build --dry-run", False),        # the rule's exemption, on the command itself
    ("rm -rf build # --dry-run", True),       # ... never in a comment
    ("rm -rf build; echo --dry-run", True),   # ... nor on another command of the line
])
def test_when_and_unless_read_a_command_as_the_shell_runs_it(repo, judge, line, judged):
    j = judge({"": {"violation": True, "confidence": 0.9, "reason": "flagged"}})
    rules = {"rm": {"trigger": "bash", "severity": "block", "scope": ["*"], "when": [r"\brm\b"],
                    "unless": [r"--dry-run"], "prompt": "x"}}
    root = repo(rules, cfg(j))
    gate, _ = gate_for(root)
    assert gate.pre(actions.bash("Bash", {"command": line}).locate(str(root))).calls == int(judged)


def test_a_scope_rule_with_when_decides_on_content_with_no_judge(repo, judge):
    j = judge({"": {"violation": False, "confidence": 0.9, "reason": "never asked"}})
    rules = {"pem": {"kind": "scope", "trigger": "file_write", "severity": "block", "scope": ["**"],
                     "when": ["-----BEGIN [A-Z ]{0,20}PRIVATE KEY-----"]}}
    root = repo(rules, cfg(j))
    gate, _ = gate_for(root)
    blocked = gate.pre(write(root, "deploy/key.py", "KEY = '''-----BEGIN RSA PRIVATE KEY-----\nMIIE'''\n"))
    assert [f.rule_id for f in blocked.findings] == ["pem"] and blocked.calls == 0
    assert gate.pre(write(root, "deploy/key.py", "KEY = load_key()\n")).silent and j.requests == []


SHIPPED_SQL = Path(__file__).resolve().parents[3] / "policies" / "rules" / "destructive-sql.yaml"


@pytest.mark.parametrize(("sql", "blocked"), [
    ("SELECT * FROM users WHERE id = 7", False),
    ("INSERT INTO audit(event) VALUES ('login')", False),
    ("DELETE FROM sessions WHERE expires_at < now()", False),
    ("update orders set status = 'x' where id = 4", False),
    ("DELETE FROM t WHERE id IN (SELECT id FROM u)", False),
    ("DELETE FROM payments", True),
    ("DELETE FROM payments -- where id = 1", True),                       # a comment is no WHERE
    ("DELETE /* where */ FROM payments", True),
    ("UPDATE accounts SET note = 'where' ", True),                        # nor a literal
    ("UPDATE accounts SET balance = (SELECT 0 FROM x WHERE y)", True),    # nor a subquery's
    ("SELECT 1 WHERE true; DROP TABLE users", True),                      # every statement counts
    ("WITH d AS (DELETE FROM payments RETURNING *) SELECT * FROM d", True),
    ("DO $$ BEGIN DELETE FROM payments; END $$", True),                   # what is not read is not exempted
    ("TRUNCATE orders", True),
    ("ALTER TABLE users DROP COLUMN email", True),
    ("  -- tidy\n  drop table logs", True),
])
def test_the_shipped_sql_rule_reads_each_statement_as_the_database_runs_it(repo, judge, sql, blocked):
    j = judge({"": {"violation": False, "confidence": 0.9, "reason": "never asked"}})
    rule = yaml.safe_load(SHIPPED_SQL.read_text())
    root = repo({"destructive-sql": rule}, cfg(j))
    gate, _ = gate_for(root)
    call = actions.mcp("mcp__postgres-prod__query", {"sql": sql}, "postgres-prod", "query").locate(str(root))
    verdict = gate.pre(call)
    assert bool(verdict.findings) == blocked and verdict.calls == 0 and j.requests == []


def test_sql_too_long_to_read_applies_the_rule_and_other_arguments_are_no_statements(repo, judge):
    from sentinel.policy import sql

    assert sql.statements("SELECT 1" + " " * sql.MAX_CHARS) is None
    assert sql.statements("prod") == [] and sql.statements("-- c\nDROP TABLE x") == ["DROP TABLE x"]
    j = judge({"": {"violation": False, "confidence": 0.9, "reason": "never asked"}})
    root = repo({"destructive-sql": yaml.safe_load(SHIPPED_SQL.read_text())}, cfg(j))
    gate, _ = gate_for(root)
    long = actions.mcp("mcp__postgres-prod__query", {"sql": "SELECT 1" + " " * sql.MAX_CHARS}, "postgres-prod",
                       "query").locate(str(root))
    assert gate.pre(long).findings  # not read, so not exempted
    named = actions.mcp("mcp__postgres-prod__query", {"sql": "SELECT 1", "database": "prod"}, "postgres-prod",
                        "query").locate(str(root))
    assert not gate.pre(named).findings
