"""`sentinel rules test RULE --payload FILE`: one rule against one hook payload, step by step."""

from __future__ import annotations

from sentinel.errors import NotFound, UsageError
from sentinel.jsontypes import JSON, JSONObject
from sentinel.policy.gate.action import template_vars
from sentinel.policy.gate.engine import Gate
from sentinel.policy.gate.judges import Judges
from sentinel.policy.gate.loader import Bundle
from sentinel.policy.gate.prompts import render


def run_test(bundle: Bundle, root: str | None, rule_id: str, payload: JSONObject, agent: str,
             dry_run: bool) -> JSONObject:
    from sentinel.hooks import agents

    rule = next((r for r in bundle.rules if r.id == rule_id), None)
    if rule is None:
        raise NotFound(f"no rule {rule_id!r} (sentinel rules list)")
    adapter = agents.get(agent)
    if adapter is None:
        raise UsageError(f"--agent: unknown agent {agent!r} (known: {', '.join(sorted(agents.AGENTS))})")
    try:
        found = adapter.action(payload, bundle.config, "post" if rule.post else "pre")
    except ValueError as exc:
        raise UsageError(f"payload: {exc}") from None
    acts = found if isinstance(found, list) else [found] if found is not None else []
    cwd = adapter.session(payload)[0]  # where the client runs the call, as the hook takes it (entry.run)
    located = [a.locate(root, cwd) for a in acts]
    # a patch is one action per file: the first the rule applies to is reported (else the first)
    action = next((a for a in located if rule.applies(a)), located[0] if located else None)
    if action is None:
        raise UsageError(f"payload: {agent} sends nothing to judge for this event")
    in_scope = rule.applies(action)
    report: JSONObject = {"rule": rule.id, "trigger": action.trigger, "target": action.target, "in_scope": in_scope}
    if not in_scope:
        report["verdict"] = "pass (out of scope: no model call)"
        return report
    report["prompt"] = render(rule.prompt, template_vars(action, bundle.config.content_max_chars))
    if dry_run:
        return report
    gate = Gate(bundle.config, [rule], bundle.paths, Judges(bundle.config))
    verdict = gate.post(action) if rule.post else gate.pre(action)
    findings: list[JSON] = [{"severity": f.severity, "reason": f.reason, "confidence": f.confidence}
                            for f in verdict.findings]
    report["verdict"] = verdict.findings[0].severity if findings else ("error" if verdict.errors else "pass")
    report["findings"] = findings
    if verdict.errors:
        report["errors"] = [*verdict.errors]
    return report
