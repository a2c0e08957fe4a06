"""Agent profiles: `agents/<name>.yaml` plus a soul (`agents/<name>.soul.md` or a starter soul).

With no profile on disk, the agent is a default profile with the starter soul,
so a fresh $SENTINEL_HOME runs without any setup.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sentinel import paths
from sentinel.errors import ConfigError, NotFound, pydantic_detail

DEFAULT_AGENT = "sentinel"
NAME = re.compile(r"^[a-z0-9_][a-z0-9_-]{0,31}$")


class AgentProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    display_name: str | None = None
    model: str | None = Field(None, description="provider/model this agent uses; default_model otherwise.")
    soul: str = Field("default", description="Starter soul name in souls/ when no <name>.soul.md exists.")
    tools: list[str] | None = Field(None, description="Granted tools; all registered tools when absent.")
    skills: list[str] = Field(default_factory=list)
    memory: str | None = None
    mission: str | None = None
    policy: dict[str, Any] = Field(default_factory=dict, description="Overrides of the action policy.")


def agents_dir(home: Path | None = None) -> Path:
    return (home or paths.home()) / "agents"


def load(name: str | None, home: Path | None = None) -> AgentProfile:
    name = name or DEFAULT_AGENT
    path = agents_dir(home) / f"{name}.yaml"
    if not path.exists():
        if name == DEFAULT_AGENT:
            return AgentProfile(name=name, display_name="Sentinel")
        raise NotFound(f"no agent {name!r} (no {path})")
    from sentinel.config import read_yaml

    data = read_yaml(path) or {}
    if not isinstance(data, dict):
        raise ConfigError(path, "top level must be a mapping")
    data.setdefault("name", name)
    try:
        return AgentProfile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(path, pydantic_detail(exc)) from None


def soul_text(profile: AgentProfile, home: Path | None = None) -> str:
    own = agents_dir(home) / f"{profile.name}.soul.md"
    if own.is_file():
        return own.read_text()
    starter = paths.data_dir("souls") / f"{profile.soul}.md"
    if not starter.is_file():
        raise ConfigError(agents_dir(home) / f"{profile.name}.yaml", f"soul: no starter soul {profile.soul!r} in souls/")
    return starter.read_text()
