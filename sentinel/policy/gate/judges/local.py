"""The embedded local model (`local/...`) in its model host, answers constrained by a grammar
built from the JSON schema (llama-cpp-python's `response_format` with a `schema`).

The verdict's token budget fits its schema: every free string of the schema is bounded (`maxLength`, which the
grammar enforces) and `max_tokens` covers the longest object the bounded schema allows, so a model that writes a long
reason is made to close it and still gives its decision: the reply is never cut off mid-JSON (2 of 10 alignment
verdicts of the default model were, at the caller's 150 tokens). `grammar=False` asks for the same JSON without the
grammar (the `native` column of benchmarks/bench_alignment.py).

The host serves one call at a time; the backend takes part in the priority lock like
Ollama (it shares the machine's accelerator).
"""

from __future__ import annotations

import threading

from sentinel.jsontypes import JSON, JSONObject, object_in
from sentinel.policy.gate.judges.base import JudgeError, Request
from sentinel.policy.gate.prompts import parse_json_text

_LOCK = threading.Lock()


STRING_CHARS = 300  # a free string's bound, unless the caller's budget allows a longer one (a summary)
FIELD_TOKENS = 8    # a key, its quotes, colon and comma
SCALAR_TOKENS = 24  # a number or a boolean


class LocalJudge:
    gpu = True
    name = "local"

    def __init__(self, grammar: bool = True):
        self.grammar = grammar

    def complete(self, request: Request) -> JSON:
        from sentinel import config as config_mod
        from sentinel import models

        model = models.hosted(f"local/{request.model}", request.model, config_mod.load())
        schema = bounded(request.body_schema(), max(STRING_CHARS, 3 * request.max_tokens))
        tokens = max(request.max_tokens, budget(schema))
        fmt: JSONObject = {"type": "json_object", "schema": schema}
        try:
            with _LOCK:
                if self.grammar:
                    out = model.complete(request.messages(), [], response_format=fmt, max_tokens=tokens,
                                         temperature=request.temperature)
                else:
                    out = model.complete(request.messages(), [], max_tokens=tokens, temperature=request.temperature)
        except models.ModelError as exc:
            raise JudgeError(str(exc)) from None
        try:
            return parse_json_text(out.content)
        except ValueError as exc:
            raise JudgeError(f"local/{request.model}: {exc}") from None


def bounded(schema: JSONObject, chars: int) -> JSONObject:
    """`schema` with every string that has no `maxLength` nor `enum` bounded to `chars` characters."""
    kind = schema.get("type")
    if kind == "string" and "maxLength" not in schema and "enum" not in schema:
        return {**schema, "maxLength": chars}
    if kind == "object":
        props = object_in(schema.get("properties"))
        return {**schema, "properties": {k: bounded(object_in(v), chars) for k, v in props.items()}}
    items = schema.get("items")
    if kind == "array" and isinstance(items, dict):
        return {**schema, "items": bounded(items, chars)}
    return schema


def budget(schema: JSONObject) -> int:
    """Tokens enough for the longest value `schema` allows (a token holds at least one character of the grammar's
    output); an unbounded array counts as 16 items."""
    kind = schema.get("type")
    if kind == "string":
        enum, length = schema.get("enum"), schema.get("maxLength", 0)
        longest = max((len(str(e)) for e in enum), default=0) if isinstance(enum, list) else length
        return (longest if isinstance(longest, int) else 0) + 2
    if kind == "object":
        props = object_in(schema.get("properties"))
        return 2 + sum(FIELD_TOKENS + len(k) + budget(object_in(v)) for k, v in props.items())
    if kind == "array":
        item, most = schema.get("items"), schema.get("maxItems", 16)
        each = 1 + (budget(item) if isinstance(item, dict) else SCALAR_TOKENS)
        return 2 + (most if isinstance(most, int) else 16) * each
    return SCALAR_TOKENS
