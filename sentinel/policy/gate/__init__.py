"""The policy gate (decision layers 3 and 4; docs/gate.md).

    action.py     the internal action every agent's payload becomes (trigger, target, ...)
    scope.py      glob and pattern matching, compiled once (wcmatch) and cached as regexes
    loader.py     config + rules from a repo's .claude/sentinel/ or $SENTINEL_HOME, with a JSON cache
    rules.py      the runtime rule: does its trigger and scope match an action?
    prompts.py    template variables, system prompts and the JSON schemas of every model call
    judges/       backends: ollama (native), OpenAI-compatible, local llama.cpp, claude and copilot CLIs
    engine.py     one judge call per matching rule, in parallel; severities; fail_open; telemetry
    alignment.py  the alignment rule kind (docs/gate.md, Alignment rules)
    lock.py       the flock-based priority lock shared by judge, synthesizer, accumulator, scribe
    telemetry.py  JSONL evaluation log and `rules stats`
    context.py    the session context accumulator (Stop)
    scribe.py     convention extraction and draft rules; drafts.py: review of drafts
    layer.py      RuleGate: the gate as a Layer of Sentinel's own tool-call decisions
    probe.py      probe_judges: can each configured judge be reached? (`sentinel status`)
    fakejudge.py  a scripted judge server (Ollama native + OpenAI-compatible) for tests and benchmarks

Nothing is imported here, not even lazily: the hook entry point must start fast, and a package
that re-exports its modules ties them into one import cycle. Import from the module that owns a name
(`from sentinel.policy.gate.layer import RuleGate`).
"""

# Set in the environment of a judge subprocess (claude/copilot CLI): the hook passes at once.
GUARD_ENV = "SENTINEL_GATE_JUDGE"
