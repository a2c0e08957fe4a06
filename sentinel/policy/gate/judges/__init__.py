"""Judge backends: one constrained-JSON model call, behind a small seam.

    JudgeBackend.complete(request) -> dict      the model's JSON answer
    Judges(cfg, providers).get(name)            a backend by name, built lazily and cached

Built-in names: `ollama` (native /api/chat with `format` = the schema), `local`
(llama.cpp in-process, a grammar from the schema), `claude` and `copilot` (their
CLIs, as subprocesses guarded by SENTINEL_GATE_JUDGE so a judge call never re-enters
the hook). Any other name is an OpenAI-compatible endpoint (`response_format`
json_schema strict, official `openai` client imported only when called): either
`backends.<name>.url` of the gate config, or, in Sentinel's runs, a provider of
config.yaml. Sentinel can route model calls elsewhere (e.g. through Muzzle) by
passing its own `providers` lookup or its own factory. The request, the error and the
backend protocol live in `base.py` (re-exported here).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from sentinel.policy.gate import GUARD_ENV
from sentinel.policy.gate.judges.base import (JudgeBackend, JudgeError, JudgeSource, ProviderLookup, Request,
                                              semaphore)

if TYPE_CHECKING:
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.settings import BackendDump

__all__ = ["GUARD_ENV", "JudgeBackend", "JudgeError", "JudgeSource", "Judges", "ProviderLookup", "Request", "semaphore"]


class Judges:
    """Backends by name for one gate config; each is built on first use."""

    def __init__(self, cfg: GateConfig, providers: ProviderLookup | None = None):
        self.cfg = cfg
        self.providers = providers
        self._built: dict[str, JudgeBackend] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> JudgeBackend:
        with self._lock:
            if name not in self._built:
                self._built[name] = self._build(name)
            return self._built[name]

    def _build(self, name: str) -> JudgeBackend:
        settings = self.cfg.backend_settings(name)
        if name == "ollama":
            from sentinel.policy.gate.judges.ollama import OllamaJudge

            url = settings.get("url") or "http://localhost:11434"
            return OllamaJudge(url, semaphore(f"ollama:{url}:{self.cfg.ollama_concurrency}", self.cfg.ollama_concurrency))
        if name == "local":
            from sentinel.policy.gate.judges.local import LocalJudge

            return LocalJudge()
        if name in ("claude", "copilot"):
            from sentinel.policy.gate.judges.cli import CliJudge

            return CliJudge(name, settings.get("command") or name)
        return self._openai(name, settings)

    def _openai(self, name: str, settings: BackendDump) -> JudgeBackend:
        from sentinel.policy.gate.judges.openai_compat import OpenAIJudge

        url = settings.get("url")
        if url:
            env = settings.get("api_key_env")
            return OpenAIJudge(name, url, os.environ.get(env) if env else None)
        found = self.providers(name) if self.providers else None
        if found is None:
            raise JudgeError(f"unknown judge backend {name!r} (built in: ollama, local, claude, copilot; "
                             f"or set backends.{name}.url)")
        return OpenAIJudge(name, found[0], found[1])
