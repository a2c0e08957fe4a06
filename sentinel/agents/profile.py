"""Agent profiles: `agents/<name>.yaml` plus a soul (`agents/<name>.soul.md` or a starter soul).

    load(name, home)      -> AgentProfile    validated: schema, model, skills, tools, memory scope
    save(profile, home)                      write agents/<name>.yaml (atomically)
    create(name, ...)     -> AgentProfile    `sentinel agent create`
    names(home)           -> [str]           the profiles on disk
    soul_text(profile)    -> str             the agent's own soul, else its starter soul

A profile file:

    description: Finds and summarises sources
    model: ollama/qwen3:4b        # one of the configured models; default_model when absent
    soul: default                 # starter soul in souls/ used until agents/<name>.soul.md exists
    skills: [file-discipline]     # attached skills (skills/<name>/SKILL.md, bundled or the agent's own)
    tools: [read_file, remember]  # its grants; every registered tool when absent
    mcp: [files]                  # granted MCP servers of config.yaml `mcp_servers` (docs/mcp.md)
    memory: team                  # its memory scope; private (named after the agent) when absent

With no profile on disk, the default agent is a default profile with the starter soul, so a fresh
$SENTINEL_HOME runs without any setup. Any error is one ConfigError naming the file and the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from sentinel import paths
from sentinel.errors import ConfigError, NotFound, UsageError, validated
from sentinel.jsontypes import JSONObject

if TYPE_CHECKING:
    from sentinel.config import Config

DEFAULT_AGENT = "sentinel"
NAME = re.compile(r"^[a-z0-9_][a-z0-9_-]{0,31}$")


class AgentProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    display_name: str | None = None
    description: str | None = Field(None, description="What this agent is for (shown by `agent list`).")
    model: str | None = Field(None, description="provider/model this agent uses; default_model otherwise.")
    soul: str = Field("default", description="Starter soul name in souls/ when no <name>.soul.md exists.")
    tools: list[str] | None = Field(None, description="Granted tools; all registered tools when absent.")
    skills: list[str] = Field(default_factory=list, description="Attached skills, loaded into the system prompt.")
    memory: str | None = Field(None, description="Memory scope; private (the agent's name) when absent.")
    mission: str | None = None
    policy: dict[str, JsonValue] = Field(default_factory=dict, description="Overrides of the action policy.")
    mcp: list[str] = Field(default_factory=list, description="Granted MCP servers (config.yaml mcp_servers): "
                                                             "their tools are offered as mcp__<server>__<tool>.")

    @property
    def scope(self) -> str:
        """The memory scope: shared by every agent naming the same one."""
        return self.memory or self.name

    def public(self) -> JSONObject:
        return {**self.model_dump(exclude_none=True), "memory": self.scope}


def agents_dir(home: Path | None = None) -> Path:
    return (home or paths.home()) / "agents"


def profile_path(name: str, home: Path | None = None) -> Path:
    return agents_dir(home) / f"{name}.yaml"


def soul_path(name: str, home: Path | None = None) -> Path:
    return agents_dir(home) / f"{name}.soul.md"


def check_name(name: str, where: str = "NAME") -> str:
    if not NAME.match(name or ""):
        raise UsageError(f"{where} {name!r}: use 1-32 lowercase letters, digits, '_' or '-' (not starting with '-')")
    return name


# -- loading ----------------------------------------------------------------------------------------

def load(name: str | None, home: Path | None = None, *, check: bool = True,
         config: "Config | None" = None, check_model: bool = True) -> AgentProfile:
    """The profile `name` (the default agent when None), validated against what exists and against `config`
    (the configured models; default: the config of `home`). A system-mode worker passes the operator's
    settings and `check_model=False`: the supervisor fixed the run's model against the operator's models."""
    name = name or DEFAULT_AGENT
    check_name(name, "agent")
    path = profile_path(name, home)
    if not path.exists():
        if name == DEFAULT_AGENT:
            return AgentProfile(name=name, display_name="Sentinel")
        raise NotFound(f"no agent {name!r} (no {path}; create it with `sentinel agent create {name}`)")
    from sentinel.config import read_yaml

    data = read_yaml(path) or {}
    if isinstance(data, dict):
        data.setdefault("name", name)
    profile = validated(AgentProfile, data, path)
    if profile.name != name:
        raise ConfigError(path, f"name: {profile.name!r} does not match the file name {name!r}")
    if check:
        validate(profile, path, home, config, check_model=check_model)
    return profile


def validate(profile: AgentProfile, path: Path, home: Path | None = None, config: "Config | None" = None, *,
             check_model: bool = True) -> None:
    """Every reference in a profile names something that exists: a ConfigError for the first that does not."""
    from sentinel import config as config_mod
    from sentinel.memory.vault import SCOPE

    home = home or paths.home()
    given_config, config = config, config or config_mod.load(home)
    if profile.model is not None and check_model:
        problem = model_problem(profile.model, config)
        if problem:
            raise ConfigError(path, f"model: {problem}")
    if profile.memory is not None and not SCOPE.match(profile.memory):
        raise ConfigError(path, f"memory: {profile.memory!r} is not a scope name (lowercase letters, digits, _ or -)")
    starter = paths.data_dir("souls") / f"{profile.soul}.md"
    if not soul_path(profile.name, home).is_file() and not starter.is_file():
        raise ConfigError(path, f"soul: no starter soul {profile.soul!r} in souls/")
    from sentinel.agents import skills

    available = skills.names(home)
    for i, skill in enumerate(profile.skills):
        if skill not in available:
            raise ConfigError(path, f"skills[{i}]: no skill {skill!r} (available: {_listing(available)})")
    if profile.tools is not None:
        known = known_tools(home)
        for i, tool in enumerate(profile.tools):
            if tool not in known:
                raise ConfigError(path, f"tools[{i}]: no tool {tool!r} (available: {_listing(known)})")
    operators = given_config is None and beside_supervisor()  # the names may be the operator's, unseen here
    for i, server in enumerate(profile.mcp):
        if server not in config.mcp_servers and not operators:
            raise ConfigError(path, f"mcp[{i}]: no MCP server {server!r} in config.yaml mcp_servers "
                                    f"(configured: {_listing(list(config.mcp_servers))})")


def beside_supervisor() -> bool:
    """Is a system-mode supervisor running here? Its servers (config.yaml `mcp_servers` in /etc/sentinel) are
    the operator's, which an agent's own user cannot read: its profile's `mcp:` grants are checked by the
    supervisor's worker, against them, when a run starts."""
    from sentinel.client.paths import agent_socket_path, socket_path

    for path in (socket_path(), agent_socket_path()):
        try:
            if path.exists():
                return True
        except OSError:
            continue
    return False


def model_problem(model: str, config: "Config") -> str | None:
    """Why `model` is not one of the configured models, or None when it is."""
    provider, sep, rest = model.partition("/")
    if not sep or not provider or not rest:
        return f"{model!r} is not provider/model (e.g. local/smollm2-135m)"
    if provider == "local":
        from sentinel.models.weights import CATALOG

        known = {*CATALOG, *config.muzzle.local_models}
        if rest not in known and not rest.endswith(".gguf"):
            return (f"no local model {rest!r} (known: {', '.join(sorted(known))}, or a GGUF listed in "
                    "muzzle.local_models)")
        return None
    if provider == "scripted" or config.provider(provider) is not None:
        return None
    configured = sorted({"local", "scripted", "ollama", "openai", "openrouter", *config.providers})
    return f"unknown provider {provider!r} in {model!r} (configured: {', '.join(configured)})"


def known_tools(home: Path | None = None) -> set[str]:
    """Every tool name a profile may grant: built-ins, self-state tools and the agent user's authored tools."""
    from sentinel.agents import authored, naming
    from sentinel.tools.builtin import BUILTINS

    return ({t.name for t in BUILTINS} | set(naming.SELF_TOOLS) | set(naming.SKILL_TOOLS)
            | set(naming.AUTHORING_TOOLS) | set(naming.CHILD_TOOLS) | set(authored.names(home)))


def _listing(names: set[str] | list[str]) -> str:
    return ", ".join(sorted(names)) or "none"


def names(home: Path | None = None) -> list[str]:
    directory = agents_dir(home)
    if not directory.is_dir():
        return []
    return sorted(p.name[:-5] for p in directory.glob("*.yaml") if NAME.match(p.name[:-5]))


# -- writing ----------------------------------------------------------------------------------------

def save(profile: AgentProfile, home: Path | None = None, *, soul: str | None = None) -> Path:
    """Write the profile (and `soul`, its own soul file, first: the profile never names a soul not yet there)."""
    import yaml

    path = profile_path(profile.name, home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if soul is not None:
        paths.write_atomic(soul_path(profile.name, home), soul, 0o600)
    data = profile.model_dump(exclude_none=True, exclude_defaults=True)
    data = {"name": profile.name, **{k: v for k, v in data.items() if k != "name"}}
    paths.write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True), 0o600)
    return path


def create(name: str, *, home: Path | None = None, model: str | None = None, soul: Path | None = None,
           tools: list[str] | None = None, memory: str | None = None, description: str | None = None) -> AgentProfile:
    """A new profile (and its soul, copied from `soul`), validated before anything is written."""
    check_name(name)
    path = profile_path(name, home)
    if path.exists():
        raise UsageError(f"agent {name!r} already exists ({path}); edit it, or `sentinel agent set-model`")
    soul_text_new = _read_soul(soul) if soul is not None else None
    profile = AgentProfile(name=name, model=model, tools=tools, memory=memory, description=description)
    validate(profile, path, home)
    save(profile, home, soul=soul_text_new)
    return profile


def _read_soul(path: Path) -> str:
    from sentinel.memory.scan import scan

    try:
        text = path.expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--soul: cannot read {path} ({getattr(exc, 'strerror', None) or exc})") from None
    finding = scan(text)
    if finding:
        raise UsageError(f"--soul: {path} is flagged by the injection scanner ({finding})")
    return text


def update(name: str, home: Path | None = None, **changes: object) -> AgentProfile:
    """Load, change fields (any value: the profile is validated again), save (the default agent's profile file is
    created on first change)."""
    profile = load(name, home, check=False)
    changed = profile.model_copy(update=changes)
    changed = AgentProfile.model_validate(changed.model_dump())
    validate(changed, profile_path(changed.name, home), home)
    save(changed, home)
    return changed


# -- the soul ---------------------------------------------------------------------------------------

def soul_text(profile: AgentProfile, home: Path | None = None) -> str:
    own = soul_path(profile.name, home)
    if own.is_file():
        return own.read_text(encoding="utf-8", errors="replace")
    return starter_soul(profile, home)


def starter_soul(profile: AgentProfile, home: Path | None = None) -> str:
    starter = paths.data_dir("souls") / f"{profile.soul}.md"
    if not starter.is_file():
        raise ConfigError(profile_path(profile.name, home), f"soul: no starter soul {profile.soul!r} in souls/")
    return starter.read_text(encoding="utf-8")
