"""The compatibility run's pieces, offline and fast: the scripted servers answer like the real APIs (the
official `openai` client reads the Responses and Chat streams; the Anthropic and Gemini streams carry
their event sequences), the script picks the client's own tool, and the MCP server's tool acts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import openai
import pytest

from sentinel.hooks.compat import mcp, scenario
from sentinel.hooks.compat.servers import ScriptedAPI

PROMPT = scenario.PROMPTS["block-shell"]


def sse(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        text = resp.read().decode()
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]


def test_openai_clients_read_the_responses_and_chat_streams(tmp_path):
    with ScriptedAPI(str(tmp_path)) as api:
        client = openai.OpenAI(base_url=f"{api.url}/v1", api_key="x", max_retries=0)
        tools = [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}}]
        events = list(client.responses.create(model="m", input=PROMPT, tools=tools, stream=True))
        done = events[-1].response
        assert done.output[0].type == "function_call" and json.loads(done.output[0].arguments) == {
            "cmd": "rm -f canary.txt"}
        chat_tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
        chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": PROMPT}],
                                                     tools=chat_tools, stream=True))
        call = chunks[0].choices[0].delta.tool_calls[0]
        assert call.function.name == "bash" and chunks[-1].choices[0].finish_reason == "tool_calls"
        after = [{"role": "user", "content": PROMPT}, {"role": "assistant", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": "c", "content": "blocked"}]
        final = client.chat.completions.create(model="m", messages=after, tools=chat_tools)
        assert final.choices[0].message.content == "Done."
        assert api.called == ["exec_command", "bash"] and "blocked" in api.seen()


def test_anthropic_and_gemini_streams(tmp_path):
    with ScriptedAPI(str(tmp_path)) as api:
        events = sse(f"{api.url}/v1/messages", {"model": "m", "stream": True, "tools": [{"name": "Bash"}],
                                                 "messages": [{"role": "user", "content": PROMPT}]})
        assert [e["type"] for e in events] == ["message_start", "content_block_start", "content_block_delta",
                                               "content_block_stop", "message_delta", "message_stop"]
        assert events[1]["content_block"]["name"] == "Bash" and events[4]["delta"]["stop_reason"] == "tool_use"
        (chunk,) = sse(f"{api.url}/v1beta/models/g:streamGenerateContent?alt=sse", {
            "contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
            "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}]})
        part = chunk["candidates"][0]["content"]["parts"][0]
        assert part["functionCall"] == {"name": "run_shell_command", "args": {"command": "rm -f canary.txt"}}


def test_mcp_server_lists_and_deletes_inside_its_root_only(tmp_path):
    (tmp_path / "canary.txt").write_text("x")
    names = [t["name"] for t in mcp.answer(str(tmp_path), {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[
        "result"]["tools"]]
    assert names == ["delete_file", "list_files"]
    escape = mcp.call(str(tmp_path), "delete_file", {"path": "../outside"})
    assert escape["isError"] and (tmp_path / "canary.txt").exists()
    assert not mcp.call(str(tmp_path), "delete_file", {"path": "canary.txt"}).get("isError")
    assert not (tmp_path / "canary.txt").exists()


def test_the_matrix_says_where_a_block_reason_never_reached_the_model():
    from sentinel.hooks.compat import run, scenario

    seen = '{"messages": [{"role": "user", "content": "<hook_context>Sentinel blocked this action: ' \
           '[no-canary-delete] deleting canary.txt is forbidden</hook_context>"}]}'
    assert scenario.told("block-shell", seen) is True and scenario.told("block-mcp", seen) is False
    assert scenario.told("allow-shell", seen) is None and scenario.told("warn", seen) is None
    results = [{"agent": "cline", "case": c, "outcome": "held", "told": scenario.told(c, seen), "hook_ms": []}
               for c in scenario.CASES]
    row = next(line for line in run.matrix(results, ["cline"], {"cline": "3.0.65"}).splitlines()
               if line.startswith("| block reason"))
    # the ask cases' denials count too: their reason ("denied by ...: why", "no decision within") must reach it
    assert "| 1 of 6 (not: block-write, block-edit, block-mcp, ask-deny, ask-expire) |" in row


# -- the `ask` cases (issue 43) -------------------------------------------------------------------

def test_the_ask_cases_script_a_shell_call_each_client_declares(tmp_path):
    from sentinel.hooks.compat.servers import next_call

    for case in scenario.ASKS:
        prompt = scenario.PROMPTS[case]
        for tools, name in (({"Bash"}, "Bash"), ({"exec_command"}, "exec_command"),
                            ({"run_shell_command"}, "run_shell_command"), ({"run_commands"}, "run_commands"),
                            ({"bash"}, "bash")):
            call = next_call(prompt, tools, 0, str(tmp_path))
            assert call is not None and call[0] == name and scenario.ASK_COMMAND in json.dumps(call[1])
            assert next_call(prompt, tools, 1, str(tmp_path)) is None  # one call, then the final answer


def test_the_ask_cases_hold_on_the_project_and_the_model(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    assert not scenario.held("ask-approve", root, "") and scenario.held("ask-deny", root, "")
    (root / "asked.txt").write_text("asked\n")
    assert scenario.held("ask-approve", root, "") and not scenario.held("ask-expire", root, "")
    assert scenario.told("ask-deny", f"blocked: denied by one-tap link: {scenario.DENIAL}") is True
    assert scenario.told("ask-expire", f"no decision within {scenario.ASK_WITHIN_S} s") is True
    assert scenario.told("ask-approve", "") is None


def test_the_expiry_case_shortens_the_window_installed_for_the_client():
    from sentinel.hooks.ask import within_from
    from sentinel.hooks.compat.run import shim_extra

    installed = "--ask-within 540".split()
    assert within_from(installed + shim_extra("ask-expire").split()) == scenario.ASK_WITHIN_S
    assert within_from(installed + shim_extra("ask-approve").split()) == 540
    assert within_from([]) == 20.0 and within_from(["--ask-within", "soon"]) == 20.0


@pytest.mark.parametrize("decision, reason, agent", [("approve", "", "claude-code"), ("deny", scenario.DENIAL, "codex")])
def test_the_person_is_notified_and_decides_through_the_link_as_a_browser(tmp_path, repo, decision, reason, agent):
    """The compat run's person, with a real hook process asking in its home: one notification, a decision
    posted through the link page's form, and the client's answer."""
    from sentinel.hooks.compat.decider import Decider

    root = repo({"asked-needs-a-person": scenario.RULES["asked-needs-a-person"]})
    home = tmp_path / "person"
    payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": scenario.ASK_COMMAND}, "tool_use_id": "t"}
    with Decider(home, decision, reason, delay_s=0.0) as person:
        proc = subprocess.run([sys.executable, "-m", "sentinel", "hook", agent, "pre-tool-use", "--ask-within", "60"],
                              input=json.dumps(payload), capture_output=True, text=True, timeout=90,
                              env={**os.environ, "SENTINEL_HOME": str(home), "SENTINEL_MODE": "local"})
        summary = person.summary()
    assert summary == {"notifications": 1, "decision": decision, "answer": "posted", "error": None}
    if decision == "approve":
        out = json.loads(proc.stdout)["hookSpecificOutput"]
        assert proc.returncode == 0 and out["permissionDecision"] == "allow"
    else:
        assert proc.returncode == 2 and scenario.DENIAL in proc.stderr
    from sentinel import paths

    deadline = time.monotonic() + 20  # the home's detached deliverer exits once it is idle
    while time.monotonic() < deadline:
        fd = paths.try_lock(paths.state_dir(home) / "notify.lock")
        if fd is not None:
            os.close(fd)
            break
        time.sleep(0.05)
