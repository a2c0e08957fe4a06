"""The listener end to end: the real openai client -> Muzzle -> a scripted upstream."""

from __future__ import annotations

import json
import threading

import openai
import pytest

CALLS = [{"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}},
         {"name": "bash", "arguments": {"command": "ls -la /tmp"}}]


def _stream_text(client, **kwargs):
    text, calls, usage = [], {}, None
    for chunk in client.chat.completions.create(model="fake/m", stream=True, **kwargs):
        usage = chunk.usage or usage
        for choice in chunk.choices:
            if choice.delta.content:
                text.append(choice.delta.content)
            for tc in choice.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                slot["name"] += (tc.function.name or "") if tc.function else ""
                slot["arguments"] += (tc.function.arguments or "") if tc.function else ""
    return "".join(text), [calls[i] for i in sorted(calls)], usage


def test_non_streaming_completion_passes_through(muzzle):
    h = muzzle(["The answer is 42."])
    resp = h.client().chat.completions.create(model="fake/m", messages=[{"role": "user", "content": "q"}])
    assert resp.choices[0].message.content == "The answer is 42."
    assert resp.model == "fake/m" and resp.usage.prompt_tokens == 10
    assert h.upstream.requests[0]["model"] == "m"  # the provider prefix is Muzzle's routing, not the upstream's


def test_streaming_completion_passes_through(muzzle):
    h = muzzle(["Streaming works across many small chunks."], chunk_chars=3)
    text, calls, usage = _stream_text(h.client(), messages=[{"role": "user", "content": "q"}],
                                      stream_options={"include_usage": True})
    assert text == "Streaming works across many small chunks." and calls == []
    assert usage.completion_tokens == 5


def test_stream_without_usage_requested_still_counts_tokens(muzzle):
    h = muzzle(["hi"])
    _, _, usage = _stream_text(h.client(), messages=[{"role": "user", "content": "q"}])
    assert usage is None  # not asked for, not sent
    assert h.upstream.requests[0]["stream_options"] == {"include_usage": True}
    assert h.log()[0]["tokens_in"] == 10 and h.log()[0]["usage_estimated"] is False


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_arrive_intact(muzzle, stream):
    h = muzzle([{"content": "two calls", "tool_calls": CALLS}], chunk_chars=5)
    tools = [{"type": "function", "function": {"name": c["name"], "parameters": {"type": "object"}}} for c in CALLS]
    messages = [{"role": "user", "content": "do it"}]
    if stream:
        _, calls, _ = _stream_text(h.client(), messages=messages, tools=tools)
    else:
        msg = h.client().chat.completions.create(model="fake/m", messages=messages, tools=tools).choices[0].message
        calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in msg.tool_calls]
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for c in calls] == \
        [("call_0_0", "write_file", CALLS[0]["arguments"]), ("call_0_1", "bash", CALLS[1]["arguments"])]
    assert h.upstream.requests[0]["tools"] == tools
    assert [c["name"] for c in h.log()[0]["tool_calls"]] == ["write_file", "bash"]


def test_models_lists_what_the_token_allows(muzzle):
    h = muzzle()
    ids = [m.id for m in h.client(h.token(models=("fake/m", "fake/*"))).models.list()]
    assert ids == ["fake/m", "fake/*"]
    with pytest.raises(openai.AuthenticationError):
        h.client("smz_nope").models.list()


def test_upstream_gets_muzzles_key_and_the_caller_never_does(muzzle):
    h = muzzle(["ok"])
    token = h.token()
    h.client(token).chat.completions.create(model="fake/m", messages=[{"role": "user", "content": "q"}])
    headers = {k.lower(): v for k, v in h.upstream.headers[0].items()}
    assert headers["authorization"] == f"Bearer {h.upstream_key}"
    assert token not in json.dumps(h.upstream.headers) and token not in json.dumps(h.upstream.requests)


def test_an_upstream_echoing_its_own_key_is_redacted(muzzle):
    h = muzzle(["the key you sent me was sk-upstream-0123456789abcdefghijklmnop"])
    text, _, _ = _stream_text(h.client(), messages=[{"role": "user", "content": "q"}])
    assert h.upstream_key not in text and "[REDACTED:" in text
    assert h.upstream_key not in h.log_text()


def test_concurrent_streams_and_calls(muzzle):
    h = muzzle(["concurrent answer number one"], chunk_chars=4)
    client = h.client()
    results, errors = [], []

    def one(i):
        try:
            if i % 2:
                results.append(_stream_text(client, messages=[{"role": "user", "content": f"q{i}"}])[0])
            else:
                resp = client.chat.completions.create(model="fake/m", messages=[{"role": "user", "content": f"q{i}"}])
                results.append(resp.choices[0].message.content)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and results == ["concurrent answer number one"] * 24
    log = h.log()
    assert len(log) == 24 and all(r["status"] == 200 for r in log)
    assert sum(r["tokens_in"] + r["tokens_out"] for r in log) == 24 * 15


def test_in_process_scripted_backend_streams_and_calls_tools(muzzle, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- content: thinking\n  tool_calls: [{name: bash, arguments: {command: pwd}}]\n- done\n")
    h = muzzle(muzzle_settings={"scripted": True})  # off unless the operator turns it on
    client = h.client(h.token(models=(f"scripted/{script}",)))
    chunks = client.chat.completions.create(model=f"scripted/{script}", stream=True,
                                            messages=[{"role": "user", "content": "q"}])
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "thinking"
    msg = client.chat.completions.create(model=f"scripted/{script}", messages=[{"role": "user", "content": "q"}])
    call = msg.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("bash", {"command": "pwd"})
    assert h.log()[0]["upstream"] == "scripted (in-process)"


def test_a_caller_leaving_mid_stream_is_logged_and_harms_nothing(muzzle):
    import time

    import httpx

    h = muzzle(["word " * 4000], chunk_chars=1)
    token = h.token()
    with httpx.stream("POST", f"{h.base_url}/chat/completions", headers={"authorization": f"Bearer {token}"},
                      json={"model": "fake/m", "messages": [{"role": "user", "content": "q"}], "stream": True}) as r:
        next(r.iter_lines())
    deadline = time.monotonic() + 10
    while not h.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert h.log()[0]["status"] == 499 and h.log()[0]["decision"] == "error:client_closed"
    resp = h.client(token).chat.completions.create(model="fake/m", messages=[{"role": "user", "content": "q"}])
    assert resp.choices[0].message.content.startswith("word")
