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
    # the pre-tool hook waits for a person at most 540 s, under the 600 s timeout the client is given
    assert data["hooks"]["PreToolUse"][1]["hooks"][0]["command"] == "sentinel hook claude-code pre-tool-use --ask-within 540"
    assert data["hooks"]["PreToolUse"][1]["hooks"][0]["timeout"] == 600
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
                assert isinstance(hook["timeout"], int) and 1 <= hook["timeout"] <= 600  # seconds, not ms
    from sentinel.hooks.agents import claude_code

    # the plugin's pre-tool hook gives a person the same window an installed hook does
    assert hooks["PreToolUse"] == claude_code.hook_entries("sentinel hook claude-code")["PreToolUse"]


def test_cli_install_command(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from sentinel.cli.hook import app

    result = CliRunner().invoke(app, ["install", "gemini-cli", "--repo", str(tmp_path), "--command", "sen"])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / ".gemini/settings.json").read_text())
    assert data["hooks"]["BeforeTool"][0]["hooks"][0] == {
        "type": "command", "command": "sen hook gemini-cli BeforeTool --ask-within 540", "timeout": 600000}
    assert "asks: a person has 540 s to decide" in result.output and "timeout is 600 s" in result.output


JSON_CONFIGS = ["amazon-q", "claude-code", "codex", "cursor", "gemini-cli", "windsurf"]


@pytest.mark.parametrize("agent", JSON_CONFIGS)
@pytest.mark.parametrize("hooks, field", [(["not", "an", "object"], "`hooks`"),
                                          ({"SomeEvent": {"not": "a list"}}, "`hooks.SomeEvent`")])
def test_a_hook_config_of_another_shape_is_named_and_left_as_it_is(tmp_path, agent, hooks, field):
    path = tmp_path / FILES[agent]
    path.parent.mkdir(parents=True)
    text = json.dumps({"hooks": hooks, "mine": 1})
    path.write_text(text)
    with pytest.raises(UsageError) as raised:
        install_agent(agent, tmp_path, "sentinel")
    assert str(raised.value) == f"{path}: {field} is not {'a JSON object' if field == '`hooks`' else 'a list'}; " \
                               "fix or remove it"
    assert path.read_text() == text  # nothing rewritten, nothing of the user's lost


@pytest.mark.parametrize("agent", JSON_CONFIGS)
def test_an_event_without_entries_is_one_to_add_to(tmp_path, agent):
    path = tmp_path / FILES[agent]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"hooks": {"SomeEvent": None, "Other": [{"command": "my-linter"}]}}))
    install_agent(agent, tmp_path, "sentinel")
    hooks = json.loads(path.read_text())["hooks"]
    assert hooks["Other"] == [{"command": "my-linter"}] and f"sentinel hook {agent} " in json.dumps(hooks)
