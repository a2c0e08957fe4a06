"""Model backends: the OpenAI-compatible client over real HTTP, the scripted model, the embedded local model."""

from __future__ import annotations

import json

import pytest

from sentinel.config import Config
from sentinel.errors import UsageError
from sentinel.models import ModelError, resolve
from sentinel.models.openai_compat import OpenAICompatClient
from sentinel.models.toolcalls import recover

REPLY = {"content": "calling", "tool_calls": [{"name": "write_file",
                                               "arguments": {"path": "a.txt", "content": "x" * 50}}]}


@pytest.mark.parametrize("stream", [True, False])
def test_openai_client_keeps_tool_calls_intact(scripted_server, stream):
    server = scripted_server([REPLY])
    client = OpenAICompatClient("fake/m", "m", server.base_url, "k", stream=stream)
    deltas = []
    out = client.complete([{"role": "user", "content": "hi"}], [], on_delta=deltas.append)
    assert out.content == "calling"
    assert [(c.name, json.loads(c.arguments)) for c in out.tool_calls] == \
        [("write_file", {"path": "a.txt", "content": "x" * 50})]
    assert out.tool_calls[0].id == "call_0_0"
    assert server.requests[0].get("stream", False) is stream
    if stream:
        assert "".join(deltas) == "calling" and len(deltas) > 1


def test_upstream_error_status_is_a_model_error(scripted_server):
    server = scripted_server([{"error": {"status": 503, "message": "overloaded"}}])
    client = OpenAICompatClient("fake/m", "m", server.base_url, "k", stream=False)
    with pytest.raises(ModelError, match="HTTP 503: overloaded"):
        client.complete([{"role": "user", "content": "hi"}], [])


def test_resolve_names_and_errors(tmp_path):
    cfg = Config.model_validate({"providers": {"mine": {"base_url": "http://127.0.0.1:1/v1"}}})
    assert resolve("mine/x", cfg).model == "x"
    assert resolve("ollama/qwen3:4b", cfg).model == "qwen3:4b"
    with pytest.raises(UsageError, match="unknown provider 'nope'"):
        resolve("nope/x", cfg)
    with pytest.raises(UsageError, match="no script file"):
        resolve("scripted/missing.yaml", cfg)


def test_scripted_model_replays_by_turn(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("- {tool_calls: [{name: list_dir, arguments: {path: .}}]}\n- done\n")
    model = resolve(f"scripted/{path}", Config())
    first = model.complete([{"role": "user", "content": "x"}], [])
    second = model.complete([{"role": "user", "content": "x"}, first.to_message()], [])
    assert first.tool_calls[0].name == "list_dir" and second.content == "done" and not second.tool_calls


@pytest.mark.parametrize("text,expected", [
    ('{"tool": "read_file", "arguments": {"path": "a"}}', [("read_file", {"path": "a"})]),
    ('Sure:\n```json\n{"name": "list_dir", "parameters": {"path": "."}}\n```', [("list_dir", {"path": "."})]),
    ('[{"function": {"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}}]', [("bash", {"command": "ls"})]),
    ('```json\n{"function": "read_file", "arguments": {"path": "a"}}\n```', [("read_file", {"path": "a"})]),
    ('{"tool": "launch_missiles", "arguments": {}}', []),
    ("The answer is {not json}.", []),
])
def test_plain_text_tool_calls_are_recovered(text, expected):
    calls = recover(text, {"read_file", "list_dir", "bash"}, turn=3)
    assert [(c.name, json.loads(c.arguments)) for c in calls] == expected
    assert all(c.id.startswith("call_3_") for c in calls)


def test_the_embedded_local_model_answers_from_its_host():
    model = resolve("local/smollm2-135m", Config())
    out = model.complete([{"role": "user", "content": "Say hello."}], [])
    assert out.content.strip() and out.usage["completion_tokens"] > 0


def test_a_host_socket_deeper_than_a_unix_address_allows_still_connects(tmp_path):
    import socket as socketlib

    from sentinel.unixsock import address

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    sock = deep / "qwen2.5-coder-1.5b.sock"
    assert len(str(sock)) > 108
    server = socketlib.socket(socketlib.AF_UNIX)
    server.bind(address(sock))
    server.listen(1)
    client = socketlib.socket(socketlib.AF_UNIX)
    client.connect(address(sock))
    assert sock.exists()
    client.close()
    server.close()
