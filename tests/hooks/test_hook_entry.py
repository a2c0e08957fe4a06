"""The hook entry point: fail_open on malformed input, strict mode, the re-entry guard, config errors,
post-tool-use synthesis, Stop (accumulator inline) and alignment from the transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


from sentinel.hooks.entry import handle, main

VIOLATION = {"violation": True, "confidence": 0.9, "reason": "protected"}
BILLING = {"trigger": "file_write", "scope": ["src/**"], "prompt": "FILE {{file_path}}"}


def write_payload(root, rel="src/a.ts", **extra):
    return json.dumps({"session_id": "s1", "cwd": str(root), "tool_name": "Write",
                       "tool_input": {"file_path": str(root / rel), "content": "x"}, **extra})


def test_malformed_payload_fails_open_with_one_line_note(repo, judge, monkeypatch):
    j = judge({"": VIOLATION})
    root = repo({"b": BILLING}, {"backends": {"ollama": {"url": j.url}}})
    monkeypatch.chdir(root)
    for raw in ("{not json", "[1, 2]", ""):
        reply = handle("claude-code", "pre-tool-use", raw)
        assert (reply.code, reply.stdout) == (0, "")
        assert reply.stderr.count("\n") == 1 and "allowed (fail_open)" in reply.stderr
    reply = handle("claude-code", "pre-tool-use", json.dumps({"cwd": str(root), "tool_input": {}}))
    assert reply.code == 0 and "no tool_name" in reply.stderr and j.requests == []


def test_strict_mode_blocks_malformed_payload(repo, judge, monkeypatch):
    root = repo({"b": BILLING}, {"fail_open": False})
    monkeypatch.chdir(root)
    reply = handle("claude-code", "pre-tool-use", "{oops")
    out = json.loads(reply.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "strict mode" in out["permissionDecisionReason"]
    reply = handle("windsurf", "pre_write_code", json.dumps({"agent_action_name": "pre_write_code"}))
    assert reply.code == 2 and "no tool_info" in reply.stderr and "strict mode" in reply.stderr


def test_usage_errors_never_exit_2(capsys):
    assert main(["claude-code"]) == 1
    reply = handle("vim", "pre-tool-use", "{}")
    assert reply.code == 1 and "unknown agent 'vim'" in reply.stderr
    reply = handle("claude-code", "launch", "{}")
    assert reply.code == 1 and "unknown event 'launch'" in reply.stderr


def test_no_sentinel_dir_means_silent_pass(tmp_path):
    reply = handle("claude-code", "pre-tool-use", write_payload(tmp_path))
    assert (reply.stdout, reply.stderr, reply.code) == ("", "", 0)


def test_bad_rule_noted_others_still_enforced(repo, judge):
    j = judge({"": VIOLATION})
    root = repo({"b": BILLING, "broken": "trigger: file_write\nscope: 3\nprompt: x\n"},
                {"backends": {"ollama": {"url": j.url}}})
    reply = handle("claude-code", "pre-tool-use", write_payload(root))
    assert json.loads(reply.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert reply.stderr.startswith("sentinel: skipped rule: ") and "broken.yaml" in reply.stderr


def test_bad_config_fails_open_or_strict(repo, judge):
    root = repo({"b": BILLING})
    (root / ".claude/sentinel/config.yaml").write_text("timeout_ms: never\n")
    reply = handle("claude-code", "pre-tool-use", write_payload(root))
    assert reply.code == 0 and reply.stdout == "" and "timeout_ms" in reply.stderr and "gate off" in reply.stderr
    (root / ".claude/sentinel/config.yaml").write_text("timeout_ms: never\nfail_open: false\n")
    reply = handle("claude-code", "pre-tool-use", write_payload(root))
    assert "timeout_ms" in json.loads(reply.stdout)["hookSpecificOutput"]["permissionDecisionReason"]


def test_judge_guard_passes_through(repo, judge):
    j = judge({"": VIOLATION})
    root = repo({"b": BILLING}, {"backends": {"ollama": {"url": j.url}}})
    script = Path(sys.executable).with_name("sentinel")
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "sentinel"]
    proc = subprocess.run(argv + ["hook", "claude-code", "pre-tool-use"], input=write_payload(root),
                          capture_output=True, text=True, env={**os.environ, "SENTINEL_GATE_JUDGE": "1"}, timeout=30)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "") and j.requests == []


def test_judge_unreachable_fails_open_with_note(repo):
    """Not blocked, and not silent: the agent's model and the user both learn the call went unchecked."""
    root = repo({"b": BILLING}, {"backends": {"ollama": {"url": "http://127.0.0.1:9"}}})
    reply = handle("claude-code", "pre-tool-use", write_payload(root))
    told = json.loads(reply.stdout)["hookSpecificOutput"]
    assert reply.code == 0 and "permissionDecision" not in told and "cannot reach" in reply.stderr
    assert told["additionalContext"].startswith("Sentinel could not check this call") and "rule b" in told["additionalContext"]


def test_post_tool_use_synthesis_for_claude_code(repo, judge):
    j = judge({"": {"context": "Remember the CHANGELOG."}})
    root = repo({"mig": {"trigger": "file_write", "severity": "info", "post": True, "scope": ["db/migrations/**"],
                         "prompt": "OUT {{tool_output}}"}}, {"backends": {"ollama": {"url": j.url}}})
    payload = write_payload(root, "db/migrations/1.sql", hook_event_name="PostToolUse",
                            tool_response={"success": True})
    reply = handle("claude-code", "post-tool-use", payload)
    assert json.loads(reply.stdout) == {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                                               "additionalContext": "Remember the CHANGELOG."}}
    assert '"success": true' in j.requests[0]["messages"][-1]["content"]
    assert handle("claude-code", "pre-tool-use", payload).stdout == ""  # post rules do not run before the tool


def transcript(tmp_path, prompt):
    lines = [{"type": "user", "message": {"role": "user", "content": prompt}},
             {"type": "assistant", "message": {"role": "assistant", "content": [
                 {"type": "text", "text": "working"}, {"type": "tool_use", "name": "Write",
                                                       "input": {"file_path": "src/a.ts"}}]}}]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def test_stop_runs_accumulator_and_announces_drafts(repo, judge, tmp_path, monkeypatch):
    monkeypatch.setenv("SENTINEL_GATE_SYNC", "1")
    j = judge(lambda body: {"summary": "agent edits src"} if "summary" in body["format"]["properties"]
              else {"conventions": []})
    root = repo({}, {"backends": {"ollama": {"url": j.url}}, "context": {"min_events": 2}})
    drafts = root / ".claude/sentinel/drafts"
    drafts.mkdir()
    (drafts / "d1.yaml").write_text("id: d1\ntrigger: bash\nprompt: x\ndraft: {source: user_feedback}\n")
    stop = json.dumps({"session_id": "s9", "cwd": str(root), "hook_event_name": "Stop",
                       "transcript_path": transcript(tmp_path, "please fix src")})
    reply = handle("claude-code", "stop", stop)
    assert reply.code == 0 and "d1" in json.loads(reply.stdout)["systemMessage"]
    summary = json.loads((root / ".sentinel/sessions/s9/summary.json").read_text())
    assert summary["summary"] == "agent edits src"
    assert handle("claude-code", "stop", stop).stdout == ""  # announced once


def test_alignment_rule_uses_the_transcript_request(repo, judge, tmp_path):
    j = judge(lambda body: {"decision": "reject", "reason": "user only asked to read"})
    root = repo({"align": {"kind": "alignment", "trigger": "bash"}}, {"backends": {"ollama": {"url": j.url}}})
    payload = json.dumps({"cwd": str(root), "tool_name": "Bash", "tool_input": {"command": "rm -rf build"},
                          "transcript_path": transcript(tmp_path, "just show me the build log")})
    reply = handle("claude-code", "pre-tool-use", payload)
    assert "user only asked to read" in json.loads(reply.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "ORIGINAL REQUEST: just show me the build log" in j.requests[0]["messages"][-1]["content"]
    no_transcript = json.dumps({"cwd": str(root), "tool_name": "Bash", "tool_input": {"command": "rm -rf build"}})
    assert handle("claude-code", "pre-tool-use", no_transcript).stdout == "" and len(j.requests) == 1


def test_the_stop_worker_never_imports_the_repository(tmp_path, monkeypatch):
    """`python -m sentinel.hooks.background` from the agent's repository would import a `sentinel/` the agent
    wrote there: the worker starts from / with -P, and PYTHONPATH is this package's parent only."""
    from sentinel.hooks.background import spawn

    repo, marker = tmp_path / "repo", tmp_path / "SHADOW-RAN"
    (repo / "sentinel" / "hooks").mkdir(parents=True)
    for init in (repo / "sentinel" / "__init__.py", repo / "sentinel" / "hooks" / "__init__.py"):
        init.write_text(f"open({str(marker)!r}, 'w')\n")
    (repo / "sentinel" / "hooks" / "background.py").write_text(f"open({str(marker)!r}, 'w')\n")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PYTHONPATH", str(repo))
    proc = spawn(str(repo), "s1", str(tmp_path / "no-transcript.jsonl"))
    proc.wait(timeout=120)
    assert not marker.exists()
