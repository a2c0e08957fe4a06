"""The embedded local model (`local/...`) in its model host, answers constrained by a grammar
built from the JSON schema (llama-cpp-python's `response_format` with a `schema`).

The host serves one call at a time; the backend takes part in the priority lock like
Ollama (it shares the machine's accelerator).
"""

from __future__ import annotations

import threading

from sentinel.jsontypes import JSON, JSONObject
from sentinel.policy.gate.judges.base import JudgeError, Request
from sentinel.policy.gate.prompts import parse_json_text

_LOCK = threading.Lock()


class LocalJudge:
    gpu = True
    name = "local"

    def complete(self, request: Request) -> JSON:
        from sentinel import config as config_mod
        from sentinel import models

        model = models.hosted(f"local/{request.model}", request.model, config_mod.load())
        fmt: JSONObject = {"type": "json_object", "schema": request.body_schema()}
        try:
            with _LOCK:
                out = model.complete(request.messages(), [], response_format=fmt, max_tokens=request.max_tokens,
                                     temperature=request.temperature)
        except models.ModelError as exc:
            raise JudgeError(str(exc)) from None
        try:
            return parse_json_text(out.content)
        except ValueError as exc:
            raise JudgeError(f"local/{request.model}: {exc}") from None
