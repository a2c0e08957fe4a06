"""benchmarks/bench_rules.py, run against a scripted judge: every shipped rule the gate judges has cases, every
case that must be blocked reaches the judge through the hook's path (its scope matches; one that must pass may
be passed by its scope alone), and a wrong verdict is reported and fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sentinel.policy.gate.fakejudge import PASS, FakeJudge, user_text

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import bench_rules  # noqa: E402

VIOLATION = {"violation": True, "confidence": 0.95, "reason": "scripted violation"}


def _oracle(flip: str | None = None):
    """Answer each case as CASES says it must be decided (`flip`: the case with this text answered wrong).
    A prompt is taken for the case whose value (a command, the first line of a file, a statement) is the
    longest one it shows: "git push --force" is part of longer commands."""
    cases = [(_first_line(i), kind) for _, (passes, flags) in bench_rules.CASES.items()
             for kind, group in (("pass", passes), ("flag", flags)) for _, i in group]
    seen: list[str] = []

    def respond(body):
        text = user_text(body)
        seen.append(text)
        found = [(len(v), v, kind) for v, kind in cases if v in text]
        _, value, kind = max(found)
        if flip and flip in value:
            kind = "pass" if kind == "flag" else "flag"
        return VIOLATION if kind == "flag" else PASS

    return respond, seen


def _first_line(tool_input: dict) -> str:
    return list(tool_input.values())[-1].splitlines()[0]  # the command, the content, the statement


def test_every_shipped_judged_rule_has_cases_and_each_reaches_the_judge(tmp_path, capsys):
    """A judged rule's must-block case reaches the judge (in scope, its `when` holds); a `kind: scope` rule decides
    every case with no judge at all."""
    import yaml

    respond, seen = _oracle()
    with FakeJudge(respond) as judge:
        assert bench_rules.main(["--judge-url", judge.url]) == 0
    out = capsys.readouterr().out
    shipped = Path(bench_rules.REPO) / "policies" / "rules"
    kind = {rule: yaml.safe_load((shipped / f"{rule}.yaml").read_text()).get("kind", "judge")
            for rule in bench_rules.CASES}
    assert kind["destructive-sql"] == kind["billing-protection"] == "scope"
    for rule, (passes, flags) in bench_rules.CASES.items():
        for _, tool_input in flags if kind[rule] == "judge" else []:
            assert any(_first_line(tool_input) in text for text in seen), tool_input
        for _, tool_input in passes + flags if kind[rule] == "scope" else []:
            assert not any(_first_line(tool_input) in text for text in seen), tool_input
    for rule, (passes, flags) in bench_rules.CASES.items():
        assert f"{rule} " in out and f"{len(passes)}/{len(passes)}" in out and f"{len(flags)}/{len(flags)}" in out
    assert "p95 verdict" in out and "wrong" not in out


def test_a_wrong_verdict_is_named_and_fails_the_bench(capsys):
    respond, _ = _oracle(flip="origin HEAD:main")
    with FakeJudge(respond) as judge:
        assert bench_rules.main(["--judge-url", judge.url, "--rule", "no-force-push"]) == 1
    out = capsys.readouterr().out
    assert "wrong: flag expected, got pass" in out and "HEAD:main" in out


@pytest.mark.parametrize("rule", ["alignment", "migration-awareness", "payments-ownership"])
def test_rules_that_ask_no_verdict_of_a_call_are_not_benched(rule, tmp_path):
    from sentinel.policy.gate.loader import load_repo

    bench_rules.repo(tmp_path, "http://127.0.0.1:9")
    ids = [r.id for r in bench_rules.judged(load_repo(str(tmp_path), use_cache=False).rules)]
    assert rule not in ids and "no-force-push" in ids
