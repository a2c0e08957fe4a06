"""Every judge call ends: a judge that trickles a byte at a time (each socket read succeeds) is cut at its
deadline on every backend, and the decision is made then, skipped (fail_open) or blocked (strict)."""

from __future__ import annotations

import sys
import threading

import pytest

from sentinel.policy.gate import action as actions
from sentinel.policy.gate.engine import Gate
from sentinel.policy.gate.judges import Judges
from sentinel.policy.gate.judges.muzzle import MuzzleJudges
from sentinel.policy.gate.loader import load_repo

RULE = {"trigger": "file_write", "severity": "block", "scope": ["src/**"], "prompt": "FILE: {{file_path}}"}
GENEROUS_S = 60  # only a test timeout: the assertions are on the decision, never on elapsed time


def decide_in_thread(gate, root):
    """gate.pre on its own thread; returns (done event, holder of the verdict)."""
    done, out = threading.Event(), {}

    def run():
        out["verdict"] = gate.pre(actions.file_write("Write", {"file_path": str(root / "src/a.py"), "content": "x"})
                                  .locate(str(root)))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done, out


def gate_for(root, judges=None):
    bundle = load_repo(str(root))
    assert not bundle.errors and not bundle.config_error, (bundle.errors, bundle.config_error)
    return Gate(bundle.config, bundle.rules, bundle.paths, judges or Judges(bundle.config))


def backend_config(kind, j, tmp_path, configure):
    if kind == "ollama":
        return {"backend": "ollama", "backends": {"ollama": {"url": j.url}}}
    if kind == "openai":
        return {"backend": "lab", "model": "m", "backends": {"lab": {"url": j.base_url}}}
    script = tmp_path / "claude"  # a CLI judge that prints a byte every 0.2 s and never exits
    script.write_text(f"#!{sys.executable}\nimport sys, time\nwhile True:\n    sys.stdout.write('{{')\n"
                      "    sys.stdout.flush()\n    time.sleep(0.2)\n")
    script.chmod(0o755)
    configure({"gate": {"backends": {"claude": {"command": str(script)}}}})  # the user's, never the repository's
    return {"backend": "claude"}


@pytest.mark.parametrize("kind", ["ollama", "openai", "cli"])
@pytest.mark.parametrize("fail_open", [True, False])
def test_trickling_judge_is_decided_at_its_deadline(repo, judge, tmp_path, configure, kind, fail_open):
    j = judge({}, trickle_s=0.2)
    root = repo({"r": RULE}, {**backend_config(kind, j, tmp_path, configure), "timeout_ms": 1200,
                              "fail_open": fail_open})
    done, out = decide_in_thread(gate_for(root), root)
    assert done.wait(GENEROUS_S), "the decision never came"
    verdict = out["verdict"]
    if fail_open:
        assert not verdict.blocks and len(verdict.errors) == 1
        assert "rule r skipped" in verdict.errors[0] and "deadline" in verdict.errors[0]
    else:
        assert [f.rule_id for f in verdict.blocks] == ["r"] and "deadline" in verdict.blocks[0].reason
    if kind != "cli":
        assert len(j.requests) == 1  # it was really asked, and answered a byte at a time
        assert j.hung_up.wait(GENEROUS_S)  # the connection was cut: the judge's thread ends too


def test_a_trickling_judge_through_muzzle_is_cut_too(repo, judge):
    j = judge({}, trickle_s=0.2)
    root = repo({"r": RULE}, {"backend": "ollama", "timeout_ms": 1200, "fail_open": False})
    bundle = load_repo(str(root))
    gate = gate_for(root, MuzzleJudges(bundle.config, j.base_url, "token"))
    done, out = decide_in_thread(gate, root)
    assert done.wait(GENEROUS_S)
    assert out["verdict"].blocks and j.paths == ["/v1/chat/completions"]
    assert j.hung_up.wait(GENEROUS_S)


def test_the_action_deadline_caps_every_rule_of_one_action(repo, judge):
    """Eight rules, one at a time, each allowed 5 s: the action's deadline_ms still decides them all in time."""
    j = judge({}, trickle_s=0.2)
    rules = {f"r{n}": RULE for n in range(8)}
    root = repo(rules, {"backends": {"ollama": {"url": j.url}}, "timeout_ms": 5000, "deadline_ms": 1500,
                        "max_parallel": 1})
    done, out = decide_in_thread(gate_for(root), root)
    assert done.wait(GENEROUS_S)
    verdict = out["verdict"]
    assert len(verdict.errors) == 8 and not verdict.blocks
    assert len(j.requests) == 1  # the others never started: no time was left for them


def test_a_prompt_judge_still_answers(repo, judge):
    j = judge({"src/a.py": {"violation": True, "confidence": 0.9, "reason": "no"}})
    root = repo({"r": RULE}, {"backends": {"ollama": {"url": j.url}}, "timeout_ms": 1200})
    done, out = decide_in_thread(gate_for(root), root)
    assert done.wait(GENEROUS_S) and [f.reason for f in out["verdict"].blocks] == ["no"]


def test_deadline_is_a_setting_with_a_default_below_hook_timeouts():
    from sentinel.policy.settings import GateSettings

    assert GateSettings().deadline_ms == 20000 < 30000
    with pytest.raises(Exception, match="deadline_ms"):
        GateSettings.model_validate({"deadline_ms": 0})


class _Stuck:
    """An in-process judge (like the embedded local model) that never returns until released."""

    name, gpu = "local", True

    def __init__(self):
        self.release = threading.Event()
        self.called = threading.Event()

    def complete(self, request):
        self.called.set()
        self.release.wait()
        return {"violation": False, "confidence": 1.0, "reason": "late"}

    def get(self, name):
        return self


@pytest.mark.parametrize("fail_open", [True, False])
def test_a_judge_that_cannot_be_cut_still_leaves_the_decision_on_time(repo, fail_open):
    root = repo({"r": RULE}, {"backend": "local", "timeout_ms": 800, "fail_open": fail_open})
    stuck = _Stuck()
    try:
        done, out = decide_in_thread(gate_for(root, stuck), root)
        assert done.wait(GENEROUS_S) and stuck.called.is_set()
        verdict = out["verdict"]
        assert bool(verdict.blocks) is not fail_open and bool(verdict.errors) is fail_open
    finally:
        stuck.release.set()
