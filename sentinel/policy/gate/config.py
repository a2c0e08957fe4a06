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
    from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
BUILTIN_MODELS = {"claude": "haiku", "copilot": "gpt-5-mini"}


class GateConfig:
    """Attribute access over the settings dump: cfg.timeout_ms, cfg.context["min_events"], ..."""

    def __init__(self, data: dict[str, Any]):
        self.data = data

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["data"][name]
        except KeyError:
            raise AttributeError(name) from None

    def backend_settings(self, name: str) -> dict[str, Any]:
        return (self.data.get("backends") or {}).get(name) or {}

    def model_for(self, backend: str, override: str | None = None) -> str:
        """rule.model -> backends.<name>.model -> built-in CLI default -> top-level model."""
        if override:
            return override
        configured = self.backend_settings(backend).get("model")
        return configured or BUILTIN_MODELS.get(backend) or self.data["model"]

    def scribe_model(self, step: str) -> str:
        """scribe.<step>_model -> scribe.model -> top-level model -> gemma3:4b."""
        scribe = self.data.get("scribe") or {}
        return scribe.get(f"{step}_model") or scribe.get("model") or self.data.get("model") or "gemma3:4b"


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

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GatePaths":
        return cls(**data)


def log_path(config_dir: str, log_file: Any, default_name: str) -> str | None:
    """log_file: null -> <config_dir>/<default_name>; false or "" -> off; a path (relative to config_dir)."""
    if log_file is False or log_file == "":
        return None
    if not log_file:
        return os.path.join(config_dir, default_name)
    return os.path.join(config_dir, os.path.expanduser(str(log_file)))


def repo_paths(root: str, cfg: dict[str, Any]) -> GatePaths:
    """The gate's repository layout (docs/gate.md): .claude/sentinel/{config.yaml,rules/,drafts/,sentinel.log}, .sentinel/."""
    config_dir = os.path.join(root, ".claude", "sentinel")
    return GatePaths(config_dir=config_dir, state_dir=os.path.join(root, ".sentinel"),
                     rules_dirs=[os.path.join(config_dir, cfg.get("rules_dir") or "rules")],
                     log_file=log_path(config_dir, cfg.get("log_file"), "sentinel.log"),
                     drafts_dir=os.path.join(config_dir, "drafts"), root=root)


def home_paths(home: str, cfg: dict[str, Any], system_rules: str | None = None) -> GatePaths:
    """Sentinel's own runs: $SENTINEL_HOME/rules (after /etc/sentinel/rules in system mode), gate/ state."""
    state = os.path.join(home, "gate")
    dirs = [system_rules] if system_rules else []
    dirs.append(os.path.join(home, cfg.get("rules_dir") or "rules"))
    return GatePaths(config_dir=home, state_dir=state, rules_dirs=dirs,
                     log_file=log_path(home, cfg.get("log_file"), os.path.join("gate", "sentinel.log")),
                     drafts_dir=os.path.join(state, "drafts"), root=None)
