"""OpenAI response shapes: a sentinel Completion as a chat.completion, and a whole completion as stream chunks.

Used by Muzzle (in-process backends) and the model host, which both answer like an upstream.
"""

from __future__ import annotations

import time
from typing import Any


def chunk_base(model: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-sentinel-{time.monotonic_ns():x}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}


def completion_dict(model: str, completion: Any) -> dict[str, Any]:
    """A sentinel Completion as an OpenAI chat.completion."""
    message: dict[str, Any] = {"role": "assistant", "content": completion.content or None}
    if completion.tool_calls:
        message["tool_calls"] = [c.to_message() for c in completion.tool_calls]
    usage = dict(completion.usage or {})
    if usage:
        usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    return {"id": f"chatcmpl-sentinel-{time.monotonic_ns():x}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message,
                                         "finish_reason": "tool_calls" if completion.tool_calls else "stop"}],
            "usage": usage or None}


def completion_to_chunks(data: dict[str, Any], *, skip_content: bool = False) -> list[dict[str, Any]]:
    """A whole chat.completion as the chunks a stream of it would carry (role, content, calls, finish, usage)."""
    base = {**chunk_base(data.get("model", "")), "id": data.get("id") or chunk_base("")["id"]}
    choice = (data.get("choices") or [{}])[0]
    msg = choice.get("message") or {}
    out = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    if msg.get("content") and not skip_content:
        out.append({**base, "choices": [{"index": 0, "delta": {"content": msg["content"]}}]})
    for i, call in enumerate(msg.get("tool_calls") or []):
        out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [{**call, "index": i}]}}]})
    out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason") or "stop"}]})
    if data.get("usage"):
        out.append({**base, "choices": [], "usage": data["usage"]})
    return out
