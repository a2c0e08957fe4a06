"""Gate config: every seed 000 key and default, backward compatibility, one-line errors naming file and field."""

from __future__ import annotations

import pytest

from sentinel.config import Config, load
from sentinel.errors import ConfigError
from sentinel.policy.gate.config import GateConfig
from sentinel.policy.gate.loader import default_settings, load_repo
from sentinel.policy.settings import DEFAULT_TOOL_MAP, GateSettings

SEED_DEFAULTS = {
    "backend": "ollama", "model": "gemma3:4b", "timeout_ms": 5000, "confidence_threshold": 0.7, "max_parallel": 4,
    "ollama_concurrency": 1, "think": False, "fail_open": True, "content_max_chars": 800, "log_file": None,
    "rules_dir": "rules", "mcp_prefix": "mcp__", "mcp_separator": "__",
}


def test_every_seed_default():
    d = GateSettings().model_dump()
    for key, value in SEED_DEFAULTS.items():
        assert d[key] == value, key
    assert d["backends"]["ollama"]["url"] == "http://localhost:11434"
    assert d["backends"]["claude"]["model"] == "haiku"
    assert d["backends"]["copilot"]["model"] == "gpt-5-mini"
    assert d["context"] == {"enabled": True, "backend": None, "model": "gemma3:4b", "min_events": 3,
                            "lock_timeout_s": 30, "summary_max_words": 150}
    s = d["scribe"]
    assert (s["enabled"], s["model"], s["guidance"], s["think"], s["temperature"]) == (True, None, None, False, 0.1)
    assert (s["extraction_timeout_ms"], s["extraction_num_predict"]) == (15000, 1000)
    assert (s["synthesis_timeout_ms"], s["synthesis_num_predict"], s["transcript_budget_chars"]) == (15000, 1000, 4000)
    assert s["thresholds"] == {"extraction_confidence": 0.7, "draft_confidence": 0.8}
    assert s["sources"] == {"documentation": True} and s["notification"] == {"max_age_days": 7}
    assert s["doc_globs"] == ["CLAUDE.md", "AGENTS.md", "README.md", "docs/**/*.md", "ADR*.md"]


def test_default_tool_map_covers_the_seed_agents():
    for name in ("Write", "Edit", "MultiEdit", "NotebookEdit", "create_file", "replace_string_in_file",
                 "multi_replace_string_in_file", "edit_file", "write_to_file", "replace_in_file", "fs_write"):
        assert DEFAULT_TOOL_MAP[name] == "file_write", name
    for name in ("Bash", "run_in_terminal", "run_terminal_cmd", "run_command", "execute_command", "execute_bash"):
        assert DEFAULT_TOOL_MAP[name] == "bash", name


def test_custom_tool_map_replaces_defaults():
    d = GateSettings(tool_map={"my_write": "file_write"}).model_dump()
    assert d["tool_map"] == {"my_write": "file_write"}


def test_backward_compatible_ollama_url_without_backends():
    d = GateSettings.model_validate({"ollama_url": "http://gpu:11434", "model": "qwen3:4b"}).model_dump()
    assert d["backends"]["ollama"]["url"] == "http://gpu:11434"
    cfg = GateConfig(d)
    assert cfg.model_for("ollama") == "qwen3:4b"
    assert cfg.model_for("claude") == "haiku" and cfg.model_for("claude", "sonnet") == "sonnet"


def test_named_openai_backend_accepts_base_url():
    d = GateSettings.model_validate({"backends": {"vllm": {"base_url": "http://v:8000/v1", "model": "m"}}}).model_dump()
    assert d["backends"]["vllm"]["url"] == "http://v:8000/v1"
    assert d["backends"]["ollama"]["url"] == "http://localhost:11434"  # defaults kept


def test_scribe_model_resolution_order():
    cfg = GateConfig(GateSettings.model_validate({"model": "top", "scribe": {"model": "sm",
                                                                                  "synthesis_model": "syn"}}).model_dump())
    assert cfg.scribe_model("synthesis") == "syn" and cfg.scribe_model("extraction") == "sm"
    assert GateConfig(GateSettings(model="top").model_dump()).scribe_model("extraction") == "top"


@pytest.mark.parametrize("text,field", [
    ("timeout_ms: soon\n", "timeout_ms"),
    ("confidence_threshold: 2\n", "confidence_threshold"),
    ("context:\n  min_events: zero\n", "context.min_events"),
    ("scribe:\n  thresholds:\n    draft_confidence: 5\n", "scribe.thresholds.draft_confidence"),
    ("tool_map:\n  Foo: delete\n", "tool_map.Foo"),
    ("bogus_key: 1\n", "bogus_key"),
])
def test_invalid_repo_config_is_one_line_naming_file_and_field(repo, text, field):
    root = repo({"r": {"trigger": "bash", "prompt": "p"}})
    (root / ".claude/sentinel/config.yaml").write_text(text)
    bundle = load_repo(str(root))
    assert bundle.config_error is not None
    assert "\n" not in bundle.config_error
    assert bundle.config_error.startswith(str(root / ".claude/sentinel/config.yaml"))
    assert field in bundle.config_error


def test_yaml_syntax_error_names_line(repo):
    root = repo({})
    (root / ".claude/sentinel/config.yaml").write_text("a: [1,\n b: 2\n")
    err = load_repo(str(root)).config_error
    assert "invalid YAML" in err and "line" in err


def test_gate_section_of_sentinel_config(sentinel_home):
    (sentinel_home / "config.yaml").write_text("gate:\n  max_parallel: 0\n")
    with pytest.raises(ConfigError) as exc:
        load()
    assert "gate.max_parallel" in str(exc.value) and "config.yaml" in str(exc.value)
    assert Config(gate={"backend": "claude"}).gate.backend == "claude"


def test_settings_defaults_are_the_runtime_defaults():
    assert default_settings() == GateSettings().model_dump()


def _keys(typed_dict) -> set[str]:
    return set(typed_dict.__required_keys__) | set(typed_dict.__optional_keys__)


def test_the_cached_dump_has_every_setting_the_gate_reads(tmp_path):
    """The hook runs on the JSON dump of the validated settings (typed by GateDump and sentinel.policy.gate.dump):
    a setting added to the pydantic models and not to the dump's shape (or the other way round) fails here."""
    from sentinel.policy.gate import dump
    from sentinel.policy.gate.loader import compile_repo
    from sentinel.policy.gate.schema import RuleSpec
    from sentinel.policy import settings as s

    pairs = [(GateSettings, s.GateDump), (s.BackendSettings, s.BackendDump), (s.ContextSettings, s.ContextDump),
             (s.ScribeSettings, s.ScribeDump), (s.ScribeThresholds, s.ScribeThresholdsDump),
             (s.ScribeSources, s.ScribeSourcesDump), (s.ScribeNotification, s.ScribeNotificationDump)]
    for model, shape in pairs:
        assert set(model.model_fields) == _keys(shape), model.__name__
    settings = GateSettings().dump()
    assert set(settings) == _keys(s.GateDump) and set(settings["scribe"]) == _keys(s.ScribeDump)
    assert set(RuleSpec.model_fields) | {"source", "scope_c", "exclude_c", "warnings", "known_only"} == _keys(dump.RuleDump)
    rules = tmp_path / ".claude" / "sentinel" / "rules"
    rules.mkdir(parents=True)
    (rules / "r.yaml").write_text("trigger: bash\nscope: [rm *]\nprompt: no deleting\n")
    cache = compile_repo(str(tmp_path))
    assert set(cache) == _keys(dump.CacheDump) and set(cache["paths"]) == _keys(dump.PathsDump)
    # warnings move to the bundle; known_only is the built-in rule's (sentinel.policy.gate.own), never cached
    assert set(cache["rules"][0]) | {"warnings", "known_only"} == _keys(dump.RuleDump)
    assert set(cache["rules"][0]["scope_c"][0]) == {"p", "c", "f", "r"} <= _keys(dump.PatternDump)
