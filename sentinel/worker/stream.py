"""What a model call in flight tells the run's listeners: it started, its text as it streams, how far it got.

    hooks = CallStream(run, model, step).hooks()     # emits ModelCallStarted now
    model.complete(messages, tools, **hooks)          # on_delta -> TextDelta, on_progress -> ModelProgress

All three events are transient (a live view's, never journaled); the call's end, with its token usage, is
the journal's `assistant` record. With no listener nothing is emitted and the client is given no hooks.
"""

from __future__ import annotations

import time
from typing import TypedDict

from sentinel.engine import events
from sentinel.engine.run import Run
from sentinel.models.base import OnDelta, OnProgress

PROGRESS_EVERY_S = 0.25  # a progress event at most this often: the count crosses the supervisor's socket


class Hooks(TypedDict, total=False):
    """The keyword arguments `ModelClient.complete` takes for a live view."""

    on_delta: OnDelta
    on_progress: OnProgress


class CallStream:
    def __init__(self, run: Run, model: str, step: int):
        self.run = run
        self.sent = 0.0  # when the last progress event went out
        run.emit(events.ModelCallStarted(**run.base(), t=time.time(), model=model, step=step))

    def hooks(self) -> Hooks:
        if not self.run.listeners:
            return {}
        return {"on_delta": self.delta, "on_progress": self.progress}

    def delta(self, text: str) -> None:
        self.run.emit(events.TextDelta(**self.run.base(), text=text))

    def progress(self, tokens: int) -> None:
        now = time.monotonic()
        if now - self.sent >= PROGRESS_EVERY_S:
            self.sent = now
            self.run.emit(events.ModelProgress(**self.run.base(), tokens=tokens))
