"""Configuration: one pydantic model per component, loaded defaults -> config.yaml -> SENTINEL_* env.

Every validation failure becomes a ConfigError naming the file and the field.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from sentinel import paths
from sentinel.errors import ConfigError, validated
from sentinel.agents.settings import AuthoredToolSettings
from sentinel.leash.settings import LeashSettings
from sentinel.mcp.settings import McpServer, check_names
from sentinel.memory.settings import ContextSettings, MemorySettings
from sentinel.muzzle.settings import MuzzleSettings
from sentinel.notify.settings import Target
from sentinel.models.settings import LocalSettings
from sentinel.policy.settings import GateSettings
from sentinel.supervisor.settings import SystemSettings
from sentinel.web.settings import WebSettings
from sentinel.watchers.settings import WatcherSettings
from sentinel.workflows.settings import OrchestrationSettings

DEFAULT_MODEL = "local/qwen2.5-coder-1.5b"

BUILTIN_PROVIDERS: dict[str, dict[str, str | None]] = {
    "ollama": {"base_url": "http://localhost:11434/v1", "api_key_env": None},
    "openai": {"base_url": "https://api.openai.com/v1", "api_key_env": "OPENAI_API_KEY"},
    "openrouter": {"base_url": "https://openrouter.ai/api/v1", "api_key_env": "OPENROUTER_API_KEY"},
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Provider(_Strict):
    base_url: str = Field(description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    api_key_env: str | None = Field(None, description="Environment variable holding the API key.")
    api_key_file: str | None = Field(None, description="File holding the API key (read by Muzzle only).")


class Limits(_Strict):
    max_steps: int = Field(50, ge=1, description="Model calls per run before it fails.")
    max_wall_s: float = Field(1800.0, gt=0, description="Active seconds per run before it fails.")
    model_timeout_s: float = Field(300.0, gt=0, description="Seconds to wait for one model call.")


class ToolSettings(_Strict):
    bash_timeout_s: float = Field(120.0, gt=0, description="Default timeout of one bash call.")
    output_max_chars: int = Field(20000, ge=256, description="Tool output beyond this is truncated with a note.")
    authored: AuthoredToolSettings = Field(default_factory=AuthoredToolSettings,
                                           description="Limits of agent-authored tools and the operator's maxima.")


class SafeguardSettings(_Strict):
    draft_contract: Literal["local", "always", "never"] = Field(
        "local", description="Whether a task run's model drafts its contract in a first, schema-constrained call "
                             "(docs/safeguards.md), merged with the one derived from the task's words: local (on "
                             "local/* models, where a grammar constrains it), always, or never.")


class Config(_Strict):
    default_model: str = Field(DEFAULT_MODEL, description="provider/model used when a run names none.")
    default_agent: str | None = Field(None, description="Agent profile used when a run names none.")
    providers: dict[str, Provider] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    # untyped: YAML the operator wrote, read as the action policy's overrides (sentinel/policy/action_policy.py)
    policy: dict[str, Any] = Field(default_factory=dict, description="Overrides of the action policy.")
    sandbox: Literal["enforce", "best_effort"] = Field(
        "enforce", description="enforce: a sandbox layer that cannot be applied stops the launch."
    )
    muzzle: MuzzleSettings = Field(default_factory=MuzzleSettings)
    leash: LeashSettings = Field(default_factory=LeashSettings)
    gate: GateSettings = Field(default_factory=GateSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    system: SystemSettings = Field(default_factory=SystemSettings,
                                   description="System mode only (/etc/sentinel/config.yaml): the models runs may use.")
    local: LocalSettings = Field(default_factory=LocalSettings)
    safeguards: SafeguardSettings = Field(default_factory=SafeguardSettings,
                                          description="The agent loop's checks (docs/safeguards.md).")
    web: WebSettings = Field(default_factory=WebSettings)
    context: ContextSettings = Field(default_factory=ContextSettings,
                                     description="Compaction of long runs, the live session file, the curator.")
    watchers: WatcherSettings = Field(default_factory=WatcherSettings,
                                      description="Hook sessions and the relay (defaultHookModel, hookResponseTimeoutMs).")
    orchestration: OrchestrationSettings = Field(default_factory=OrchestrationSettings,
                                                 description="Delegation depth and temporary subagents.")
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict,
                                              description="MCP servers agents may be granted (docs/mcp.md).")

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_names(cls, value: dict[str, McpServer]) -> dict[str, McpServer]:
        check_names(value)
        return value
    notify: list[Target] = Field(default_factory=list,
                                 description="Where a person hears of approvals, finished runs and escalations.")
    store: str | None = Field(None, description="The supervisor's store: postgresql://USER@HOST/DB, shared by the "
                                                "supervisors of many hosts; default: SQLite under its state dir.")

    @field_validator("store")
    @classmethod
    def _store_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// URL (leave it out for the SQLite store)")
        return value

    def provider(self, name: str) -> Provider | None:
        if name in self.providers:
            return self.providers[name]
        builtin = BUILTIN_PROVIDERS.get(name)
        return Provider.model_validate(builtin) if builtin else None


def config_path(root: Path | None = None) -> Path:
    return (root or paths.home()) / "config.yaml"


class _Loader(yaml.SafeLoader):
    """YAML 1.1 reads the keys `on`, `off`, `yes`, `no` as booleans; Sentinel's config has keys named `on`
    (notify targets, Muzzle block rules): a mapping key keeps its text. Values are read as before."""

    # untyped: PyYAML's own signature (its nodes and values are untyped)
    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag == "tag:yaml.org,2002:bool" and not key.style \
                    and key.value.lower() in ("on", "off", "yes", "no", "y", "n"):
                key.tag = "tag:yaml.org,2002:str"
        return super().construct_mapping(node, deep)


# untyped: a YAML file's value, whatever its shape; each caller validates it (a pydantic model, isinstance)
def read_yaml(path: Path) -> Any:
    """Parse a YAML file; a syntax error becomes a one-line ConfigError with the line number."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(path, f"cannot read: {exc.strerror}") from None
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(path, f"{where}invalid YAML ({problem})") from None


def _env_overrides() -> dict[str, str]:
    out: dict[str, str] = {}
    if model := os.environ.get("SENTINEL_DEFAULT_MODEL"):
        out["default_model"] = model
    if agent := os.environ.get("SENTINEL_DEFAULT_AGENT"):
        out["default_agent"] = agent
    if sandbox := os.environ.get("SENTINEL_SANDBOX"):
        out["sandbox"] = sandbox
    return out


def load(root: Path | None = None) -> Config:
    path = config_path(root)
    data: object = read_yaml(path) if path.exists() else {}
    if data is None:
        data = {}
    if isinstance(data, dict):
        data.update(_env_overrides())
    return validated(Config, data, path)
