"""The policy gate (DESIGN section 5, layers 3 and 4; seeds 000 and 004).

    action.py     the internal action every agent's payload becomes (trigger, target, ...)
    scope.py      glob and pattern matching, compiled once (wcmatch) and cached as regexes
    loader.py     config + rules from a repo's .claude/sentinel/ or $SENTINEL_HOME, with a JSON cache
    rules.py      the runtime rule: does its trigger and scope match an action?
    prompts.py    template variables, system prompts and the JSON schemas of every model call
    judges/       backends: ollama (native), OpenAI-compatible, local llama.cpp, claude and copilot CLIs
    engine.py     one judge call per matching rule, in parallel; severities; fail_open; telemetry
    alignment.py  the alignment rule kind (seed 004)
    lock.py       the flock-based priority lock shared by judge, synthesizer, accumulator, scribe
    telemetry.py  JSONL evaluation log and `rules stats`
    context.py    the session context accumulator (Stop)
    scribe.py     convention extraction and draft rules; drafts.py: review of drafts
    layer.py      RuleGate: the gate as a Layer of Sentinel's own tool-call decisions
    fakejudge.py  a scripted judge server (Ollama native + OpenAI-compatible) for tests and benchmarks

Nothing is imported here at module load: the hook entry point must start fast.
"""

from __future__ import annotations

__all__ = ["RuleGate", "GUARD_ENV"]

# Set in the environment of a judge subprocess (claude/copilot CLI): the hook passes at once.
GUARD_ENV = "SENTINEL_GATE_JUDGE"


def __getattr__(name: str) -> object:
    if name == "RuleGate":
        from sentinel.policy.gate.layer import RuleGate

        return RuleGate
    raise AttributeError(name)
