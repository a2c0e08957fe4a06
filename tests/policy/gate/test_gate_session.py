"""Around the judge: the session accumulator, the scribe and its drafts, telemetry stats."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from sentinel.policy.gate import telemetry
from sentinel.policy.gate.context import accumulate
from sentinel.policy.gate.drafts import DraftStore
from sentinel.policy.gate.judges import Judges
from sentinel.policy.gate.loader import load_repo
from sentinel.policy.gate.scribe import Scribe
from sentinel.policy.gate.transcript import compact, last_user_prompt, read_entries


def entry(role, *blocks, **extra):
    return {"type": role, "message": {"role": role, "content": list(blocks)}, **extra}


TRANSCRIPT = [
    {"type": "user", "message": {"role": "user", "content": "Never edit generated files under gen/; regenerate."}},
    entry("assistant", {"type": "text", "text": "I'll edit gen/api.ts"},
          {"type": "tool_use", "name": "Edit", "input": {"file_path": "gen/api.ts", "old_string": "a" * 900}}),
    entry("user", {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "Refused: generated"}),
    entry("assistant", {"type": "tool_use", "name": "TodoWrite", "input": {"todos": []}}),
    entry("assistant", {"type": "tool_use", "name": "Bash", "input": {"command": "make gen"}}),
    {"type": "user", "isMeta": True, "message": {"role": "user", "content": "<command-name>/clear</command-name>"}},
]


def write_transcript(path, entries):
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return str(path)


def test_compaction_and_last_prompt(tmp_path):
    path = write_transcript(tmp_path / "t.jsonl", TRANSCRIPT)
    entries, nxt = read_entries(path)
    events = compact(entries)
    assert nxt == len(TRANSCRIPT)
    assert events == ["USER: Never edit generated files under gen/; regenerate.", "AGENT: I'll edit gen/api.ts",
                      "TOOL Edit: gen/api.ts", "TOOL ERROR: Refused: generated", "TOOL Bash: make gen"]
    assert last_user_prompt(path) == "Never edit generated files under gen/; regenerate."


def test_accumulator_updates_summary_from_new_events_only(repo, judge, tmp_path):
    j = judge({"": {"summary": "User forbids editing gen/; agent regenerated."}})
    root = repo({}, {"backends": {"ollama": {"url": j.url}}, "context": {"min_events": 3, "model": "ctx-m"}})
    b = load_repo(str(root))
    path = write_transcript(tmp_path / "t.jsonl", TRANSCRIPT[:1])
    assert accumulate(b.config, b.paths, "s1", path, Judges(b.config)) == "waiting" and j.requests == []
    path = write_transcript(tmp_path / "t.jsonl", TRANSCRIPT)
    assert accumulate(b.config, b.paths, "s1", path, Judges(b.config)) == "updated"
    summary = json.loads((root / ".sentinel/sessions/s1/summary.json").read_text())
    assert summary["summary"] == "User forbids editing gen/; agent regenerated." and summary["events"] == 5
    body = j.requests[0]
    assert body["model"] == "ctx-m" and body["format"]["required"] == ["summary"]
    assert "TOOL ERROR: Refused: generated" in body["messages"][-1]["content"]
    assert accumulate(b.config, b.paths, "s1", path, Judges(b.config)) == "waiting"  # checkpoint advanced


def test_accumulator_skips_when_gpu_lock_is_busy(repo, judge, tmp_path):
    import fcntl
    import os

    j = judge({"": {"summary": "x"}})
    root = repo({}, {"backends": {"ollama": {"url": j.url}}, "context": {"lock_timeout_s": 0.1}})
    b = load_repo(str(root))
    lock = b.paths.lock_file("s1")
    os.makedirs(os.path.dirname(lock))
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        path = write_transcript(tmp_path / "t.jsonl", TRANSCRIPT)
        assert accumulate(b.config, b.paths, "s1", path, Judges(b.config)) == "skipped" and j.requests == []
    finally:
        os.close(fd)


GEN_RULE = {"id": "no-generated-edits", "trigger": "file_write", "severity": "warn", "scope": ["gen/**"],
            "exclude": [], "prompt": "FILE: {{file_path}}\nRULE: never hand-edit generated files.\n"
                                     "Respond ONLY with JSON: {\"violation\": true/false, \"confidence\": 0.0-1.0, "
                                     "\"reason\": \"one line\"}"}
CONVENTION = {"statement": "Never edit generated files under gen/", "source": "user_feedback",
              "evidence": "Never edit generated files under gen/; regenerate.", "trigger": "file_write",
              "scope": ["gen/**"], "confidence": 0.9}


def scribe_judge(body):
    schema = body["format"]
    if "conventions" in schema["properties"]:
        return {"conventions": [CONVENTION, {**CONVENTION, "statement": "Weak", "confidence": 0.2}]}
    return {"redundant": False, "reason": "new", "rule": GEN_RULE}


def test_scribe_reflect_drafts_promote_dismiss(repo, judge, tmp_path):
    j = judge(scribe_judge)
    root = repo({}, {"backends": {"ollama": {"url": j.url}}, "scribe": {"guidance": "focus on codegen",
                                                                         "extraction_model": "ex-m"}})
    b = load_repo(str(root))
    path = write_transcript(tmp_path / "t.jsonl", TRANSCRIPT)
    created = Scribe(b.config, b.paths, b.rules, Judges(b.config)).reflect("s1", path)
    assert created == ["no-generated-edits"]
    assert j.requests[0]["model"] == "ex-m" and "focus on codegen" in j.requests[0]["messages"][-1]["content"]
    assert j.requests[0]["options"]["temperature"] == 0.1
    store = DraftStore(b.paths)
    (draft,) = store.list()
    assert (draft["id"], draft["source"], draft["trigger"], draft["scope"]) == (
        "no-generated-edits", "user_feedback", "file_write", ["gen/**"])
    obs = [json.loads(x) for x in (root / ".sentinel/scribe/observations.jsonl").read_text().splitlines()]
    assert [o["statement"] for o in obs] == ["Never edit generated files under gen/"]  # the weak one is dropped
    # the same convention is not proposed twice
    assert Scribe(b.config, b.paths, b.rules, Judges(b.config)).reflect("s2", path) == []
    target = store.promote("no-generated-edits")
    assert yaml.safe_load(Path(target).read_text())["scope"] == ["gen/**"] and store.list() == []
    assert [r.id for r in load_repo(str(root)).rules] == ["no-generated-edits"]
    # a dismissed draft is never re-proposed
    (root / ".claude/sentinel/rules/no-generated-edits.yaml").unlink()
    b = load_repo(str(root))
    assert Scribe(b.config, b.paths, b.rules, Judges(b.config)).reflect("s3", path) == ["no-generated-edits"]
    store.dismiss("no-generated-edits")
    assert store.list() == [] and store.dismissed()[0]["statement"] == CONVENTION["statement"]
    assert Scribe(b.config, b.paths, b.rules, Judges(b.config)).reflect("s4", path) == []


def test_learn_scans_doc_globs(repo, judge):
    j = judge(scribe_judge)
    root = repo({}, {"backends": {"ollama": {"url": j.url}}})
    (root / "CLAUDE.md").write_text("Never edit generated files under gen/.")
    (root / "docs/adr").mkdir(parents=True)
    (root / "docs/adr/1.md").write_text("ADR 1")
    (root / "notes.txt").write_text("ignored")
    b = load_repo(str(root))
    assert Scribe(b.config, b.paths, b.rules, Judges(b.config)).learn(str(root)) == ["no-generated-edits"]
    texts = [r["messages"][-1]["content"] for r in j.requests if "conventions" in r["format"]["properties"]]
    assert any("CLAUDE.md" in t for t in texts) and any("docs/adr/1.md" in t for t in texts)
    assert not any("notes.txt" in t for t in texts)


def test_stats_per_rule():
    lines = [{"rule_id": "a", "elapsed_ms": ms, "violation": v} for ms, v in
             [(10, True), (20, False), (30, False), (40, None), (200, True)]]
    lines[3]["error"] = "timeout"
    (a,) = telemetry.stats(lines)
    assert (a["evaluations"], a["violations"], a["errors"], a["p50_ms"], a["p95_ms"]) == (5, 2, 1, 30.0, 200.0)
    assert telemetry.percentile([10, 20, 30, 40], 50) == 20.0


def test_stats_count_low_confidence_apart_from_violations():
    """A violation below confidence_threshold let the action through: counted apart, not as a violation."""
    lines = [{"rule_id": "a", "elapsed_ms": 5, "violation": True, "confidence": c} for c in (0.95, 0.7, 0.4, 0.2)]
    (a,) = telemetry.stats(lines, threshold=0.7)
    assert (a["violations"], a["low_confidence"]) == (2, 2)
