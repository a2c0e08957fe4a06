"""OpenAI response shapes: a sentinel Completion as a chat.completion, and a whole completion as stream chunks.

Used by Muzzle (in-process backends) and the model host, which both answer like an upstream.
"""

from __future__ import annotations

import time

from sentinel.jsontypes import JSON, JSONObject
from sentinel.models.base import Completion


def chunk_base(model: str) -> JSONObject:
    return {"id": f"chatcmpl-sentinel-{time.monotonic_ns():x}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}


def completion_dict(model: str, completion: Completion) -> JSONObject:
    """A sentinel Completion as an OpenAI chat.completion."""
    message: JSONObject = {"role": "assistant", "content": completion.content or None}
    if completion.tool_calls:
        message["tool_calls"] = [c.to_message() for c in completion.tool_calls]
    usage: JSONObject = dict(completion.usage or {})
    if usage:
        usage["total_tokens"] = completion.usage.get("prompt_tokens", 0) + completion.usage.get("completion_tokens", 0)
    return {"id": f"chatcmpl-sentinel-{time.monotonic_ns():x}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message,
                                         "finish_reason": "tool_calls" if completion.tool_calls else "stop"}],
            "usage": usage or None}


def _object(value: JSON) -> JSONObject:
    return value if isinstance(value, dict) else {}


def completion_to_chunks(data: JSONObject, *, skip_content: bool = False) -> list[JSONObject]:
    """A whole chat.completion as the chunks a stream of it would carry (role, content, calls, finish, usage)."""
    base: JSONObject = {**chunk_base(str(data.get("model", ""))), "id": data.get("id") or chunk_base("")["id"]}
    choices = data.get("choices")
    choice = _object(choices[0] if isinstance(choices, list) and choices else None)
    msg = _object(choice.get("message"))
    out: list[JSONObject] = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    if msg.get("content") and not skip_content:
        out.append({**base, "choices": [{"index": 0, "delta": {"content": msg["content"]}}]})
    calls = msg.get("tool_calls")
    for i, call in enumerate(calls if isinstance(calls, list) else []):
        out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [{**_object(call), "index": i}]}}]})
    out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason") or "stop"}]})
    if data.get("usage"):
        out.append({**base, "choices": [], "usage": data["usage"]})
    return out
