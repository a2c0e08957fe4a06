"""A path rule is about the file, whatever tool reaches it.

A client's file tools and shells are known by name; any other call (an MCP tool, a client tool the map does
not know) may write, move or delete any file its arguments name: a path rule whose scope holds one of those
names (the built-in own-files rule included) is in scope of the call. The clients' own read and search tools
stay out of it, as do scope-less rules and arguments that name no file in scope. A shell tool's own directory
argument (Gemini's `dir_path`) is where its command runs: writes and the allowlist key are taken from there."""

from __future__ import annotations

import pytest

from sentinel.hooks.ask import keys_of
from test_unreadable_commands import OWN, in_scope

PROTECTED = {"kind": "scope", "trigger": "file_write", "severity": "ask", "scope": ["protected/**"],
             "description": "protected files: a person decides"}
EVERY_WRITE = {"kind": "scope", "trigger": "file_write", "severity": "ask", "description": "every file tool write"}


def mcp_call(agent: str, root: str, tool: str, args: dict) -> dict:
    """`agent`'s call of MCP tool `tool` on server `filesystem`, in its own naming."""
    if agent == "claude-code":
        return {"session_id": "s", "cwd": root, "hook_event_name": "PreToolUse", "tool_name": f"mcp__filesystem__{tool}",
                "mcp_server": {"name": "filesystem"}, "tool_input": args}
    if agent == "gemini-cli":
        return {"session_id": "s", "cwd": root, "hook_event_name": "BeforeTool", "tool_name": f"mcp_filesystem_{tool}",
                "tool_input": args}
    if agent == "copilot-cli":
        return {"cwd": root, "toolName": f"filesystem-{tool}", "toolArgs": args}
    if agent == "amazon-q":
        return {"hook_event_name": "preToolUse", "cwd": root, "tool_name": f"@filesystem/{tool}", "tool_input": args}
    if agent == "cline":
        return {"hookName": "PreToolUse", "taskId": "t", "workspaceRoots": [root],
                "preToolUse": {"toolName": f"filesystem__{tool}", "parameters": args}}
    assert agent == "cursor"
    return {"hook_event_name": "beforeMCPExecution", "conversation_id": "c", "workspace_roots": [root], "cwd": root,
            "tool_name": tool, "command": "npx filesystem-server", "tool_input": args}


SETTINGS = {"claude-code": ".claude/settings.json", "gemini-cli": ".gemini/settings.json",
            "copilot-cli": ".github/hooks/sentinel.json", "amazon-q": ".amazonq/cli-agents/sentinel.json",
            "cline": ".clinerules/hooks/PreToolUse", "cursor": ".cursor/hooks.json"}


@pytest.mark.parametrize("agent", sorted(SETTINGS))
def test_an_mcp_file_tool_reaching_the_clients_hook_settings_asks(repo, home, agent):
    root = repo({})
    target = SETTINGS[agent]
    for tool, args in [("write_file", {"path": f"{root}/{target}", "content": "{}"}),
                       ("write_file", {"path": target, "content": "{}"}),  # relative: from the call's cwd
                       ("move_file", {"source": target, "destination": "elsewhere.json"}),
                       ("edit_file", {"uri": f"file://{root}/{target}", "edits": [{"new": "{}"}]}),
                       ("delete_directory", {"path": target.split("/")[0]})]:  # a directory above it
        ids, acts = in_scope(root, agent, mcp_call(agent, str(root), tool, args))
        assert ids == {OWN}, (agent, tool, args, acts)


@pytest.mark.parametrize("agent", ["claude-code", "gemini-cli", "cursor"])
def test_a_path_rule_holds_an_mcp_write_in_its_scope_and_nothing_else(repo, home, agent):
    root = repo({"protected": PROTECTED, "every-write": EVERY_WRITE})
    (root / "protected").mkdir()
    ids, _ = in_scope(root, agent, mcp_call(agent, str(root), "write_file", {"path": "protected/a.txt", "content": "x"}))
    assert ids == {"protected"}  # the scope-less file-tool rule stays with the file tools
    for args in [{"path": "src/a.txt", "content": "protected/a.txt\nis named in the content only"},
                 {"query": "SELECT * FROM protected"}, {"path": "unprotected/a.txt"}]:
        assert in_scope(root, agent, mcp_call(agent, str(root), "write_file", args))[0] == set(), args


def test_a_link_on_the_way_is_followed_for_a_named_path(repo, home):
    root = repo({"protected": PROTECTED})
    (root / "protected").mkdir()
    (root / "innocent").symlink_to(root / "protected")
    ids, _ = in_scope(root, "claude-code", mcp_call("claude-code", str(root), "write_file",
                                                      {"path": "innocent/a.txt", "content": "x"}))
    assert ids == {"protected"}


def test_an_unknown_client_tool_naming_a_protected_file_asks_and_the_read_tools_do_not(repo, home):
    root = repo({})
    unknown = [("Delete", {"path": ".cursor/hooks.json"}), ("TabWrite", {"file": ".claude/settings.json"}),
               ("new_rule", {"path": ".clinerules/hooks/PreToolUse", "content": "exit 0"})]
    for tool, args in unknown:
        payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": tool,
                   "tool_input": args}
        assert in_scope(root, "claude-code", payload)[0] == {OWN}, tool
    for tool, args in [("Read", {"file_path": ".claude/settings.json"}), ("Grep", {"pattern": "x", "path": ".claude"}),
                       ("Glob", {"pattern": "**/*.json", "path": ".claude"})]:
        payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": tool,
                   "tool_input": args}
        assert in_scope(root, "claude-code", payload)[0] == set(), tool


def test_arguments_too_large_to_read_whole_are_in_scope_of_every_path_rule(repo, home):
    root = repo({"protected": PROTECTED})
    args = {"items": [{"name": f"n{i}"} for i in range(3000)]}
    ids, acts = in_scope(root, "claude-code", mcp_call("claude-code", str(root), "batch", args))
    assert ids == {"protected", OWN} and acts[0].unbounded


def test_a_shell_tools_own_directory_is_where_its_command_runs(repo, home):
    root = repo({})
    (root / ".gemini").mkdir(exist_ok=True)

    def gemini(command: str, **extra: str) -> dict:
        return {"session_id": "s", "cwd": str(root), "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                "tool_input": {"command": command, **extra}}

    assert in_scope(root, "gemini-cli", gemini("echo {} > settings.json", dir_path=".gemini"))[0] == {OWN}
    assert in_scope(root, "gemini-cli", gemini("echo {} > settings.json", directory=".gemini"))[0] == {OWN}
    assert in_scope(root, "gemini-cli", gemini("echo {} > settings.json"))[0] == set()  # the root's own file
    # approved once in one directory, the same line elsewhere is another call
    here = in_scope(root, "gemini-cli", gemini("make deploy", dir_path="app"))[1][0]
    there = in_scope(root, "gemini-cli", gemini("make deploy", dir_path="vendor/other"))[1][0]
    assert keys_of(here, str(root)) != keys_of(there, str(root))
    assert "app" in keys_of(here, str(root))[1]
