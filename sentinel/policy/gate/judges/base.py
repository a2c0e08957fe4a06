"""What every judge backend shares: the request, the error and the backend protocol.

Backends import these from here (not from the package) so the package's factory can
import the backends without an import cycle.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Protocol


class JudgeError(Exception):
    """A judge call failed: unreachable, timed out, or answered with something unusable."""


class Request:
    __slots__ = ("system", "user", "schema", "model", "timeout_s", "temperature", "max_tokens", "think")

    def __init__(self, system: str, user: str, schema: dict[str, Any], model: str, *, timeout_s: float = 5.0,
                 temperature: float = 0.0, max_tokens: int = 200, think: bool = False):
        self.system = system
        self.user = user
        self.schema = schema
        self.model = model
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.think = think

    def messages(self) -> list[dict[str, str]]:
        out = [{"role": "system", "content": self.system}] if self.system else []
        return out + [{"role": "user", "content": self.user}]


class JudgeBackend(Protocol):
    name: str
    gpu: bool  # shares a local GPU: takes part in the priority lock

    def complete(self, request: Request) -> dict[str, Any]: ...


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
