"""A call in no repository still meets the built-in rule on the gate's own files.

A client's user-level hook fires everywhere, and a session may run outside any repository (Claude Code started in
$HOME, Windsurf writing `~/.codeium/windsurf/hooks.json` with no `cwd`). The hook used to answer nothing when it found
no `.claude/sentinel/`, so an agent could rewrite the user-level hook settings, the clients' trust, or Sentinel's home
unasked. Now such a call is judged by that rule alone, relative paths taken from where the call runs; anything else
outside a repository passes as before, and cheaply (no pydantic, no engine)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from test_hook_protocols import block_reason

from sentinel.hooks import entry

OWN = "[sentinel-own-files]"


@pytest.fixture
def elsewhere(tmp_path, home, monkeypatch):
    """A directory in no repository, the hook's own working directory; asks are denied at once (nobody decides)."""
    made = tmp_path / "elsewhere"
    made.mkdir()
    monkeypatch.chdir(made)
    monkeypatch.setattr(entry, "ASK_ARGS", ["--ask-within", "0"])
    return made


def writes(agent: str, cwd: str, path: str) -> tuple[str, dict]:
    """(event, payload): `agent`'s own file tool writing `path`, the session in `cwd`."""
    if agent in ("claude-code", "gemini-cli"):
        tool = "Write" if agent == "claude-code" else "write_file"
        return ("pre-tool-use" if agent == "claude-code" else "BeforeTool",
                {"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": tool,
                 "tool_input": {"file_path": path, "content": '{"hooks": {}}'}})
    if agent == "codex":
        patch = f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch\n"
        return "pre-tool-use", {"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse",
                                "tool_name": "apply_patch", "tool_input": {"command": patch}}
    if agent == "cursor":
        return "preToolUse", {"hook_event_name": "preToolUse", "conversation_id": "c", "workspace_roots": [cwd],
                              "tool_name": "Write", "tool_input": {"file_path": path, "content": "{}"}}
    if agent == "windsurf":  # no cwd: Windsurf's pre_write_code sends the file only
        return "pre_write_code", {"agent_action_name": "pre_write_code", "trajectory_id": "t",
                                  "tool_info": {"file_path": path, "edits": [{"old_string": "a", "new_string": "b"}]}}
    if agent == "cline":
        return "PreToolUse", {"hookName": "tool_call", "taskId": "t", "workspaceRoots": [cwd],
                              "tool_call": {"id": "1", "name": "editor", "input": {"path": path, "new_text": "x"}}}
    if agent == "copilot-cli":
        return "preToolUse", {"sessionId": "s", "cwd": cwd, "toolName": "create",
                              "toolArgs": {"path": path, "file_text": "{}"}}
    assert agent == "amazon-q"
    return "preToolUse", {"hook_event_name": "preToolUse", "cwd": cwd, "tool_name": "fs_write",
                          "tool_input": {"command": "create", "path": path, "file_text": "{}"}}


# each client's user-level hook settings (or the trust that loads a repository's hooks), in $HOME
USER_LEVEL = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json",
              "gemini-cli": ".gemini/settings.json", "cursor": ".cursor/hooks.json",
              "windsurf": ".codeium/windsurf/hooks.json", "cline": ".cline/hooks/PreToolUse",
              "copilot-cli": ".copilot/config.json", "amazon-q": ".aws/amazonq/cli-agents/default.json"}


def hook(agent: str, event: str, payload: dict) -> entry.common.Reply:
    return entry.handle(agent, event, json.dumps(payload))


@pytest.mark.parametrize("agent", sorted(USER_LEVEL))
def test_user_level_hook_settings_are_held_outside_any_repository(elsewhere, home, agent):
    reply = hook(agent, *writes(agent, str(elsewhere), str(home / USER_LEVEL[agent])))
    assert OWN in (block_reason(agent, reply) or ""), reply
    ordinary = hook(agent, *writes(agent, str(elsewhere), str(elsewhere / "notes.txt")))
    assert (ordinary.code, ordinary.stdout, block_reason(agent, ordinary)) == (0, "", None)


def test_a_session_started_in_home_cannot_rewrite_its_settings(elsewhere, home, sentinel_home):
    """Claude Code started in $HOME: relative paths, a shell line, Sentinel's own home."""
    def claude(tool, args, cwd=home):
        return hook("claude-code", "pre-tool-use", {"session_id": "s", "cwd": str(cwd), "tool_name": tool,
                                                    "tool_input": args})

    held = [claude("Write", {"file_path": ".claude/settings.json", "content": '{"disableAllHooks": true}'}),
            claude("Write", {"file_path": "settings.local.json", "content": "{}"}, cwd=home / ".claude"),
            claude("Bash", {"command": "echo '{}' > .gemini/trustedFolders.json"}),
            claude("Bash", {"command": "rm -rf .codex"}),
            claude("Bash", {"command": "rm -rf ~/.sentinel"}),  # where `~` leads is the shell's: held
            claude("Edit", {"file_path": str(sentinel_home / "config.yaml"), "old_string": "a", "new_string": "b"})]
    for reply in held:
        assert OWN in block_reason("claude-code", reply), reply
    passed = [claude("Write", {"file_path": "settings.json", "content": "{}"}, cwd=elsewhere),  # elsewhere's own
              claude("Bash", {"command": "npm test"}), claude("Bash", {"command": "ls -la && git status"}),
              claude("Bash", {"command": "cat .claude/settings.json"})]
    for reply in passed:
        assert (reply.code, reply.stdout, reply.stderr) == (0, "", ""), reply


def test_windsurf_without_cwd_takes_relative_paths_from_where_the_hook_runs(elsewhere, home, monkeypatch):
    monkeypatch.chdir(home)
    (home / ".codeium" / "windsurf").mkdir(parents=True)
    event, payload = writes("windsurf", "", ".codeium/windsurf/hooks.json")
    assert OWN in block_reason("windsurf", hook("windsurf", event, payload))
    monkeypatch.chdir(elsewhere)
    assert hook("windsurf", event, payload).code == 0


def test_a_call_running_inside_a_protected_place_is_held_for_every_write_there(elsewhere, home):
    """The call's directory lies inside the clients' settings (`~/.codex/`): every relative write lands in them."""
    inside = home / ".codex" / "rules"
    inside.mkdir(parents=True)
    for tool, args in (("Write", {"file_path": "default.rules", "content": "x"}),
                       ("Bash", {"command": "echo x > default.rules"})):
        reply = hook("claude-code", "pre-tool-use", {"session_id": "s", "cwd": str(inside), "tool_name": tool,
                                                     "tool_input": args})
        assert OWN in block_reason("claude-code", reply), reply


def test_a_repository_holding_the_home_names_its_places_as_its_own(repo, home, tmp_path, monkeypatch):
    """A repository of dotfiles at $HOME's parent: a write inside it is named relative to it, and so is the home."""
    root = repo({}, name=".")
    monkeypatch.setattr(entry, "ASK_ARGS", ["--ask-within", "0"])
    for path in (".gemini/trustedFolders.json", ".claude.json", "Documents/Cline/Hooks/PreToolUse"):
        event, payload = writes("claude-code", str(root), str(home / path))
        assert OWN in block_reason("claude-code", hook("claude-code", event, payload)), path
    event, payload = writes("claude-code", str(root), str(home / "notes.txt"))
    assert hook("claude-code", event, payload).stdout == ""


@pytest.mark.parametrize("event", ["post-tool-use", "stop"])
def test_after_the_tool_ran_no_repository_means_no_gate(elsewhere, home, event):
    _, payload = writes("claude-code", str(home), str(home / ".claude" / "settings.json"))
    reply = hook("claude-code", event, {**payload, "tool_response": {"success": True}})
    assert (reply.code, reply.stdout, reply.stderr) == (0, "", "")


def test_nothing_protected_outside_a_repository_stays_cheap(elsewhere, home):
    """The common path of a user-level hook: no pydantic (the defaults are cached in Sentinel's home), no engine,
    no `typing`; the first call writes that cache."""
    from sentinel.hooks.install import hook_command

    argv = hook_command().split()
    argv[1:1] = ["-X", "importtime"]
    env = {k: v for k, v in os.environ.items() if k != "SENTINEL_GATE_JUDGE"}
    for tool, args in (("Bash", {"command": "npm test"}), ("Write", {"file_path": "notes.txt", "content": "x"}),
                       ("Bash", {"command": "npm test"})):
        payload = {"session_id": "s", "cwd": str(elsewhere), "tool_name": tool, "tool_input": args}
        proc = subprocess.run(argv + ["hook", "claude-code", "pre-tool-use"], input=json.dumps(payload),
                              capture_output=True, text=True, timeout=60, env=env, cwd=elsewhere)
        imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                    if line.startswith("import time:")}
        assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr
        assert "sentinel.policy.gate.loader" in imported  # the probe saw the hook's own imports
    assert {"pydantic", "yaml", "typing", "sentinel.policy.gate.engine", "bashlex"} & imported == set()
    assert os.listdir(elsewhere) == []  # nothing written where the call runs: it is no repository
    assert os.path.exists(os.path.join(os.environ["SENTINEL_HOME"], "gate", "cache", "defaults.json"))


def test_the_default_config_cache_is_checked_not_trusted(elsewhere, home, sentinel_home):
    """A cache of another version (or unreadable) is rebuilt, so a stale one never changes how a call is read."""
    from sentinel.policy.gate import loader

    loader.load_bare(str(elsewhere))
    cache = sentinel_home / "gate" / "cache" / "defaults.json"
    data = json.loads(cache.read_text())
    cache.write_text(json.dumps({**data, "stamp": ["old"], "config": {**data["config"], "tool_map": {}}}))
    assert loader.load_bare(str(elsewhere)).config.tool_map["Write"] == "file_write"
    cache.write_text("{")
    assert loader.load_bare(str(elsewhere)).config.tool_map["Write"] == "file_write"
    assert json.loads(cache.read_text())["stamp"] == data["stamp"]
