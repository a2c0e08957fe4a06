"""Judge backends without a network: claude/copilot CLIs (fake executables), the local model (stubbed
llama.cpp seam), name resolution, and the schema each one is given."""

from __future__ import annotations

import json
import os
import stat

import pytest

from sentinel.policy.gate.config import GateConfig
from sentinel.policy.gate.judges import GUARD_ENV, JudgeError, Judges, Request
from sentinel.policy.gate.prompts import VERDICT
from sentinel.policy.settings import GateSettings


def fake_cli(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def judges(**settings):
    return Judges(GateConfig(GateSettings.model_validate(settings).model_dump()))


def req(model="haiku"):
    return Request("system text", "RULE: x", VERDICT, model, timeout_s=5)


def test_claude_cli_gets_schema_model_and_guard(tmp_path):
    record = tmp_path / "argv.txt"
    envelope = {"type": "result", "subtype": "success", "is_error": False, "result": "",
                "structured_output": {"violation": True, "confidence": 0.8, "reason": "r"}}
    cmd = fake_cli(tmp_path, "claude", f'printf "%s\\0" "$@" > {record}\nprintf "guard=%s" "${GUARD_ENV}" >> {record}\n'
                                       f"echo '{json.dumps(envelope)}'")
    backend = judges(backends={"claude": {"command": cmd}}).get("claude")
    assert backend.complete(req()) == {"violation": True, "confidence": 0.8, "reason": "r"}
    argv = record.read_text().split("\0")
    assert argv[0] == "-p" and "RULE: x" in argv[1]
    assert argv[argv.index("--model") + 1] == "haiku"
    assert json.loads(argv[argv.index("--json-schema") + 1])["required"] == ["reason", "violation", "confidence"]
    assert "guard=1" in argv


def test_claude_result_text_fallback_and_errors(tmp_path):
    envelope = {"type": "result", "result": 'Sure: {"violation": false, "confidence": 0.9, "reason": "ok"}'}
    cmd = fake_cli(tmp_path, "claude", f"echo '{json.dumps(envelope)}'")
    assert judges(backends={"claude": {"command": cmd}}).get("claude").complete(req())["reason"] == "ok"
    failing = fake_cli(tmp_path, "claude2", "echo 'not logged in' >&2; exit 1")
    with pytest.raises(JudgeError, match="exit 1: not logged in"):
        judges(backends={"claude": {"command": failing}}).get("claude").complete(req())
    with pytest.raises(JudgeError, match="cannot run"):
        judges(backends={"claude": {"command": str(tmp_path / "missing")}}).get("claude").complete(req())


def test_copilot_cli_text_answer(tmp_path):
    record = tmp_path / "argv.txt"
    cmd = fake_cli(tmp_path, "copilot", f'printf "%s\\0" "$@" > {record}\n'
                                        "echo 'Here you go:'; echo '{\"violation\": true, \"confidence\": 1, \"reason\": \"x\"}'")
    out = judges(backends={"copilot": {"command": cmd}}).get("copilot").complete(req("gpt-5-mini"))
    assert out["violation"] is True
    argv = record.read_text().split("\0")
    assert "-s" in argv and argv[argv.index("--model") + 1] == "gpt-5-mini"


def test_cli_timeout(tmp_path):
    cmd = fake_cli(tmp_path, "copilot", "sleep 5")
    r = req()
    r.timeout_s = 0.3
    with pytest.raises(JudgeError, match="within 0.3s"):
        judges(backends={"copilot": {"command": cmd}}).get("copilot").complete(r)


def test_local_backend_passes_schema_as_grammar(monkeypatch):
    from sentinel import models
    from sentinel.models.base import Completion

    seen = {}

    class FakeHosted:
        def __init__(self, name, model, config):
            seen.update(name=name)

        def complete(self, messages, tools, *, on_delta=None, response_format=None, max_tokens=None, temperature=None):
            seen.update(messages=messages, response_format=response_format, temperature=temperature)
            return Completion('{"violation": false, "confidence": 0.9, "reason": "fine"}')

    monkeypatch.setattr(models, "hosted", FakeHosted)
    out = judges().get("local").complete(req("smollm2-135m"))
    assert out["reason"] == "fine"
    assert seen["name"] == "local/smollm2-135m" and seen["temperature"] == 0.0
    assert seen["response_format"]["type"] == "json_object"
    assert seen["response_format"]["schema"]["required"] == ["reason", "violation", "confidence"]
    assert judges().get("local").gpu and judges().get("ollama").gpu and not judges().get("claude").gpu


def test_unknown_backend_and_provider_lookup():
    with pytest.raises(JudgeError, match="unknown judge backend 'nope'"):
        judges().get("nope")
    j = Judges(GateConfig(GateSettings().model_dump()), providers=lambda n: ("http://127.0.0.1:1/v1", "k") if n == "fake" else None)
    backend = j.get("fake")
    assert backend.base_url == "http://127.0.0.1:1/v1" and backend.api_key == "k"


def test_guard_env_name_is_stable():
    assert GUARD_ENV == "SENTINEL_GATE_JUDGE" and not os.environ.get(GUARD_ENV)


def test_openai_backend_retries_without_temperature_for_reasoning_models(judge):
    from sentinel.policy.gate.fakejudge import Failure

    def responder(body):
        if "temperature" in body:
            return Failure(400, "Unsupported value: 'temperature' does not support 0 with this model.")
        return {"violation": False, "confidence": 0.9, "reason": "ok"}

    j = judge(responder)
    backend = judges(backends={"gpt": {"url": j.base_url}}).get("gpt")
    assert backend.complete(req("gpt-5-mini"))["reason"] == "ok"
    assert ["temperature" in b for b in j.requests] == [True, False]
    assert [b["max_tokens"] for b in j.requests] == [req("gpt-5-mini").max_tokens] * 2  # every answer is bounded
    j2 = judge(lambda body: Failure(401, "bad key"))
    with pytest.raises(JudgeError, match="HTTP 401: bad key"):
        judges(backends={"gpt": {"url": j2.base_url}}).get("gpt").complete(req())


def test_cli_judge_runs_the_real_cli_from_root_without_loader_env(tmp_path, monkeypatch):
    """The hook's cwd is the agent's repository: a `bin/claude` there (a relative PATH entry), PYTHONPATH and
    NODE_OPTIONS pointing into it, never reach the judge; the CLI on PATH's absolute directories runs, from /."""
    repo, real, marker, record = tmp_path / "repo", tmp_path / "real", tmp_path / "SHADOW-RAN", tmp_path / "env.txt"
    (repo / "bin").mkdir(parents=True)
    real.mkdir()
    fake_cli(repo / "bin", "claude", f"touch {marker}")
    answer = {"type": "result", "result": '{"violation": false, "confidence": 0.9, "reason": "ok"}'}
    fake_cli(real, "claude", f'pwd > {record}; echo "py=$PYTHONPATH node=$NODE_OPTIONS" >> {record}\n'
                             f"echo '{json.dumps(answer)}'")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PATH", f"bin:{real}:{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(repo))
    monkeypatch.setenv("NODE_OPTIONS", f"--require {repo}/x.js")
    assert judges(backends={"claude": {"command": "claude"}}).get("claude").complete(req())["reason"] == "ok"
    assert not marker.exists()
    assert record.read_text().splitlines() == ["/", "py= node="]
    with pytest.raises(JudgeError, match="cannot run 'bin/claude'"):  # a relative command is the cwd's: refused
        judges(backends={"claude": {"command": "bin/claude"}}).get("claude").complete(req())
    assert not marker.exists()
