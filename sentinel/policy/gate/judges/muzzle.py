"""Judge calls of a Sentinel run, sent through Muzzle like every other model call of the run.

Muzzle names models `provider/model`, so a judge backend `ollama` asking for `gemma3:4b` becomes
`ollama/gemma3:4b` on Muzzle's OpenAI-compatible endpoint (json_schema strict), authenticated
with the run's token. Backends Muzzle cannot stand in for keep their own path: the claude/copilot
CLIs (subprocesses of their own) and any backend the gate config points at an explicit
`backends.<name>.url`, which Muzzle's providers know nothing of.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sentinel.policy.gate.judges import JudgeBackend, Judges, Request
from sentinel.policy.gate.judges.openai_compat import OpenAIJudge

if TYPE_CHECKING:
    from sentinel.policy.gate.config import GateConfig

CLI_BACKENDS = ("claude", "copilot")


# Gate backends whose default endpoint is the one Muzzle's built-in provider of that name uses.
DEFAULT_URLS = {"ollama": "http://localhost:11434"}


def routable(cfg: GateConfig, backend: str) -> bool:
    url = (cfg.backend_settings(backend).get("url") or "").rstrip("/")
    return backend not in CLI_BACKENDS and (not url or url == DEFAULT_URLS.get(backend))


class MuzzleJudge(OpenAIJudge):
    # an instance method where the base has a static one (it needs the backend's name), hence the ignore
    # untyped: the openai client's request fields, as in OpenAIJudge.kwargs
    def kwargs(self, request: Request) -> dict[str, Any]:  # type: ignore[override]
        return {**OpenAIJudge.kwargs(request), "model": f"{self.name}/{request.model}"}


class MuzzleJudges(Judges):
    def __init__(self, cfg: GateConfig, base_url: str, token: str):
        super().__init__(cfg, None)
        self.base_url = base_url
        self.token = token

    def _build(self, name: str) -> JudgeBackend:
        if not routable(self.cfg, name):
            return super()._build(name)
        return MuzzleJudge(name, self.base_url, self.token)
