"""Each agent driven with payloads shaped as its client really sends them (observed from the real CLIs
where they can be installed, documented otherwise): one per event and tool family (shell, write, edit
or patch, MCP). The compatibility scenario's rules judge them; each answer must block, allow or warn
in that agent's own format, and no judge call is made for what no rule covers."""

from __future__ import annotations

import json

import pytest

from sentinel.hooks.compat.scenario import RULES, VERDICTS, WARNING
from sentinel.hooks.entry import handle
from sentinel.policy.gate.fakejudge import by_substring

PATCH_ADD = "*** Begin Patch\n*** Add File: protected/new.txt\n+hello\n*** End Patch\n"
PATCH_UPDATE = "*** Begin Patch\n*** Update File: notes.md\n@@\n-a\n+b\n*** Update File: protected/keep.txt\n@@\n-keep\n+gone\n*** End Patch\n"


def claude(r, name, tool_input, **extra):
    return ("pre-tool-use", {"session_id": "s1", "transcript_path": f"{r}/t.jsonl", "cwd": r, "permission_mode": "default",
                             "hook_event_name": "PreToolUse", "tool_name": name, "tool_input": tool_input,
                             "tool_use_id": "toolu_1", "prompt_id": "p1", "effort": {"level": "medium"}, **extra})


def codex(r, name, tool_input):
    return ("pre-tool-use", {"session_id": "s1", "turn_id": "t1", "transcript_path": None, "cwd": r,
                             "hook_event_name": "PreToolUse", "model": "gpt-5", "permission_mode": "default",
                             "tool_name": name, "tool_input": tool_input, "tool_use_id": "call_1"})


def gemini(r, name, tool_input, **extra):
    return ("BeforeTool", {"session_id": "s1", "transcript_path": f"{r}/chat.json", "cwd": r,
                           "hook_event_name": "BeforeTool", "timestamp": "2026-11-23T10:00:00Z", "tool_name": name,
                           "tool_input": tool_input, **extra})


def cline(r, name, tool_input):
    legacy = {k: v if isinstance(v, str) else json.dumps(v) for k, v in tool_input.items()}
    return ("PreToolUse", {"clineVersion": "3.0.65", "hookName": "tool_call", "timestamp": "2026-11-23T10:00:00Z",
                           "taskId": "task1", "workspaceRoots": [r], "userId": "u", "agent_id": "agent_1",
                           "iteration": 1, "tool_call": {"id": "call_1", "name": name, "input": tool_input},
                           "preToolUse": {"toolName": name, "parameters": legacy}})


def copilot(r, name, tool_args):
    return ("preToolUse", {"sessionId": "s1", "timestamp": 1795000000000, "cwd": r, "toolName": name,
                           "toolArgs": tool_args})


def cursor(r, event, **fields):
    return (event, {"hook_event_name": event, "conversation_id": "c1", "generation_id": "g1",
                    "workspace_roots": [r], **fields})


def windsurf(r, event, info):
    return (event, {"agent_action_name": event, "trajectory_id": "t1", "execution_id": "e1", "tool_info": info})


def amazon_q(r, name, tool_input):
    return ("preToolUse", {"hook_event_name": "preToolUse", "cwd": r, "tool_name": name, "tool_input": tool_input})


def cases(r):
    """agent -> family -> (event, payload) that a block rule must stop."""
    return {
        "claude-code": {
            "shell": claude(r, "Bash", {"command": "rm -f canary.txt", "description": "delete"}),
            "write": claude(r, "Write", {"file_path": f"{r}/protected/new.txt", "content": "x"}),
            "edit": claude(r, "Edit", {"file_path": f"{r}/protected/keep.txt", "old_string": "keep",
                                       "new_string": "gone", "replace_all": False}),
            "mcp": claude(r, "mcp__files__delete_file", {"path": "canary.txt"},
                          mcp_server={"name": "files", "source": "project"}),
        },
        "codex": {
            "shell": codex(r, "Bash", {"command": "rm -f canary.txt"}),
            "write": codex(r, "apply_patch", {"command": PATCH_ADD}),
            "edit": codex(r, "apply_patch", {"command": PATCH_UPDATE}),
            "mcp": codex(r, "mcp__files__delete_file", {"path": "canary.txt"}),
        },
        "gemini-cli": {
            "shell": gemini(r, "run_shell_command", {"command": "rm -f canary.txt"}),
            "write": gemini(r, "write_file", {"file_path": f"{r}/protected/new.txt", "content": "x"}),
            "edit": gemini(r, "replace", {"file_path": f"{r}/protected/keep.txt", "old_string": "keep",
                                          "new_string": "gone"}),
            "mcp": gemini(r, "mcp_files_delete_file", {"path": "canary.txt"},
                          mcp_context={"server_name": "files", "tool_name": "delete_file", "command": "python3",
                                       "args": ["-m", "sentinel.hooks.compat.mcp"]}),
        },
        "cline": {
            "shell": cline(r, "run_commands", {"commands": ["ls", "rm -f canary.txt"]}),
            "write": cline(r, "editor", {"path": f"{r}/protected/new.txt", "new_text": "x"}),
            "edit": cline(r, "editor", {"path": f"{r}/protected/keep.txt", "old_text": "keep", "new_text": "gone"}),
            "patch": cline(r, "apply_patch", {"input": PATCH_ADD}),
            "mcp": cline(r, "files__delete_file", {"path": "canary.txt"}),
        },
        "copilot-cli": {
            "shell": copilot(r, "bash", {"command": "rm -f canary.txt", "description": "delete"}),
            "write": copilot(r, "create", {"path": f"{r}/protected/new.txt", "file_text": "x"}),
            "edit": copilot(r, "edit", {"path": f"{r}/protected/keep.txt", "old_str": "keep", "new_str": "gone"}),
            "mcp": copilot(r, "files-delete_file", {"path": "canary.txt"}),
            "string-args": copilot(r, "bash", json.dumps({"command": "rm -f canary.txt"})),
        },
        "cursor": {
            "shell": cursor(r, "beforeShellExecution", command="rm -f canary.txt", cwd=r),
            "write": cursor(r, "preToolUse", tool_name="Write",
                            tool_input={"file_path": f"{r}/protected/new.txt", "content": "x"}),
            "edit": cursor(r, "preToolUse", tool_name="StrReplace",
                           tool_input={"file_path": f"{r}/protected/keep.txt", "old_string": "k", "new_string": "g"}),
            "mcp": cursor(r, "beforeMCPExecution", tool_name="delete_file", tool_input=json.dumps({"path": "canary.txt"}),
                          command="python3 -m files_server"),
        },
        "windsurf": {
            "shell": windsurf(r, "pre_run_command", {"command_line": "rm -f canary.txt", "cwd": r}),
            "write": windsurf(r, "pre_write_code", {"file_path": f"{r}/protected/new.txt",
                                                    "edits": [{"old_string": "", "new_string": "x"}]}),
            "mcp": windsurf(r, "pre_mcp_tool_use", {"mcp_server_name": "files", "mcp_tool_name": "delete_file",
                                                     "mcp_tool_arguments": {"path": "canary.txt"}, "cwd": r}),
        },
        "amazon-q": {
            "shell": amazon_q(r, "execute_bash", {"command": "rm -f canary.txt"}),
            "write": amazon_q(r, "fs_write", {"command": "create", "path": f"{r}/protected/new.txt", "file_text": "x"}),
            "edit": amazon_q(r, "fs_write", {"command": "str_replace", "path": f"{r}/protected/keep.txt",
                                             "old_str": "keep", "new_str": "gone"}),
            "mcp": amazon_q(r, "@files/delete_file", {"path": "canary.txt"}),
        },
    }


def block_reason(agent, reply):
    """The block, read back in the agent's own format (None: not a block)."""
    if reply.code == 2:
        assert agent in ("codex", "windsurf", "amazon-q") and not reply.stdout
        return reply.stderr
    if not reply.stdout:
        return None
    out = json.loads(reply.stdout)
    if agent in ("claude-code", "codex"):
        specific = out["hookSpecificOutput"]
        return specific["permissionDecisionReason"] if specific.get("permissionDecision") == "deny" else None
    if agent == "copilot-cli":
        return out["permissionDecisionReason"] if out.get("permissionDecision") == "deny" else None
    if agent == "cursor":
        return out["agent_message"] if out.get("permission") == "deny" else None
    if agent == "gemini-cli":
        return out["reason"] if out.get("decision") == "deny" else None
    if agent == "cline":
        if out.get("cancel") is True:
            return out["errorMessage"]
        return out["contextModification"] if "overrideInput" in out and out["overrideInput"] is None else None
    raise AssertionError(f"{agent} answered {reply!r}")


@pytest.fixture
def project(repo, judge, tmp_path):
    j = judge(by_substring(VERDICTS))
    root = repo(RULES, {"backends": {"ollama": {"url": j.url}}})
    (root / ".cursor").mkdir()
    (root / ".cursor/mcp.json").write_text(json.dumps({"mcpServers": {"files": {"command": "python3",
                                                                                 "args": ["-m", "files_server"]}}}))
    return root, j


ALL = [(agent, family) for agent, families in cases("/r").items() for family in families]


@pytest.mark.parametrize("agent,family", ALL)
def test_block_in_the_agents_format(project, agent, family):
    root, j = project
    event, payload = cases(str(root))[agent][family]
    reason = block_reason(agent, handle(agent, event, json.dumps(payload)))
    assert reason and "Sentinel blocked this action" in reason, (agent, family)
    assert len(j.requests) == 1  # one judge call, even for a patch touching a second, unscoped file


def harmless(payload):
    text = json.dumps(payload)
    for old, new in (("rm -f canary.txt", "ls -la"), ("protected/", "src/"), ("delete_file", "list_files")):
        text = text.replace(old, new)
    return json.loads(text)


@pytest.mark.parametrize("agent,family", ALL)
def test_allow_is_silent_without_a_judge_call(project, agent, family):
    root, j = project
    event, payload = cases(str(root))[agent][family]
    reply = handle(agent, event, json.dumps(harmless(payload)))
    assert (reply.stdout, reply.stderr, reply.code) == ("", "", 0)
    assert j.requests == []


def warning_text(agent, event, payload, root):
    """Where the warning for `cat notes.txt` reaches the model, in the agent's own channel."""
    reply = handle(agent, event, json.dumps(payload))
    assert reply.code == 0 and block_reason(agent, reply) is None
    if agent in ("claude-code", "codex"):
        return json.loads(reply.stdout)["hookSpecificOutput"]["additionalContext"]
    if agent == "copilot-cli":
        return json.loads(reply.stdout)["additionalContext"]
    if agent == "cline":
        return json.loads(reply.stdout)["contextModification"]
    if agent == "gemini-cli":  # BeforeTool: the user sees it now; the model gets it from AfterTool
        assert WARNING in json.loads(reply.stdout)["systemMessage"]
        after = dict(payload, hook_event_name="AfterTool", tool_response={"llmContent": "team notes"})
        out = json.loads(handle(agent, "AfterTool", json.dumps(after)).stdout)
        assert out["hookSpecificOutput"]["hookEventName"] == "AfterTool"
        again = handle(agent, "AfterTool", json.dumps(after))
        assert again.stdout == ""  # delivered once
        return out["hookSpecificOutput"]["additionalContext"]
    return reply.stderr  # cursor, windsurf, amazon-q: documented channel is stderr


@pytest.mark.parametrize("agent", sorted(cases("/r")))
def test_warning_reaches_the_agents_model_channel(project, agent):
    root, j = project
    event, payload = cases(str(root))[agent]["shell"]
    text = json.dumps(payload).replace("rm -f canary.txt", "cat notes.txt")
    assert WARNING in warning_text(agent, event, json.loads(text), root)


def test_codex_patch_paths_come_from_the_patch_text(project):
    from sentinel.hooks import agents
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.settings import GateSettings

    cfg = GateConfig(GateSettings().model_dump())
    event, payload = cases("/r")["codex"]["edit"]
    acts = agents.get("codex").action(payload, cfg, "pre")
    assert [(a.trigger, a.locate("/r").target, a.content) for a in acts] == [
        ("file_write", "notes.md", "b"), ("file_write", "protected/keep.txt", "gone")]


def test_mcp_server_identity_per_agent(project):
    from sentinel.hooks import agents
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.settings import GateSettings

    cfg = GateConfig(GateSettings().model_dump())
    root, _ = project
    for agent in ("claude-code", "codex", "gemini-cli", "cline", "copilot-cli", "cursor", "windsurf", "amazon-q"):
        event, payload = cases(str(root))[agent]["mcp"]
        act = agents.get(agent).action(payload, cfg, "pre")
        assert (act.trigger, act.server, act.mcp_tool) == ("mcp", "files", "delete_file"), agent
    # a Gemini server whose name has underscores: mcp_context names it, the tool name cannot
    event, payload = gemini("/r", "mcp_my_db_drop", {}, mcp_context={"server_name": "my_db", "tool_name": "drop"})
    act = agents.get("gemini-cli").action(payload, cfg, "pre")
    assert (act.server, act.mcp_tool) == ("my_db", "drop")


def test_cline_block_spares_the_task_where_the_protocol_allows(project):
    root, _ = project
    for family, cancels in (("shell", False), ("edit", False), ("patch", False), ("mcp", True)):
        event, payload = cases(str(root))["cline"][family]
        out = json.loads(handle("cline", event, json.dumps(payload)).stdout)
        assert out.get("cancel") is cancels, family
        if not cancels:
            assert out["overrideInput"] is None and "Sentinel blocked" in out["contextModification"]
            # the model reads Cline's "Invalid input" tool error first: the context says whose doing it is
            assert "Sentinel withheld this call" in out["contextModification"]


def test_cursor_shell_and_mcp_are_judged_once(project):
    root, j = project
    event, payload = cursor(str(root), "preToolUse", tool_name="Shell", tool_input={"command": "rm -f canary.txt"})
    assert handle("cursor", event, json.dumps(payload)).stdout == ""
    event, payload = cursor(str(root), "preToolUse", tool_name="MCP:delete_file", tool_input={"path": "canary.txt"})
    assert handle("cursor", event, json.dumps(payload)).stdout == ""
    assert j.requests == []  # their own events (beforeShellExecution, beforeMCPExecution) judge them


@pytest.mark.parametrize("agent,payload", [
    ("cline", {"hookName": "tool_call", "workspaceRoots": ["/r"], "tool_call": {"weird": 1}}),
    ("copilot-cli", {"cwd": "/r", "toolArgs": {}}),
    ("windsurf", {"agent_action_name": "pre_write_code", "tool_info": {"cwd": "/r", "shape": "unknown"}}),
    ("cursor", {"hook_event_name": "beforeSomethingNew", "workspace_roots": ["/r"], "what": 1}),
    ("gemini-cli", {"cwd": "/r", "hook_event_name": "BeforeTool", "tool_input": {}}),
])
def test_unknown_shapes_fail_open(project, agent, payload):
    root, j = project
    text = json.dumps(payload).replace('"/r"', json.dumps(str(root)))
    event = payload.get("hookName") or payload.get("agent_action_name") or payload.get("hook_event_name") or "pre"
    reply = handle(agent, str(event), text)
    assert reply.code in (0, 1) and reply.stdout == "" and j.requests == []  # 1: an unknown event, never 2
