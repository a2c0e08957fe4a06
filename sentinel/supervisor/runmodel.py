"""A system-mode run's model, fixed when the run starts: the operator's config decides what may be used, the
run (`--model`) or the agent's profile chooses among it.

    choose(config, agent, profile, requested, home, uid) -> "ollama/qwen3:4b"

Order: `--model`, else the profile's `model` (the agent's own file: a choice, never a grant), else the
operator's default for that agent. Whatever is chosen must be allowed by `system.models` (and the agent's
own list under `system.agents`) and name a configured provider; otherwise one line says which file or
flag to change. The run token then names exactly this model and the operator's judge models.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sentinel.errors import UsageError
from sentinel.supervisor import agentfs, layout

if TYPE_CHECKING:
    from sentinel.config import Config

PROFILE_BYTES = 64 * 1024  # a profile is a few lines; root parses no more of an agent's file than this


def choose(config: "Config", agent: str, profile: str, requested: str | None, home: str, uid: int) -> str:
    where = layout.etc_dir() / "config.yaml"
    if requested:
        allowed(config, agent, requested, f"--model: {requested}")
        return requested
    chosen = profile_model(home, profile, uid)
    if chosen:
        allowed(config, agent, chosen, f"agent {agent}: its profile agents/{profile}.yaml asks for model {chosen}")
        return chosen
    default = config.system.default_for(agent, config.default_model)
    allowed(config, agent, default, f"{where}: the default model {default} of agent {agent}")
    return default


def allowed(config: "Config", agent: str, model: str, what: str) -> None:
    from sentinel.models import split

    try:
        provider, _ = split(model)
    except UsageError as exc:
        raise UsageError(f"{what}: {exc}") from None
    where = layout.etc_dir() / "config.yaml"
    if not config.system.allows(agent, config.default_model, model):
        lists = " and ".join(", ".join(p) for p in config.system.allowed(agent, config.default_model))
        raise UsageError(f"{what}, which {where} does not allow for it (allowed: {lists}; see system.models)")
    if provider != "local" and config.provider(provider) is None:
        raise UsageError(f"{what}, whose provider {provider!r} is not configured in {where} (providers:)")
    if provider == "local":
        from sentinel.models.weights import check_name

        try:
            check_name(model.partition("/")[2], config.muzzle.local_models)
        except UsageError as exc:
            raise UsageError(f"{what}: {exc}") from None


def profile_model(home: str, profile: str, uid: int) -> str | None:
    """The `model` an agent's profile names, read as root without following anything the agent planted;
    None when it names none or the file is missing or unreadable (the worker then reports the profile)."""
    model = _profile(home, profile, uid).get("model")
    return model if isinstance(model, str) and model else None


def profile_mcp(home: str, profile: str, uid: int) -> list[str]:
    """The MCP servers an agent's profile names (`mcp:`), read the same way; none when unreadable."""
    names = _profile(home, profile, uid).get("mcp")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def _profile(home: str, profile: str, uid: int) -> dict[object, object]:
    import yaml

    fd = agentfs.open_beneath(home, f".sentinel/agents/{profile}.yaml", uid)
    if fd is None:
        return {}
    with os.fdopen(fd, "rb") as f:
        text = f.read(PROFILE_BYTES + 1)
    if len(text) > PROFILE_BYTES:
        return {}
    try:
        data = yaml.safe_load(text)  # the agent's own YAML: narrowed to a mapping below
    except Exception:  # noqa: BLE001 - the agent's own file: a broken one is no choice, never a crash
        return {}
    return data if isinstance(data, dict) else {}
