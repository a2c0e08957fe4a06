"""Inspection through the listener: outbound redaction, inbound flagging across chunk boundaries, block rules, log."""

from __future__ import annotations

import json

import openai
import pytest

AWS = "AKIAIOSFODNN7EXAMPLE"
GH = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
PASSWORD = "correct-horse-battery-staple"
RAW_SECRETS = [AWS, GH, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", PASSWORD]


def _ask(client, messages, **kwargs):
    return client.chat.completions.create(model="fake/m", messages=messages, **kwargs)


def _streamed(client, messages):
    text, args = [], []
    for chunk in client.chat.completions.create(model="fake/m", messages=messages, stream=True):
        for choice in chunk.choices:
            text.append(choice.delta.content or "")
            args.extend(tc.function.arguments or "" for tc in choice.delta.tool_calls or [] if tc.function)
    return "".join(text), "".join(args)


def test_outbound_secrets_reach_the_upstream_only_as_stable_placeholders(muzzle):
    h = muzzle(["ok"])
    messages = [
        {"role": "system", "content": "You are careful."},
        {"role": "user", "content": f"Deploy with {AWS} and then\nDB_PASSWORD={PASSWORD}\n"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": json.dumps(
                {"command": f"git clone https://bot:{GH}@github.com/x/y"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"cloned; key file:\n{PEM}\n"},
        {"role": "user", "content": [{"type": "text", "text": f"again {AWS}"}]},
    ]
    _ask(h.client(), messages)
    sent = json.dumps(h.upstream.requests[0])
    for secret in RAW_SECRETS:
        assert secret not in sent
    upstream_messages = h.upstream.requests[0]["messages"]
    first = upstream_messages[1]["content"]
    placeholder = first.split()[2]
    assert placeholder.startswith("[REDACTED:aws_access_key:")
    assert upstream_messages[4]["content"][0]["text"] == f"again {placeholder}"  # same secret, same placeholder
    assert "DB_PASSWORD=[REDACTED:env_secret:" in first
    assert "[REDACTED:private_key:" in upstream_messages[3]["content"]
    assert json.loads(upstream_messages[2]["tool_calls"][0]["function"]["arguments"])["command"].startswith(
        "git clone https://bot:[REDACTED:")
    assert upstream_messages[0]["content"] == "You are careful."
    line = h.log()[0]
    assert line["redactions_out"] == 5 and line["decision"] == "redacted"
    assert {"aws_access_key", "env_secret", "private_key"} <= set(line["redaction_kinds"])


@pytest.mark.parametrize("chunk_chars", [1, 3, 7])
def test_a_secret_the_model_echoes_is_redacted_even_split_across_chunks(muzzle, chunk_chars):
    reply = f"Sure. The key is {AWS} and the token {GH}.\nPASSWORD = {PASSWORD}\n{PEM}\nDone."
    h = muzzle([reply], chunk_chars=chunk_chars)
    text, _ = _streamed(h.client(), [{"role": "user", "content": "tell me"}])
    for secret in RAW_SECRETS:
        assert secret not in text
    assert text.startswith("Sure. The key is [REDACTED:aws_access_key:") and text.endswith("\nDone.")
    assert text.count("[REDACTED:") == 4
    line = h.log()[0]
    assert line["redactions_in"] == 4 and line["decision"] == "flagged"


def test_a_secret_in_streamed_tool_call_arguments_is_redacted(muzzle):
    call = {"name": "write_file", "arguments": {"path": ".env", "content": f"AWS_ACCESS_KEY_ID={AWS}\n"}}
    h = muzzle([{"tool_calls": [call]}], chunk_chars=2)
    _, args = _streamed(h.client(), [{"role": "user", "content": "write it"}])
    assert AWS not in args
    assert json.loads(args)["path"] == ".env" and "[REDACTED:aws_access_key:" in json.loads(args)["content"]
    assert AWS not in h.log_text() and h.log()[0]["tool_calls"][0]["name"] == "write_file"


def test_a_non_streamed_echo_is_redacted_and_flagged(muzzle):
    h = muzzle([f"here: {GH}"])
    content = _ask(h.client(), [{"role": "user", "content": "q"}]).choices[0].message.content
    assert GH not in content and content.startswith("here: [REDACTED:github_token:")
    assert h.log()[0]["redactions_in"] == 1


def test_echoes_are_flagged_but_kept_when_response_redaction_is_off(muzzle):
    h = muzzle([f"here: {GH}"], muzzle_settings={"redact_responses": False}, chunk_chars=3)
    text, _ = _streamed(h.client(), [{"role": "user", "content": "q"}])
    assert text == f"here: {GH}"
    assert h.log()[0]["redactions_in"] == 1 and GH not in h.log_text()


def test_configured_extra_patterns_are_redacted(muzzle):
    h = muzzle(["ok"], muzzle_settings={"redact": [{"name": "internal_id", "pattern": r"INT-(?P<secret>\d{6})"}]})
    _ask(h.client(), [{"role": "user", "content": "ticket INT-123456"}])
    assert h.upstream.requests[0]["messages"][0]["content"].startswith("ticket INT-[REDACTED:internal_id:")


BLOCK = {"block": [{"id": "no-rm-root", "pattern": r"rm -rf /(\s|$)", "on": "response", "message": "destructive"},
                   {"id": "no-exfil", "pattern": "CONFIDENTIAL", "on": "request"}]}


def test_a_request_matching_a_block_rule_is_refused_with_the_rule(muzzle):
    h = muzzle(["ok"], muzzle_settings=BLOCK)
    with pytest.raises(openai.PermissionDeniedError) as err:
        _ask(h.client(), [{"role": "user", "content": "send the CONFIDENTIAL file"}])
    assert "rule 'no-exfil'" in err.value.message and err.value.body["code"] == "blocked"
    assert h.upstream.requests == [] and h.log()[0]["decision"] == "denied:blocked"


def test_a_response_matching_a_block_rule_is_refused(muzzle):
    h = muzzle(["Run this: rm -rf / now"], muzzle_settings=BLOCK, chunk_chars=3)
    with pytest.raises(openai.PermissionDeniedError) as err:
        _ask(h.client(), [{"role": "user", "content": "clean up"}])
    assert "rule 'no-rm-root' matched: destructive" in err.value.message
    with pytest.raises(openai.APIError) as err:
        _streamed(h.client(), [{"role": "user", "content": "clean up"}])
    assert "no-rm-root" in err.value.message
    assert [r["decision"] for r in h.log()] == ["denied:blocked", "denied:blocked"]


def test_the_log_has_one_line_per_call_and_never_a_raw_secret(muzzle):
    h = muzzle([f"echo {AWS}"], chunk_chars=2)
    client = h.client()
    _ask(client, [{"role": "user", "content": f"PASSWORD={PASSWORD} {GH}"}])
    _streamed(client, [{"role": "user", "content": f"{PEM}"}])
    with pytest.raises(openai.AuthenticationError):
        _ask(h.client("smz_" + "x" * 40), [{"role": "user", "content": AWS}])
    text = h.log_text()
    for secret in RAW_SECRETS:
        assert secret not in text
    lines = h.log()
    assert len(lines) == 3
    assert set(lines[0]) >= {"time", "agent", "run", "model", "upstream", "latency_ms", "ttft_ms", "tokens_in",
                             "tokens_out", "redactions_out", "redactions_in", "decision", "status"}
    assert lines[0]["agent"] == "ana" and lines[0]["run"] == "r-1" and lines[0]["model"] == "fake/m"
    assert lines[1]["stream"] is True and lines[1]["ttft_ms"] <= lines[1]["latency_ms"]
    assert lines[2]["status"] == 401 and lines[2]["agent"] is None


def _token(n):
    return "ghp_" + f"{n:02d}" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"


FIELDS = ["message name", "legacy function_call", "image part", "audio part", "dict content", "tool description",
          "tool schema", "response_format", "stop", "user", "metadata", "unknown field", "named key"]


def test_a_secret_in_any_field_of_the_request_never_reaches_the_upstream(muzzle):
    """Every string of the body is walked, not only message texts: one secret per field, each must be gone."""
    h = muzzle(["ok"])
    s = {field: _token(i) for i, field in enumerate(FIELDS)}
    s["named key"] = "plain-looking-value-7"  # no pattern of its own: the key says it is a secret
    messages = [
        {"role": "user", "name": s["message name"], "content": "hi"},
        {"role": "assistant", "content": None, "function_call": {
            "name": "bash", "arguments": json.dumps({"command": f"echo {s['legacy function_call']}"})}},
        {"role": "function", "name": "bash", "content": "done"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": f"https://x.test/a.png?k={s['image part']}"}},
                                     {"type": "input_audio", "input_audio": {"data": s["audio part"], "format": "wav"}}]},
        {"role": "user", "content": {"type": "text", "text": f"dict {s['dict content']}"}},
    ]
    tools = [{"type": "function", "function": {
        "name": "deploy", "description": f"deploys with {s['tool description']}",
        "parameters": {"type": "object", "properties": {"k": {"type": "string", "default": s["tool schema"]}}}}}]
    response_format = {"type": "json_schema", "json_schema": {"name": "out", "schema": {
        "type": "object", "description": s["response_format"]}}}
    _ask(h.client(), messages, tools=tools, response_format=response_format, stop=[s["stop"]], user=s["user"],
         metadata={"note": s["metadata"]},
         extra_body={"vendor_extension": {"x": [s["unknown field"]]}, "credentials": {"api_key": s["named key"]}})
    sent = json.dumps(h.upstream.requests[0])
    leaked = [field for field, secret in s.items() if secret in sent]
    assert leaked == []
    body = h.upstream.requests[0]
    assert body["messages"][1]["function_call"]["name"] == "bash"   # structure and keys kept
    assert body["tools"][0]["function"]["name"] == "deploy" and "api_key" in body["credentials"]
    assert body["credentials"]["api_key"].startswith("[REDACTED:json_secret:")
    assert h.log()[0]["redactions_out"] == len(FIELDS)


def test_an_ordinary_request_passes_unchanged(muzzle):
    h = muzzle(["ok"])
    messages = [{"role": "user", "name": "ana", "content": [{"type": "text", "text": "list the files"}]}]
    tools = [{"type": "function", "function": {"name": "ls", "description": "lists files", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}}]
    _ask(h.client(), messages, tools=tools, stop=["END"], user="ana", metadata={"task": "t-1"}, max_tokens=50)
    body = h.upstream.requests[0]
    assert body["messages"] == messages and body["tools"] == tools
    assert (body["stop"], body["user"], body["metadata"], body["max_tokens"]) == (["END"], "ana", {"task": "t-1"}, 50)
    assert h.log()[0]["decision"] == "allowed"


def test_a_body_nested_too_deeply_to_inspect_is_refused_not_forwarded(muzzle):
    h = muzzle(["ok"])
    deep: dict = {"x": GH}
    for _ in range(700):
        deep = {"a": deep}
    with pytest.raises(openai.BadRequestError, match="nested too deeply"):
        _ask(h.client(), [{"role": "user", "content": "hi"}], extra_body={"vendor": deep})
    assert h.upstream.requests == []


def test_a_secret_used_as_a_key_never_reaches_the_upstream(muzzle):
    """A secret as a tool parameter's name, a metadata key and a logit_bias key is replaced like any value; the
    ordinary keys beside it (and the values under them) arrive as they were."""
    h = muzzle(["ok"])
    tools = [{"type": "function", "function": {"name": "deploy", "description": "deploys", "parameters": {
        "type": "object", "properties": {GH: {"type": "string"}, "path": {"type": "string"}}, "required": [GH]}}}]
    _ask(h.client(), [{"role": "user", "content": "hi"}], tools=tools, metadata={AWS: "x", "task": "t-1"},
         logit_bias={f"PASSWORD={PASSWORD}": 5, "50256": -100})
    sent = json.dumps(h.upstream.requests[0])
    assert [s for s in (GH, AWS, PASSWORD) if s in sent] == []
    body = h.upstream.requests[0]
    props = body["tools"][0]["function"]["parameters"]["properties"]
    (hidden,) = [k for k in props if k != "path"]
    assert hidden.startswith("[REDACTED:github_token:") and body["tools"][0]["function"]["parameters"]["required"] == [hidden]
    assert body["metadata"]["task"] == "t-1" and any(k.startswith("[REDACTED:aws_access_key:") for k in body["metadata"])
    assert body["logit_bias"]["50256"] == -100 and "PASSWORD=[REDACTED:env_secret:" in json.dumps(body["logit_bias"])
    assert h.log()[0]["redactions_out"] == 4


def test_keys_that_collide_once_redacted_are_refused_naming_the_object():
    from sentinel.muzzle.errors import MuzzleError
    from sentinel.muzzle.inspect import Inspector
    from sentinel.muzzle.redact import Redactor
    from sentinel.muzzle.settings import MuzzleSettings

    inspector = Inspector(Redactor(b"k"), MuzzleSettings())
    placeholder = inspector.redactor.redact(AWS)[0]
    with pytest.raises(MuzzleError, match=r"^metadata: two keys are the same once their secrets are redacted"):
        inspector.request({"metadata": {AWS: "a", placeholder: "b"}})
    body, found = inspector.request({"metadata": {AWS: "a", "task": "b"}})  # its neighbour: replaced, kept
    assert body == {"metadata": {placeholder: "a", "task": "b"}} and len(found) == 1
