"""The compatibility run's pieces, offline and fast: the scripted servers answer like the real APIs (the
official `openai` client reads the Responses and Chat streams; the Anthropic and Gemini streams carry
their event sequences), the script picks the client's own tool, and the MCP server's tool acts."""

from __future__ import annotations

import json
import urllib.request

import openai

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
    assert "| 1 of 4 (not: block-write, block-edit, block-mcp) |" in row
