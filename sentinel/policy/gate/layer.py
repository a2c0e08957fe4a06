"""The gate inside Sentinel's own runs: layers 3 (rules) and 4 (alignment) of the decision (docs/architecture.md).

    RuleGate.for_sentinel(home, settings, config=None, *, judges=None, system_rules="auto") -> RuleGate
    gate.check(ctx: CallContext) -> list[LayerResult]

Tool calls map onto the gate's triggers (docs/gate.md): `write_file`/`edit_file` are file_write (target:
the path relative to the run's workspace), `bash` is bash (target: the command), MCP-style
names (`mcp_prefix`) are mcp, anything else only meets `trigger: any` rules. `block` ->
deny with the judge's reason; `warn` -> auto with the warning as the note; `ask` -> needs_approval (the run pauses for a person);
`info` ->
auto with the context as the note; alignment rules report as layer "alignment"
(reject -> deny). No rule, or no rule in scope: no model call and no result. A rule whose judge
failed is skipped (fail_open) and named, with its judge, in the result's `warnings`.

Judge calls go through `judges` (anything with `.get(backend_name) -> JudgeBackend`):
by default `Judges(config, providers)`, where `providers` resolves a backend name to a
provider of config.yaml (base_url, API key) - the seam where Muzzle can take over.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sentinel.policy.decide import CallContext, LayerResult
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.alignment import Intent
from sentinel.policy.gate.engine import Gate, Verdict
from sentinel.policy.gate.judges import Judges, JudgeSource, ProviderLookup
from sentinel.policy.gate.loader import Bundle, load_home, system_rules_dir
from sentinel.policy.gate.rules import applicable

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.settings import GateDump, GateSettings

SENTINEL_TOOLS = {"write_file": "file_write", "edit_file": "file_write", "bash": "bash"}


def provider_lookup(config: Config | None) -> ProviderLookup | None:
    """Backend name -> (base_url, api_key) from config.yaml providers (None when unknown)."""
    if config is None:
        return None

    def lookup(name: str) -> tuple[str, str | None] | None:
        from sentinel.models import api_key

        provider = config.provider(name)
        return (provider.base_url, api_key(provider)) if provider is not None else None

    return lookup


def to_action(ctx: CallContext, cfg: GateConfig) -> actions.Action:
    args = ctx.arguments if isinstance(ctx.arguments, dict) else {}
    trigger = SENTINEL_TOOLS.get(ctx.tool)
    if trigger == "file_write":
        act = actions.file_write(ctx.tool, args, str(args.get("path") or ""))
    elif trigger == "bash":
        act = actions.bash(ctx.tool, args)
    else:
        act = actions.classify(ctx.tool, args, {}, cfg.mcp_prefix, cfg.mcp_separator)
    act.read_only = ctx.read_only
    act.agent_id = ctx.agent
    return act.locate(str(ctx.workspace))


class RuleGate:
    name = "gate"

    def __init__(self, bundle: Bundle, judges: JudgeSource):
        self.bundle = bundle
        self.rules = bundle.rules
        self.errors = bundle.errors
        self.gate = Gate(bundle.config, bundle.rules, bundle.paths, judges)

    @classmethod
    def for_sentinel(cls, home: Path, settings: GateSettings | GateDump, config: Config | None = None, *,
                     judges: JudgeSource | None = None, system_rules: str | None = "auto") -> "RuleGate":
        dump = settings if isinstance(settings, dict) else settings.dump()
        rules_dir = system_rules_dir() if system_rules == "auto" else system_rules
        bundle = load_home(str(home), dump, rules_dir)
        for error in bundle.errors:
            print(f"sentinel: skipped rule: {error}", file=sys.stderr)
        return cls(bundle, judges or Judges(bundle.config, provider_lookup(config)))

    def judge_models(self) -> list[str]:
        """`backend/model` of every judge call these rules can make through Muzzle (for the run's token)."""
        from sentinel.policy.gate.judges.muzzle import routable

        cfg = self.bundle.config
        pairs = [(r, r.backend or cfg.backend) for r in self.rules]
        return sorted({f"{b}/{cfg.model_for(b, r.model)}" for r, b in pairs if routable(cfg, b)})

    def route_through_muzzle(self, base_url: str, token: str) -> None:
        from sentinel.policy.gate.judges.muzzle import MuzzleJudges

        self.gate.judges = MuzzleJudges(self.bundle.config, base_url, token)

    def check(self, ctx: CallContext) -> list[LayerResult]:
        if not self.rules:
            return []
        act = to_action(ctx, self.bundle.config)
        matching = applicable(self.rules, act, "pre")
        if not matching:
            return []
        verdict = self.gate.pre(act, session_id=ctx.run_id, intent=Intent(ctx.task, ctx.mission, ctx.agent))
        return results(verdict, [r.id for r in matching])

    def after(self, ctx: CallContext, output: str) -> list[str]:
        """Context from `post: true` info rules once the tool ran (notes for the tool result)."""
        act = to_action(ctx, self.bundle.config)
        if not applicable(self.rules, act, "post"):
            return []
        act.tool_output = output
        return [f.reason for f in self.gate.post(act, session_id=ctx.run_id).contexts]


def results(verdict: Verdict, evaluated: list[str]) -> list[LayerResult]:
    out = []
    for f in verdict.findings:
        layer = "alignment" if f.kind == "alignment" else "gate"
        if f.severity == "block":
            out.append(LayerResult(layer, "deny", f.reason, rule_id=f.rule_id))
        elif f.severity == "ask":
            out.append(LayerResult(layer, "needs_approval", f.reason, rule_id=f.rule_id))
        elif f.severity == "warn":
            out.append(LayerResult(layer, "auto", f"warning: {f.reason}", rule_id=f.rule_id,
                                   note=f"Warning from rule {f.rule_id}: {f.reason}"))
        else:
            out.append(LayerResult(layer, "auto", "context", rule_id=f.rule_id, note=f.reason))
    if verdict.errors:  # fail_open skipped these rules: the operator must hear it, not only `show`
        out.append(LayerResult("gate", "auto", "; ".join(verdict.errors), warnings=tuple(verdict.errors)))
    decided = {f.rule_id for f in verdict.findings}
    passed = [rule_id for rule_id in evaluated if rule_id not in decided]
    if passed and not out:
        out.append(LayerResult("gate", "auto", f"passed: {', '.join(passed)}"))
    return out
