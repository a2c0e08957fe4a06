"""`sentinel hook install AGENT` and the Claude Code plugin shipped in the package."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sentinel.errors import UsageError
from sentinel.hooks.agents import AGENTS
from sentinel.hooks.install import install_agent

PLUGIN = Path(__file__).resolve().parents[2] / "sentinel" / "hooks" / "plugin"
FILES = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json",
         "copilot-cli": ".github/hooks/sentinel.json", "cursor": ".cursor/hooks.json",
         "windsurf": ".windsurf/hooks.json", "cline": ".clinerules/hooks/PreToolUse",
         "amazon-q": ".amazonq/cli-agents/sentinel.json", "gemini-cli": ".gemini/settings.json"}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_install_writes_the_agents_config(tmp_path, agent):
    written = install_agent(agent, tmp_path, "/opt/bin/sentinel")
    path = tmp_path / FILES[agent]
    assert str(path) in written
    assert (tmp_path / ".claude/sentinel/config.yaml").exists() and (tmp_path / ".claude/sentinel/rules").is_dir()
    text = path.read_text()
    assert f"/opt/bin/sentinel hook {agent} " in text
    if agent == "cline":
        assert os.access(path, os.X_OK) and text.startswith("#!/bin/sh")
    else:
        json.loads(text)
    install_agent(agent, tmp_path, "/opt/bin/sentinel")
    assert path.read_text().count("sentinel hook") == text.count("sentinel hook")  # idempotent


def test_install_keeps_other_hooks(tmp_path):
    settings = tmp_path / ".claude/settings.json"
    settings.parent.mkdir(parents=True)
    other = {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}
    settings.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [other]}}))
    install_agent("claude-code", tmp_path, "sentinel")
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["hooks"]["PreToolUse"][0] == other
    assert data["hooks"]["PreToolUse"][1]["hooks"][0]["command"] == "sentinel hook claude-code pre-tool-use"
    assert data["hooks"]["Stop"][0]["hooks"][0]["timeout"] == 10


def test_install_errors_are_one_line(tmp_path):
    with pytest.raises(UsageError, match="unknown agent 'vim'"):
        install_agent("vim", tmp_path)
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor/hooks.json").write_text("{broken")
    with pytest.raises(UsageError, match="hooks.json: not valid JSON"):
        install_agent("cursor", tmp_path)


def test_claude_plugin_files():
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "sentinel" and manifest["version"]
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"PreToolUse", "PostToolUse", "Stop"}
    for entries in hooks.values():
        for entry in entries:
            for hook in entry["hooks"]:
                assert hook["command"].startswith("sentinel hook claude-code ")
                assert isinstance(hook["timeout"], int) and 1 <= hook["timeout"] <= 120  # seconds, not ms


def test_cli_install_command(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from sentinel.cli.hook import app

    result = CliRunner().invoke(app, ["install", "gemini-cli", "--repo", str(tmp_path), "--command", "sen"])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / ".gemini/settings.json").read_text())
    assert data["hooks"]["BeforeTool"][0]["hooks"][0] == {"type": "command", "command": "sen hook gemini-cli BeforeTool",
                                                          "timeout": 45000}


def _pre_tool_timeouts_s(agent: str, root) -> list[float]:
    """Every timeout the client's config gives a pre/post tool hook, in seconds."""
    files = {"claude-code": (".claude/settings.json", "PreToolUse", "timeout", 1),
             "codex": (".codex/hooks.json", "PreToolUse", "timeout", 1),
             "gemini-cli": (".gemini/settings.json", "BeforeTool", "timeout", 1000),
             "cursor": (".cursor/hooks.json", "preToolUse", "timeout", 1),
             "copilot-cli": (None, "preToolUse", "timeoutSec", 1),
             "amazon-q": (".amazonq/cli-agents/sentinel.json", "preToolUse", "timeout_ms", 1000)}
    path, event, key, per_s = files[agent]
    if path is None:
        from sentinel.hooks.agents import copilot_cli

        path = copilot_cli.HOOKS_FILE
    data = json.loads((root / path).read_text())["hooks"][event]
    found = []
    for entry in data:
        for hook in entry.get("hooks", [entry]):
            found.append(hook[key] / per_s)
    return found


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini-cli", "cursor", "copilot-cli", "amazon-q"])
@pytest.mark.parametrize("judge_ms", [None, 90000])
def test_the_clients_hook_timeout_is_above_the_judges_deadline(agent, judge_ms, tmp_path):
    """A client that kills the hook before the judge's deadline lets the call through unjudged: the hook
    timeout install writes is the deadline (the repo config's timeout_ms, or the starter's) plus a margin."""
    from sentinel.hooks.install import HOOK_MARGIN_S, JUDGE_DEADLINE_S

    if judge_ms:
        (tmp_path / ".claude" / "sentinel").mkdir(parents=True)
        (tmp_path / ".claude" / "sentinel" / "config.yaml").write_text(f"timeout_ms: {judge_ms}\n")
    install_agent(agent, tmp_path, "sen")
    from sentinel.policy.gate.loader import load_repo

    deadline_s = load_repo(str(tmp_path), use_cache=False).config.timeout_ms / 1000
    assert deadline_s == (judge_ms / 1000 if judge_ms else JUDGE_DEADLINE_S)
    timeouts = _pre_tool_timeouts_s(agent, tmp_path)
    assert timeouts and all(t >= deadline_s + HOOK_MARGIN_S for t in timeouts), (timeouts, deadline_s)


def test_the_plugins_hook_timeout_is_above_the_starter_judges_deadline():
    from sentinel.hooks.install import HOOK_TIMEOUT_S, JUDGE_DEADLINE_S

    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    for event in ("PreToolUse", "PostToolUse"):
        assert hooks[event][0]["hooks"][0]["timeout"] == HOOK_TIMEOUT_S > JUDGE_DEADLINE_S
