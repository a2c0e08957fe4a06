"""A local judge's verdict is never cut off mid-JSON: every free string of its schema is bounded (the grammar enforces
it) and its token budget covers the longest object the bounded schema allows (2 of 10 alignment verdicts of the
default model were truncated at the caller's 150 tokens)."""

from __future__ import annotations

import json

from sentinel.models.base import Completion
from sentinel.policy.gate import alignment
from sentinel.policy.gate.judges import local
from sentinel.policy.gate.judges.base import Request
from sentinel.policy.gate.prompts import ALIGNMENT, SUMMARY, VERDICT


def test_every_free_string_is_bounded_and_enums_are_left_as_they_are():
    schema = local.bounded(ALIGNMENT["schema"], 300)
    assert schema["properties"]["reason"]["maxLength"] == 300
    assert "maxLength" not in schema["properties"]["decision"]  # an enum bounds itself
    assert "maxLength" not in ALIGNMENT["schema"]["properties"]["reason"]  # the shared schema is not changed


def test_the_budget_covers_the_longest_reply_the_bounded_schema_allows():
    for schema, chars in ((ALIGNMENT["schema"], 450), (VERDICT["schema"], 300), (SUMMARY["schema"], 900)):
        bounded = local.bounded(schema, chars)
        longest = {k: "x" * chars if v.get("type") == "string" and "enum" not in v
                   else max(v["enum"], key=len) if "enum" in v else 0.123456789 if v.get("type") == "number"
                   else False for k, v in bounded["properties"].items()}
        assert local.budget(bounded) >= len(json.dumps(longest))  # a token holds one character at least


class _Capture:
    def __init__(self):
        self.options = {}

    def complete(self, messages, tools, **options):
        self.options = options
        return Completion(content='{"reason": "reads a file", "decision": "approve"}')


def test_the_local_judge_asks_with_the_bounded_schema_and_a_budget_that_fits_it(monkeypatch):
    from sentinel import models
    from sentinel.policy.gate.action import Action

    client = _Capture()
    monkeypatch.setattr(models, "hosted", lambda *a, **k: client)
    act = Action("other", "read_file", {"path": "a.txt"}, agent_id="a").locate(None)
    request = alignment.request(act, alignment.Intent("read a.txt", None, "a"), "m")
    assert isinstance(request, Request) and request.max_tokens == 150
    assert local.LocalJudge().complete(request)["decision"] == "approve"
    fmt = client.options["response_format"]
    assert fmt["schema"]["properties"]["reason"]["maxLength"] == max(local.STRING_CHARS, 3 * 150)
    assert client.options["max_tokens"] == local.budget(fmt["schema"]) > 150
    local.LocalJudge(grammar=False).complete(request)
    assert "response_format" not in client.options  # native: the same prompt and budget, no grammar
