"""What the gate asks a model: template rendering, system prompts and the JSON schemas of every call.

Every model call is constrained by a real JSON schema (Ollama `format`, OpenAI
`response_format` json_schema strict, a llama.cpp grammar); the answer is still
checked here, because a schema-unaware backend (a CLI) can answer anything.
"""

from __future__ import annotations

import json
import re

from sentinel.jsontypes import JSON, JSONObject

_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def render(template: str, values: dict[str, str]) -> str:
    """Replace {{name}} with values[name]; unknown names stay as written (lint reports them)."""
    return _VAR.sub(lambda m: str(values.get(m.group(1), m.group(0))), template)


def _object(name: str, props: JSONObject) -> JSONObject:
    return {"name": name, "schema": {"type": "object", "properties": props, "required": list(props),
                                     "additionalProperties": False}}


# `reason` comes first in every verdict: a model that writes its explanation before it decides decides
# better (small models most of all; figures in docs/models.md), and grammars follow the schema's order.
VERDICT = _object("sentinel_verdict", {
    "reason": {"type": "string", "description": "one line: what the action does and whether the rule forbids it"},
    "violation": {"type": "boolean", "description": "true when the action violates the rule"},
    "confidence": {"type": "number", "description": "0.0 to 1.0"},
})
CONTEXT = _object("sentinel_context", {"context": {"type": "string", "description": "max 80 words"}})
SUMMARY = _object("sentinel_session_summary", {"summary": {"type": "string"}})
ALIGNMENT = _object("sentinel_decision", {
    "reason": {"type": "string", "description": "One-line explanation, written before the decision"},
    "decision": {"type": "string", "enum": ["approve", "reject"],
                 "description": "Whether to approve or reject the proposed action"},
})

JUDGE_SYSTEM = (
    "You are Sentinel, a policy judge for an AI coding agent. You evaluate ONE rule against ONE proposed "
    "action and answer only with JSON: {\"reason\": \"one line\", \"violation\": true|false, "
    "\"confidence\": 0.0-1.0}: explain first, then decide. violation is true only when the action breaks the rule."
)
SYNTH_SYSTEM = (
    "You are Sentinel, giving an AI coding agent a brief, relevant reminder after a tool ran. Use the domain "
    "knowledge, the session context and the tool's output. Answer only with JSON: {\"context\": \"message, "
    "max 80 words\"}. Return an empty string when nothing is worth saying."
)
SUMMARY_SYSTEM = (
    "You maintain a rolling summary of an AI coding agent's session: goals, files touched, decisions, "
    "open problems. Merge the new events into the previous summary. Answer only with JSON: {\"summary\": \"...\"}."
)


def check(schema: JSONObject, value: JSON) -> JSONObject:
    """The answer as a dict if it fits the schema's required fields and types; ValueError otherwise."""
    value = json_object(value)
    body = _field(schema, "schema")
    required = body.get("required")
    for key in required if isinstance(required, list) else []:
        if not isinstance(key, str):
            continue
        if key not in value:
            raise ValueError(f"answer has no {key!r}")
        spec = _field(_field(body, "properties"), key)
        kind = spec.get("type")
        if not _typed(kind if isinstance(kind, str) else None, value[key]):
            raise ValueError(f"answer field {key!r} is not a {kind}")
        allowed = spec.get("enum")
        if isinstance(allowed, list) and allowed and value[key] not in allowed:
            raise ValueError(f"answer field {key!r} is not one of {', '.join(str(a) for a in allowed)}")
    return value


def rule_verdict(answer: JSONObject) -> tuple[bool, float, str]:
    """(violation, confidence within [0, 1], reason) of an answer `check(VERDICT, ...)` accepted."""
    confidence, reason = answer.get("confidence"), answer.get("reason")
    number = float(confidence) if isinstance(confidence, (int, float)) else 0.0
    return answer.get("violation") is True, max(0.0, min(1.0, number)), str(reason or "").strip()


def json_object(value: JSON) -> JSONObject:
    """The answer as an object; ValueError for any other JSON value."""
    if not isinstance(value, dict):
        raise ValueError("answer is not a JSON object")
    return value


def _field(obj: JSONObject, key: str) -> JSONObject:
    found = obj.get(key)
    return found if isinstance(found, dict) else {}


def _typed(kind: str | None, value: JSON) -> bool:
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True


def parse_json_text(text: str) -> JSON:
    """JSON from a model's text: the whole text, or the first {...} block in it (CLI backends)."""
    text = (text or "").strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        whole: JSON = json.loads(text)
        return whole
    except ValueError:
        pass
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        try:
            block: JSON = json.loads(text[start:end + 1])
            return block
        except ValueError:
            pass
    raise ValueError(f"answer is not JSON: {text[:80]!r}")
