"""The rule gate's configuration (docs/gate.md): every key with its default, one pydantic model.

The same model validates `gate:` in `$SENTINEL_HOME/config.yaml` (Sentinel's own
runs) and `.claude/sentinel/config.yaml` in a repository (hooks for external
coding agents). The hook fast path never imports this module: it reads a JSON
cache of the validated dump (`sentinel.policy.gate.loader`).
"""

from __future__ import annotations

from typing import Literal, TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sentinel.jsontypes import JSON, JSONObject

Trigger = Literal["file_write", "bash", "mcp"]

# Tool name -> trigger for the agents the gate knows (docs/gate.md), plus Gemini CLI, Copilot CLI and Codex names.
# MCP names follow each agent's own naming (sentinel.hooks.agents); `apply_patch` is parsed per file.
DEFAULT_TOOL_MAP: dict[str, Trigger] = {
    # Claude Code (and Codex, Cursor's preToolUse)
    "Write": "file_write", "Edit": "file_write", "MultiEdit": "file_write", "NotebookEdit": "file_write",
    "Bash": "bash", "PowerShell": "bash",
    # Copilot (VS Code)
    "create_file": "file_write", "replace_string_in_file": "file_write",
    "multi_replace_string_in_file": "file_write", "run_in_terminal": "bash",
    # Copilot CLI
    "create": "file_write", "edit": "file_write", "str_replace": "file_write", "bash": "bash", "powershell": "bash",
    # Cursor
    "edit_file": "file_write", "run_terminal_cmd": "bash", "StrReplace": "file_write",
    # Windsurf
    "write_to_file": "file_write", "run_command": "bash",
    # Cline (classic, then 3.x; its apply_patch is parsed per file, like Codex's)
    "replace_in_file": "file_write", "execute_command": "bash", "run_commands": "bash", "editor": "file_write",
    # Amazon Q
    "fs_write": "file_write", "execute_bash": "bash",
    # Gemini CLI
    "write_file": "file_write", "replace": "file_write", "run_shell_command": "bash",
}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BackendSettings(_Section):
    """One judge backend. `ollama`, `claude`, `copilot` and `local` are built in; any other
    name is an OpenAI-compatible endpoint (or, in Sentinel's runs, a provider of config.yaml)."""

    url: str | None = Field(None, description="ollama: the native API root; other names: an OpenAI-compatible base_url.")
    model: str | None = Field(None, description="Default model of this backend.")
    api_key_env: str | None = Field(None, description="Environment variable holding the API key (OpenAI-compatible).")
    command: str | None = Field(None, description="CLI backends: the executable (default `claude` / `copilot`).")

    @model_validator(mode="before")
    @classmethod
    def _base_url_alias(cls, data: JSON) -> JSON:
        if isinstance(data, dict) and "base_url" in data and "url" not in data:
            data = {k: v for k, v in data.items() if k != "base_url"} | {"url": data["base_url"]}
        return data


def _default_backends() -> dict[str, BackendSettings]:
    return {"ollama": BackendSettings(url="http://localhost:11434"),
            "claude": BackendSettings(model="haiku"),
            "copilot": BackendSettings(model="gpt-5-mini")}


class ContextSettings(_Section):
    enabled: bool = Field(True, description="Run the session context accumulator on Stop.")
    backend: str | None = Field(None, description="Backend of the accumulator (default: the top-level backend).")
    model: str = Field("gemma3:4b", description="Model of the accumulator (can differ from the judge model).")
    min_events: int = Field(3, ge=1, description="New transcript events needed before the summary is updated.")
    lock_timeout_s: float = Field(30, ge=0, description="Seconds to wait for the GPU lock (ollama/local only).")
    summary_max_words: int = Field(150, ge=10, description="Word budget of the rolling session summary.")


class ScribeThresholds(_Section):
    extraction_confidence: float = Field(0.7, ge=0, le=1, description="Minimum confidence to store an observation.")
    draft_confidence: float = Field(0.8, ge=0, le=1, description="Minimum confidence for learn-mode drafts.")


class ScribeSources(_Section):
    documentation: bool = Field(True, description="Allow documentation scanning (`sentinel rules learn`).")


class ScribeNotification(_Section):
    max_age_days: int = Field(7, ge=0, description="Drafts older than this are no longer announced.")


class ScribeSettings(_Section):
    enabled: bool = Field(True, description="Run the scribe pipeline on Stop.")
    model: str | None = Field(None, description="Default model of every scribe step (default: top-level model).")
    extraction_model: str | None = Field(None, description="Model of extraction (reflect and learn).")
    synthesis_model: str | None = Field(None, description="Model of validation and synthesis.")
    guidance: str | None = Field(None, description="Priority guidance for extraction, e.g. 'focus on security'.")
    think: bool = Field(False, description="Thinking mode for validation and synthesis.")
    extraction_timeout_ms: int = Field(15000, ge=1, description="Timeout of extraction calls.")
    extraction_num_predict: int = Field(1000, ge=1, description="Max output tokens of extraction.")
    synthesis_timeout_ms: int = Field(15000, ge=1, description="Timeout of validation and synthesis calls.")
    synthesis_num_predict: int = Field(1000, ge=1, description="Max output tokens of validation and synthesis.")
    temperature: float = Field(0.1, ge=0, le=2, description="Temperature of every scribe call.")
    transcript_budget_chars: int = Field(4000, ge=200, description="Compacted transcript size before truncation.")
    thresholds: ScribeThresholds = Field(default_factory=ScribeThresholds)
    sources: ScribeSources = Field(default_factory=ScribeSources)
    doc_globs: list[str] = Field(default_factory=lambda: ["CLAUDE.md", "AGENTS.md", "README.md", "docs/**/*.md",
                                                          "ADR*.md"], description="Files scanned by learn.")
    notification: ScribeNotification = Field(default_factory=ScribeNotification)


class GateSettings(_Section):
    enabled: bool = Field(True, description="Sentinel's own runs: judge tool calls with the rules under $SENTINEL_HOME/rules.")
    backend: str = Field("ollama", description="Judge backend: ollama, claude, copilot, local or a named OpenAI-compatible backend.")
    model: str = Field("gemma3:4b", description="Default judge model (backend-specific).")
    backends: dict[str, BackendSettings] = Field(default_factory=_default_backends)
    ollama_url: str | None = Field(None, description="Backward compatibility: the Ollama URL when `backends` is absent.")
    timeout_ms: int = Field(5000, ge=1, description="Wall-clock deadline of one judge call, every byte of it.")
    deadline_ms: int = Field(20000, ge=1, description="Wall-clock deadline of all the judge calls of one action: the "
                                                      "decision is made by then (below the coding agents' 30 s hook "
                                                      "timeouts); a call still running is a failed call.")
    confidence_threshold: float = Field(0.7, ge=0, le=1, description="Minimum confidence to count a violation.")
    max_parallel: int = Field(4, ge=1, description="Concurrent judge calls.")
    ollama_concurrency: int = Field(1, ge=1, description="Concurrent Ollama/local calls (GPU-bound).")
    think: bool = Field(False, description="Thinking mode (slower, more accurate).")
    fail_open: bool = Field(True, description="On a judge error: true skips the rule, false applies its severity.")
    content_max_chars: int = Field(800, ge=1, description="File content truncation in prompts.")
    log_file: str | Literal[False] | None = Field(
        None, description="JSONL telemetry path, relative to the config directory (null: sentinel.log there; false: off).")
    rules_dir: str = Field("rules", description="Rules directory, relative to the config directory.")
    tool_map: dict[str, Trigger] = Field(default_factory=lambda: dict(DEFAULT_TOOL_MAP),
                                         description="Tool name -> trigger; a custom map replaces the defaults.")
    mcp_prefix: str = Field("mcp__", description="Prefix of MCP tool names.")
    mcp_separator: str = Field("__", min_length=1, description="Separator of server and tool in MCP tool names.")
    context: ContextSettings = Field(default_factory=ContextSettings)
    scribe: ScribeSettings = Field(default_factory=ScribeSettings)

    @model_validator(mode="before")
    @classmethod
    def _compat(cls, data: JSON) -> JSON:
        """Backward compatibility: top-level `ollama_url` feeds backends.ollama.url."""
        if not isinstance(data, dict):
            return data
        url = data.get("ollama_url")
        backends = data.get("backends")
        if backends is None:
            merged: JSONObject = {k: _backend_dump(v) for k, v in _default_backends().items()}
        elif isinstance(backends, dict):
            merged = {k: _backend_dump(v) for k, v in _default_backends().items()}
            for name, value in backends.items():
                base = merged.get(name)
                known = base if isinstance(base, dict) else {}
                merged[name] = {**known, **value} if isinstance(value, dict) else value
        else:
            return data
        ollama, given = merged.get("ollama"), backends.get("ollama") if isinstance(backends, dict) else None
        if url and isinstance(ollama, dict) and not (isinstance(given, dict) and given.get("url")):
            ollama["url"] = url
        return {**data, "backends": merged}

    @field_validator("backend")
    @classmethod
    def _backend_name(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a backend")
        return value

    def dump(self) -> GateDump:
        """The JSON-able dump the gate runs on (GateDump below; tests/policy/gate/test_gate_config.py pins it)."""
        return cast("GateDump", self.model_dump())


def _backend_dump(settings: BackendSettings) -> JSONObject:
    return {"url": settings.url, "model": settings.model, "api_key_env": settings.api_key_env,
            "command": settings.command}


# The dump of each model above as the gate runs on it (sentinel.policy.gate.config.GateConfig): the hook reads it
# back from the loader's JSON cache, without pydantic.

class BackendDump(TypedDict):
    url: str | None
    model: str | None
    api_key_env: str | None
    command: str | None


class ContextDump(TypedDict):
    enabled: bool
    backend: str | None
    model: str
    min_events: int
    lock_timeout_s: float
    summary_max_words: int


class ScribeThresholdsDump(TypedDict):
    extraction_confidence: float
    draft_confidence: float


class ScribeSourcesDump(TypedDict):
    documentation: bool


class ScribeNotificationDump(TypedDict):
    max_age_days: int


class ScribeDump(TypedDict):
    enabled: bool
    model: str | None
    extraction_model: str | None
    synthesis_model: str | None
    guidance: str | None
    think: bool
    extraction_timeout_ms: int
    extraction_num_predict: int
    synthesis_timeout_ms: int
    synthesis_num_predict: int
    temperature: float
    transcript_budget_chars: int
    thresholds: ScribeThresholdsDump
    sources: ScribeSourcesDump
    doc_globs: list[str]
    notification: ScribeNotificationDump


class GateDump(TypedDict):
    enabled: bool
    backend: str
    model: str
    backends: dict[str, BackendDump]
    ollama_url: str | None
    timeout_ms: int
    deadline_ms: int
    confidence_threshold: float
    max_parallel: int
    ollama_concurrency: int
    think: bool
    fail_open: bool
    content_max_chars: int
    log_file: str | Literal[False] | None
    rules_dir: str
    tool_map: dict[str, str]
    mcp_prefix: str
    mcp_separator: str
    context: ContextDump
    scribe: ScribeDump
