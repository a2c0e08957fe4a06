"""The gate's runtime configuration and where its files live.

    GateConfig   a read-only view of a validated `GateSettings` dump (no pydantic at run time)
    GatePaths    rules, telemetry, sessions, drafts and scribe files for one gate home:
                 a repository (hooks) or $SENTINEL_HOME (Sentinel's own runs)

Defaults live in one place, `sentinel.policy.settings.GateSettings`; the hook reads its
dump from the loader's JSON cache.
"""

from __future__ import annotations

import os
import re
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    from sentinel.policy.gate.dump import PathsDump
    from sentinel.policy.settings import BackendDump, ContextDump, GateDump, ScribeDump

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
BUILTIN_MODELS = {"claude": "haiku", "copilot": "gpt-5-mini"}


class GateConfig:
    """Typed access to the settings dump: cfg.timeout_ms, cfg.context["min_events"], ..."""

    def __init__(self, data: GateDump):
        self.data = data

    @property
    def enabled(self) -> bool:
        return self.data["enabled"]

    @property
    def backend(self) -> str:
        return self.data["backend"]

    @property
    def model(self) -> str:
        return self.data["model"]

    @property
    def backends(self) -> dict[str, BackendDump]:
        return self.data["backends"]

    @property
    def ollama_url(self) -> str | None:
        return self.data["ollama_url"]

    @property
    def timeout_ms(self) -> int:
        return self.data["timeout_ms"]

    @property
    def deadline_ms(self) -> int:
        return self.data["deadline_ms"]

    @property
    def confidence_threshold(self) -> float:
        return self.data["confidence_threshold"]

    @property
    def max_parallel(self) -> int:
        return self.data["max_parallel"]

    @property
    def ollama_concurrency(self) -> int:
        return self.data["ollama_concurrency"]

    @property
    def think(self) -> bool:
        return self.data["think"]

    @property
    def fail_open(self) -> bool:
        return self.data["fail_open"]

    @property
    def content_max_chars(self) -> int:
        return self.data["content_max_chars"]

    @property
    def log_file(self) -> str | Literal[False] | None:
        return self.data["log_file"]

    @property
    def rules_dir(self) -> str:
        return self.data["rules_dir"]

    @property
    def tool_map(self) -> dict[str, str]:
        return self.data["tool_map"]

    @property
    def mcp_prefix(self) -> str:
        return self.data["mcp_prefix"]

    @property
    def mcp_separator(self) -> str:
        return self.data["mcp_separator"]

    @property
    def context(self) -> ContextDump:
        return self.data["context"]

    @property
    def scribe(self) -> ScribeDump:
        return self.data["scribe"]

    def backend_settings(self, name: str) -> BackendDump:
        found = (self.data.get("backends") or {}).get(name)
        return found or {"url": None, "model": None, "api_key_env": None, "command": None}

    def model_for(self, backend: str, override: str | None = None) -> str:
        """rule.model -> backends.<name>.model -> built-in CLI default -> top-level model."""
        if override:
            return override
        configured = self.backend_settings(backend).get("model")
        return configured or BUILTIN_MODELS.get(backend) or self.data["model"]

    def scribe_model(self, step: str) -> str:
        """scribe.<step>_model -> scribe.model -> top-level model -> gemma3:4b."""
        scribe = self.data["scribe"]
        step_model = scribe.get(f"{step}_model")
        chosen = step_model if isinstance(step_model, str) else None
        return chosen or scribe.get("model") or self.data.get("model") or "gemma3:4b"


class GatePaths:
    """Every file the gate reads or writes, for one config directory and one state root."""

    def __init__(self, config_dir: str, state_dir: str, rules_dirs: list[str], log_file: str | None,
                 drafts_dir: str, root: str | None = None):
        self.config_dir = config_dir
        self.state_dir = state_dir          # sessions/, scribe/, cache/
        self.rules_dirs = rules_dirs
        self.log_file = log_file
        self.drafts_dir = drafts_dir
        self.root = root                    # file paths are made relative to this

    @property
    def rules_dir(self) -> str:
        """Where promoted drafts go: the last (user-writable) rules directory."""
        return self.rules_dirs[-1]

    def session_dir(self, session_id: str) -> str:
        return os.path.join(self.state_dir, "sessions", _UNSAFE.sub("_", session_id or "default")[:128])

    def lock_file(self, session_id: str) -> str:
        return os.path.join(self.session_dir(session_id), "ollama.lock")

    @property
    def scribe_dir(self) -> str:
        return os.path.join(self.state_dir, "scribe")

    @property
    def cache_file(self) -> str:
        return os.path.join(self.state_dir, "cache", "gate.json")

    def to_dict(self) -> PathsDump:
        return {"config_dir": self.config_dir, "state_dir": self.state_dir, "rules_dirs": self.rules_dirs,
                "log_file": self.log_file, "drafts_dir": self.drafts_dir, "root": self.root}

    @classmethod
    def from_dict(cls, data: PathsDump) -> "GatePaths":
        return cls(**data)


def log_path(config_dir: str, log_file: str | bool | None, default_name: str) -> str | None:
    """log_file: null -> <config_dir>/<default_name>; false or "" -> off; a path (relative to config_dir)."""
    if log_file is False or log_file == "":
        return None
    if not log_file:
        return os.path.join(config_dir, default_name)
    return os.path.join(config_dir, os.path.expanduser(str(log_file)))


def repo_paths(root: str, cfg: GateDump) -> GatePaths:
    """The gate's repository layout (docs/gate.md): .claude/sentinel/{config.yaml,rules/,drafts/,sentinel.log}, .sentinel/."""
    config_dir = os.path.join(root, ".claude", "sentinel")
    return GatePaths(config_dir=config_dir, state_dir=os.path.join(root, ".sentinel"),
                     rules_dirs=[os.path.join(config_dir, cfg.get("rules_dir") or "rules")],
                     log_file=log_path(config_dir, cfg.get("log_file"), "sentinel.log"),
                     drafts_dir=os.path.join(config_dir, "drafts"), root=root)


def home_paths(home: str, cfg: GateDump, system_rules: str | None = None) -> GatePaths:
    """Sentinel's own runs: $SENTINEL_HOME/rules (after /etc/sentinel/rules in system mode), gate/ state."""
    state = os.path.join(home, "gate")
    dirs = [system_rules] if system_rules else []
    dirs.append(os.path.join(home, cfg.get("rules_dir") or "rules"))
    return GatePaths(config_dir=home, state_dir=state, rules_dirs=dirs,
                     log_file=log_path(home, cfg.get("log_file"), os.path.join("gate", "sentinel.log")),
                     drafts_dir=os.path.join(state, "drafts"), root=None)
