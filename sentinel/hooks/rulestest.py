"""`sentinel rules test RULE --payload FILE`: one rule against one hook payload, step by step."""

from __future__ import annotations

from typing import Any

from sentinel.errors import NotFound, UsageError
from sentinel.policy.gate.action import template_vars
from sentinel.policy.gate.engine import Gate
from sentinel.policy.gate.judges import Judges
from sentinel.policy.gate.prompts import render


def run_test(bundle: Any, root: str | None, rule_id: str, payload: dict[str, Any], agent: str,
             dry_run: bool) -> dict[str, Any]:
    from sentinel.hooks import agents

    rule = next((r for r in bundle.rules if r.id == rule_id), None)
    if rule is None:
        raise NotFound(f"no rule {rule_id!r} (sentinel rules list)")
    adapter = agents.get(agent)
    if adapter is None:
        raise UsageError(f"--agent: unknown agent {agent!r} (known: {', '.join(sorted(agents.AGENTS))})")
    try:
        action = adapter.action(payload, bundle.config, "post" if rule.post else "pre")
    except ValueError as exc:
        raise UsageError(f"payload: {exc}") from None
    if action is None:
        raise UsageError(f"payload: {agent} sends nothing to judge for this event")
    action.locate(root, payload.get("cwd") if isinstance(payload.get("cwd"), str) else None)
    report: dict[str, Any] = {"rule": rule.id, "trigger": action.trigger, "target": action.target,
                              "in_scope": rule.applies(action)}
    if not report["in_scope"]:
        report["verdict"] = "pass (out of scope: no model call)"
        return report
    report["prompt"] = render(rule.prompt, template_vars(action, bundle.config.content_max_chars))
    if dry_run:
        return report
    gate = Gate(bundle.config, [rule], bundle.paths, Judges(bundle.config))
    verdict = gate.post(action) if rule.post else gate.pre(action)
    findings = [{"severity": f.severity, "reason": f.reason, "confidence": f.confidence} for f in verdict.findings]
    report["verdict"] = findings[0]["severity"] if findings else ("error" if verdict.errors else "pass")
    report["findings"] = findings
    if verdict.errors:
        report["errors"] = verdict.errors
    return report
