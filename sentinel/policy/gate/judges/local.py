"""The embedded local model (`local/...`): llama.cpp in-process, answers constrained by a grammar
built from the JSON schema (llama-cpp-python's `response_format` with a `schema`).

llama.cpp contexts are not thread-safe: calls are serialised, and the backend takes
part in the priority lock like Ollama (it shares the machine's accelerator).
"""

from __future__ import annotations

import threading
from typing import Any

from sentinel.policy.gate.judges.base import JudgeError, Request
from sentinel.policy.gate.prompts import parse_json_text

_LOCK = threading.Lock()


class LocalJudge:
    gpu = True
    name = "local"

    def complete(self, request: Request) -> dict[str, Any]:
        from sentinel.models.base import ModelError
        from sentinel.models.local import LocalModel

        model = LocalModel(f"local/{request.model}", request.model, max_tokens=request.max_tokens,
                           temperature=request.temperature)
        fmt = {"type": "json_object", "schema": request.schema["schema"]}
        try:
            with _LOCK:
                out = model.complete(request.messages(), [], response_format=fmt)
        except ModelError as exc:
            raise JudgeError(str(exc)) from None
        try:
            return parse_json_text(out.content)
        except ValueError as exc:
            raise JudgeError(f"local/{request.model}: {exc}") from None
