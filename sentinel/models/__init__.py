"""Model backends, named `provider/model`, resolved lazily.

    resolve(name, config)   the backend itself (used by Muzzle as the upstream)

The client a run uses (through Muzzle) is `sentinel.muzzle.model_for_run`: models never import Muzzle.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sentinel.errors import UsageError
from sentinel.models.base import Completion, ModelClient, ModelError, ModelUnavailable, ToolCall

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.models.hosts import HostedModel

__all__ = ["Completion", "ModelClient", "ModelError", "ModelUnavailable", "ToolCall", "resolve", "hosted", "split"]


def split(name: str) -> tuple[str, str]:
    provider, sep, model = name.partition("/")
    if not sep or not provider or not model:
        raise UsageError(f"model {name!r}: expected provider/model, e.g. local/qwen2.5-coder-1.5b or ollama/qwen3:4b")
    return provider, model


def script_path(model: str) -> Path:
    from sentinel import paths

    for candidate in (Path(model).expanduser(), paths.home() / "scripts" / model,
                      paths.home() / "scripts" / f"{model}.yaml"):
        if candidate.is_file():
            return candidate
    raise UsageError(f"model scripted/{model}: no script file {model!r} (relative to the current directory "
                     f"or {paths.home() / 'scripts'})")


def api_key(provider_cfg: object) -> str | None:
    env = getattr(provider_cfg, "api_key_env", None)
    if env and os.environ.get(env):
        return os.environ[env]
    key_file = getattr(provider_cfg, "api_key_file", None)
    if key_file and Path(key_file).is_file():
        return Path(key_file).read_text().strip()
    return None


def resolve(name: str, config: "Config") -> ModelClient:
    provider, model = split(name)
    if provider == "local":
        return hosted(name, model, config)
    if provider == "scripted":
        from sentinel.models.scripted import ScriptedModel

        return ScriptedModel(name, script_path(model))
    cfg = config.provider(provider)
    if cfg is None:
        known = sorted({"local", "scripted", "ollama", "openai", "openrouter", *config.providers})
        raise UsageError(f"model {name!r}: unknown provider {provider!r} (known: {', '.join(known)})")
    from sentinel.models.openai_compat import OpenAICompatClient

    return OpenAICompatClient(name, model, cfg.base_url, api_key(cfg), timeout_s=config.limits.model_timeout_s)


def hosted(name: str, model: str, config: "Config") -> "HostedModel":
    """`local/<model>` served by its model host under $SENTINEL_HOME/state (the caller has no Muzzle)."""
    from sentinel import paths
    from sentinel.models.hosts import HostedModel, Hosts

    hosts = Hosts(paths.state_dir(), config.local, load_timeout_s=config.limits.model_timeout_s)
    return HostedModel(name, model, hosts, timeout_s=config.limits.model_timeout_s)

