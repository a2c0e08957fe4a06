"""A gate that says when it protects nothing: `hook status` asks each judge a real question, a hook whose
judge did not answer tells the agent (in its own format) and `rules stats` counts what went unchecked,
and the quick start's starter config names a judge that runs on the machine."""

from __future__ import annotations

import json

import yaml

from sentinel.hooks.entry import handle

PUSH_RULE = {"trigger": "bash", "severity": "block", "scope": ["git push --force*"],
             "prompt": "COMMAND: {{command}}\nRULE: never force-push."}
CLOSED = "http://127.0.0.1:9"  # nothing listens on the discard port: the judge is unreachable


def push(root, command="git push --force origin main"):
    return json.dumps({"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}})


def configure_judge(root, url, **extra):
    (root / ".claude/sentinel/config.yaml").write_text(yaml.safe_dump({"backends": {"ollama": {"url": url}}, **extra}))


def test_hook_status_fails_while_the_judge_does_not_answer(repo, judge, cli):
    root = repo({"no-force-push": PUSH_RULE}, {"backends": {"ollama": {"url": CLOSED}}})
    cli("hook", "install", "claude-code", "--repo", str(root), check=0)
    configure_judge(root, CLOSED)  # install keeps the existing config
    out = cli("hook", "status", "--repo", str(root), "--judge-timeout", "5", check=1).stdout
    assert "claude-code: GATE INACTIVE" in out and "reachable yes" in out and "judges answer no" in out
    assert "judge ollama/gemma3:4b: NO ANSWER" in out
    step = next(line for line in out.splitlines() if "does not answer" in line)
    assert "no-force-push" in step and "ollama pull gemma3:4b" in step and "backend: local" in step

    j = judge({"never force-push": {"violation": False, "confidence": 0.9, "reason": "fine"}})
    configure_judge(root, j.url)
    out = cli("hook", "status", "--repo", str(root), check=0).stdout
    assert "claude-code: gate active" in out and "judges answer yes" in out
    assert "judge ollama/gemma3:4b: answers" in out and len(j.requests) == 1


def test_a_reachable_server_without_the_model_is_no_judge(repo, judge, cli):
    """Ollama up but the model never pulled: its port answers (the old check said "reachable"), the judge does not."""
    j = judge(status=404)
    root = repo({"no-force-push": PUSH_RULE}, {"backends": {"ollama": {"url": j.url}}})
    cli("hook", "install", "claude-code", "--repo", str(root), check=0)
    data = json.loads(cli("hook", "status", "--repo", str(root), "--json", check=1).stdout)
    assert data["agents"][0]["active"] is False and data["agents"][0]["judges_answer"] is False
    (answer,) = data["gate"]["judges"]
    assert answer["judge"] == "ollama/gemma3:4b" and not answer["answers"] and "404" in answer["problem"]


def test_hook_status_says_a_gate_without_rules_checks_nothing(repo, cli):
    root = repo({})
    cli("hook", "install", "claude-code", "--repo", str(root), check=0)
    out = cli("hook", "status", "--repo", str(root), check=1).stdout
    assert "GATE INACTIVE" in out and "the gate checks nothing" in out


def test_a_skipped_rule_is_told_to_the_agent_and_counted_in_stats(repo, cli):
    root = repo({"no-force-push": PUSH_RULE}, {"backends": {"ollama": {"url": CLOSED}}})
    reply = handle("claude-code", "pre-tool-use", push(root))
    assert reply.code == 0  # fail_open: still not a block
    context = json.loads(reply.stdout)["hookSpecificOutput"]
    assert "permissionDecision" not in context
    assert "Sentinel could not check this call" in context["additionalContext"]
    assert "no-force-push" in context["additionalContext"] and "ollama/gemma3:4b" in context["additionalContext"]
    assert "sentinel: rule no-force-push skipped" in reply.stderr  # and the user sees it

    out = cli("rules", "stats", "--repo", str(root), check=0).stdout
    header, row = out.splitlines()[:2]
    assert "unchecked" in header and row.split() == ["no-force-push", "1", "0", "0", "1", "1", "0", "0"]
    assert "no-force-push: 1 action(s) let through unchecked" in out and "cannot reach" in out
    row = json.loads(cli("rules", "stats", "--repo", str(root), "--json", check=0).stdout)["rules"][0]
    assert (row["unchecked"], row["errors"]) == (1, 1)


def test_every_agent_hears_of_a_skipped_rule_in_its_own_format(repo):
    root = repo({"no-force-push": PUSH_RULE}, {"backends": {"ollama": {"url": CLOSED}}})
    r = str(root)
    cmd = "git push --force origin main"
    payloads = {
        "codex": ("pre-tool-use", {"session_id": "s", "cwd": r, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                                   "tool_input": {"command": cmd}}),
        "copilot-cli": ("preToolUse", {"cwd": r, "toolName": "bash", "toolArgs": {"command": cmd}}),
        "cline": ("PreToolUse", {"hookName": "tool_call", "taskId": "t", "workspaceRoots": [r],
                                 "tool_call": {"id": "1", "name": "run_commands", "input": {"commands": [cmd]}}}),
        "cursor": ("beforeShellExecution", {"hook_event_name": "beforeShellExecution", "conversation_id": "c",
                                            "workspace_roots": [r], "command": cmd, "cwd": r}),
        "amazon-q": ("preToolUse", {"hook_event_name": "preToolUse", "cwd": r, "tool_name": "execute_bash",
                                    "tool_input": {"command": cmd}}),
    }
    for agent, (event, payload) in payloads.items():
        reply = handle(agent, event, json.dumps(payload))
        assert reply.code == 0, agent
        told = reply.stdout + reply.stderr
        assert told.count("Sentinel could not check this call") == 1, (agent, reply)
        if agent in ("codex", "copilot-cli", "cline"):  # agents with a channel to the model: it is in the answer
            assert "Sentinel could not check this call" in reply.stdout, agent
        assert "deny" not in reply.stdout and '"cancel": true' not in reply.stdout, agent


def test_gemini_hears_of_a_skipped_rule_after_the_tool_ran(repo):
    """BeforeTool has no channel to Gemini's model: the notice is handed over by AfterTool, like a warning."""
    root = repo({"no-force-push": PUSH_RULE}, {"backends": {"ollama": {"url": CLOSED}}})
    base = {"session_id": "g", "cwd": str(root), "tool_name": "run_shell_command",
            "tool_input": {"command": "git push --force origin main"}}
    before = handle("gemini-cli", "BeforeTool", json.dumps({**base, "hook_event_name": "BeforeTool"}))
    assert before.code == 0 and "deny" not in before.stdout
    after = handle("gemini-cli", "AfterTool", json.dumps({**base, "hook_event_name": "AfterTool",
                                                          "tool_response": {"output": "pushed"}}))
    assert "Sentinel could not check this call" in json.loads(after.stdout)["hookSpecificOutput"]["additionalContext"]


def test_the_quick_start_judge_is_the_embedded_model(tmp_path, cli):
    """`hook install` writes a starter config whose judge is local/qwen2.5-coder-1.5b, and names it in one line."""
    out = cli("hook", "install", "claude-code", "--repo", str(tmp_path), check=0).stdout
    config = yaml.safe_load((tmp_path / ".claude/sentinel/config.yaml").read_text())
    assert (config["backend"], config["model"]) == ("local", "qwen2.5-coder-1.5b")
    from importlib.util import find_spec

    last = out.strip().splitlines()[-1]
    if find_spec("llama_cpp") is None:
        assert last == "to do: the judge local/qwen2.5-coder-1.5b needs llama.cpp: pip install 'sentinel-harness[local]'"
    else:
        assert last.startswith("judge: local/qwen2.5-coder-1.5b")


def test_a_judge_slower_than_the_probe_is_named_with_what_to_do(judge):
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.probe import answer_judges
    from sentinel.policy.gate.rules import Rule
    from sentinel.policy.settings import GateSettings

    slow = judge(delay_ms=3000)
    cfg = GateConfig(GateSettings.model_validate({"backends": {"ollama": {"url": slow.url}}}).model_dump())
    (answer,) = answer_judges(cfg, [Rule({"id": "a", "prompt": "x"}), Rule({"id": "b", "prompt": "y"})], timeout_s=0.5)
    assert answer.problem == "no answer within 0.5 s" and answer.rules == ["a", "b"]
    assert "--judge-timeout" in answer.step()


def test_sentinel_status_does_not_pass_an_unasked_judge_off_as_checked(repo, cli):
    root = repo({"no-force-push": PUSH_RULE}, {"backends": {"ollama": {"url": CLOSED}}})
    cli("hook", "install", "claude-code", "--repo", str(root), check=0)
    configure_judge(root, CLOSED)
    data = cli.json("status", "--json", check=None, cwd=root)
    (line,) = data["hooks"]
    assert line.startswith("claude-code: hook active;")  # not "gate active": nobody asked the judge
    assert "judges not asked (`sentinel hook status` asks them)" in line
