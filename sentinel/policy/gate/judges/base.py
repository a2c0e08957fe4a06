"""What every judge backend shares: the request, the error and the backend protocol.

Backends import these from here (not from the package) so the package's factory can
import the backends without an import cycle.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Protocol

from sentinel.jsontypes import JSON, JSONObject


class JudgeError(Exception):
    """A judge call failed: unreachable, timed out, or answered with something unusable."""


def past_deadline(name: str, request: "Request") -> JudgeError:
    return JudgeError(f"{name}: no complete answer within {round(request.timeout_s, 1):g}s (deadline)")


class Watchdog:
    """Calls `action` once at the request's deadline unless cancelled first: it cuts a connection a judge keeps
    trickling bytes on, so the call (and its thread) ends. `fired` tells the caller why its read failed."""

    def __init__(self, request: "Request", action: Callable[[], None]):
        self.fired = False
        self._action = action
        self._timer = threading.Timer(request.remaining(), self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        self.fired = True
        try:
            self._action()
        except Exception:  # the connection may be closing on its own; cutting it is best effort
            pass

    def __enter__(self) -> "Watchdog":
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


class Request:
    __slots__ = ("system", "user", "schema", "model", "timeout_s", "temperature", "max_tokens", "think", "deadline")

    def __init__(self, system: str, user: str, schema: JSONObject, model: str, *, timeout_s: float = 5.0,
                 temperature: float = 0.0, max_tokens: int = 200, think: bool = False):
        self.system = system
        self.user = user
        self.schema = schema
        self.model = model
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.think = think
        self.deadline: float | None = None  # time.monotonic() by which the whole call must have ended

    def start(self, cap: float | None = None) -> "Request":
        """Start the clock: the whole call, every byte of it, must end within `timeout_s` from now, and by `cap`
        (a time.monotonic() value: the deadline of the decision it serves) when that comes first."""
        self.deadline = time.monotonic() + self.timeout_s
        if cap is not None:
            self.deadline = min(self.deadline, cap)
        return self

    def remaining(self) -> float:
        """Seconds left before the deadline (the full timeout when the clock was never started)."""
        if self.deadline is None:
            return self.timeout_s
        return max(0.0, self.deadline - time.monotonic())

    def body_schema(self) -> JSONObject:
        """The JSON schema of the answer itself (`schema` names it: {"name": ..., "schema": {...}})."""
        body = self.schema.get("schema")
        return body if isinstance(body, dict) else {}

    def messages(self) -> list[JSONObject]:
        out: list[JSONObject] = [{"role": "system", "content": self.system}] if self.system else []
        return out + [{"role": "user", "content": self.user}]


class JudgeBackend(Protocol):
    name: str
    gpu: bool  # shares a local GPU: takes part in the priority lock

    def complete(self, request: Request) -> JSON: ...
    """The model's JSON answer, checked against the request's schema by the caller (prompts.check)."""


class JudgeSource(Protocol):
    """Backends by name (`Judges`, or Muzzle's `MuzzleJudges`, or a test's stand-in)."""

    def get(self, name: str) -> JudgeBackend: ...


# name -> (base_url, api_key) for OpenAI-compatible providers (Sentinel's config.yaml providers).
ProviderLookup = Callable[[str], "tuple[str, str | None] | None"]

_SEMAPHORES: dict[str, threading.BoundedSemaphore] = {}
_SEM_LOCK = threading.Lock()


def semaphore(key: str, size: int) -> threading.BoundedSemaphore:
    with _SEM_LOCK:
        sem = _SEMAPHORES.get(key)
        if sem is None:
            sem = _SEMAPHORES[key] = threading.BoundedSemaphore(max(1, size))
        return sem
