"""The operator's config decides which models and providers a run may use; the agent's profile chooses among
them; the run token names exactly the run's model. The agent's own config.yaml decides nothing for a
system-mode run (model, providers, policy, sandbox), and its profile's policy can only be stricter."""

from __future__ import annotations

import json
import pwd
from pathlib import Path

import pytest
import yaml

from sx_helpers import operator_config, own_config, serve_model, write_as

pytestmark = pytest.mark.root


def _profile(name: str, **fields) -> None:
    path = Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "agents" / f"{name}.yaml"
    write_as(name, path, yaml.safe_dump({"name": name, "soul": "default", **fields}))


def _grants(system) -> list[list[str]]:
    from sentinel.muzzle.tokens import TokenStore

    store = TokenStore.open(system.base / "muzzle" / "muzzle.db")
    try:
        return [row["models"] for row in store.list()]
    finally:
        store.close()


def test_the_agents_own_config_decides_nothing(system, make_agent, sentinel_cmd, supervisor, scripted_server):
    name = make_agent()
    server, evil = scripted_server(["from the operator's model"]), scripted_server(["from the agent's model"])
    serve_model(system.etc, server)
    own_config(name, {"default_model": "evil/x", "providers": {"evil": {"base_url": evil.base_url}},
                      "muzzle": {"enabled": False}, "sandbox": "best_effort", "limits": {"max_steps": 1000},
                      "policy": {"tools": {"bash": "auto"}}})
    supervisor()
    out = json.loads(sentinel_cmd("run", "hi", "--agent", name, "--json", check=4).stdout)
    assert out["output"] == "from the operator's model" and not evil.requests
    assert [r["model"] for r in server.requests] == ["m"]
    assert json.loads(sentinel_cmd("show", out["id"], "--json", check=0).stdout)["model"] == "fake/m"
    assert _grants(system) == [["fake/m"]]  # exactly the run's model, never "*"


def test_the_profile_chooses_among_what_the_operator_allows(system, make_agent, sentinel_cmd, supervisor,
                                                            scripted_server):
    name = make_agent()
    server = scripted_server(["chosen"])
    serve_model(system.etc, server, {"system": {"models": ["fake/*"]}})
    _profile(name, model="fake/big")
    supervisor()
    out = json.loads(sentinel_cmd("run", "hi", "--agent", name, "--json", check=4).stdout)
    assert out["output"] == "chosen" and [r["model"] for r in server.requests] == ["big"]
    assert _grants(system) == [["fake/big"]]
    flagged = json.loads(sentinel_cmd("run", "hi", "--agent", name, "--model", "fake/small", "--json", check=4).stdout)
    assert flagged["status"] == "done_unverified" and server.requests[-1]["model"] == "small"


def test_a_model_the_operator_does_not_allow_is_one_line(system, make_agent, sentinel_cmd, supervisor,
                                                         scripted_server):
    name = make_agent()
    serve_model(system.etc, scripted_server(["never"]),
                {"system": {"models": ["fake/*"], "agents": {name: {"models": ["fake/m"]}}}})
    supervisor()
    refused = sentinel_cmd("run", "hi", "--agent", name, "--model", "fake/other")
    assert refused.returncode == 2 and "--model: fake/other" in refused.stderr and "system.models" in refused.stderr
    _profile(name, model="openai/gpt-5")
    refused = sentinel_cmd("run", "hi", "--agent", name)
    [line] = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and f"agents/{name}.yaml asks for model openai/gpt-5" in line
    assert json.loads(sentinel_cmd("runs", "--json", check=0).stdout) == []  # nothing was started


def test_a_profile_policy_can_only_make_calls_stricter(system, make_agent, sentinel_cmd, supervisor, scripted_server):
    name = make_agent()
    calls = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
             {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran > ran.txt"}}]}, "done"]
    serve_model(system.etc, scripted_server(calls))
    _profile(name, policy={"default": "auto", "tools": {"bash": "auto", "write_file": "deny"},
                           "bash": {"default": "auto"}})
    supervisor()
    out = json.loads(sentinel_cmd("run", "hi", "--agent", name, "--json", check=3).stdout)  # bash still paused
    shown = json.loads(sentinel_cmd("show", out["id"], "--json", check=0).stdout)
    outcomes = {d["tool"]: d["outcome"] for d in shown["decisions"]}
    assert outcomes == {"write_file": "deny", "bash": "needs_approval"}
    ws = Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "workspace"
    assert not (ws / "a.txt").exists() and not (ws / "ran.txt").exists()


def test_operator_config_lists_models_per_agent(tmp_path):
    from sentinel.config import Config

    cfg = Config.model_validate({"default_model": "fake/m", "system": {
        "models": ["fake/*", "ollama/qwen3:4b"], "agents": {"ana": {"models": ["fake/m"], "default_model": "fake/m"}}}})
    assert cfg.system.allows("bob", cfg.default_model, "ollama/qwen3:4b")
    assert not cfg.system.allows("ana", cfg.default_model, "ollama/qwen3:4b")
    assert not cfg.system.allows("bob", cfg.default_model, "openai/gpt-5")
    assert Config().system.allows("x", "local/m", "local/m") and not Config().system.allows("x", "local/m", "local/n")
    operator_config(tmp_path, {"system": {"models": ["a/b"]}})
    assert yaml.safe_load((tmp_path / "config.yaml").read_text()) == {"system": {"models": ["a/b"]}}
