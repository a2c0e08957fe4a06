"""The scripted model: replays a YAML script in-process (tests and demos; never a default)."""

from __future__ import annotations

import time
from pathlib import Path
import sentinel.models.script as script
from sentinel.jsontypes import JSONObject
from sentinel.models.base import Completion, ModelError, OnDelta, OnProgress


class ScriptedModel:
    def __init__(self, name: str, path: Path):
        self.name = name
        self.replies = script.load(path)

    def complete(self, messages: list[JSONObject], tools: list[JSONObject], *,
                 on_delta: OnDelta | None = None, on_progress: OnProgress | None = None) -> Completion:
        """Answers whole (it never streams): `on_delta` gets the text at once, `on_progress` is never called."""
        turn, reply = script.pick(self.replies, messages)
        if reply.delay_ms:
            time.sleep(reply.delay_ms / 1000)
        if reply.error:
            raise ModelError(f"model {self.name}: scripted error: {reply.error.message}")
        if reply.raw is not None:
            return Completion(content=reply.raw, model=self.name)
        if on_delta and reply.content:
            on_delta(reply.content)
        return Completion(reply.content, reply.calls_with_ids(turn), {"prompt_tokens": 0, "completion_tokens": 0}, self.name)
