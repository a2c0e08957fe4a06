"""Wiring for one run's loop: model client, tools, decision layers, tool context, first messages.

The registry holds the built-ins, the agent's self-state tools (sentinel/agents/selfstate.py), the
skill tools, the tool-management tools and every valid tool the agent authored; the layers end with
the trust layer. The system prompt is a function of the agent's files (`Deps.prompt`), rebuilt by
the loop before each model call.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from sentinel.agents import profile as profiles
from sentinel.agents.authored import AuthoredTools
from sentinel.agents.selfstate import FixedSelf, SelfState
from sentinel.agents.skills import SkillTools
from sentinel.agents.trust import TrustLayer
from sentinel.config import Config
from sentinel.engine import records as rec
from sentinel.engine.state import RunState
from sentinel.engine.runstore import RunStore
from sentinel.errors import SentinelError
from sentinel.memory import compact
from sentinel.memory.session import plan_tool
from sentinel.memory.vault import memory_dir
from sentinel.models import ModelClient
from sentinel.policy import action_policy
from sentinel.policy.decide import CallContext, Layer, LayerResult
from sentinel.tools import Registry, ToolContext
from sentinel.tools.builtin import default_registry
from sentinel.worker.compact import ContextKeeper
from sentinel.worker.children import CHILD_TOOLS, Children, child_tools
from sentinel.worker.loop import Deps
from sentinel.worker.prompt import system_prompt
from sentinel.worker.turn import skill_records

if TYPE_CHECKING:
    from sentinel.policy.gate.layer import RuleGate


CURATOR_OFF = "off"


def layers_for(config: Config, home: Path, profile: profiles.AgentProfile, operator: bool = False,
               mcp: dict[str, str] | None = None) -> list[Layer]:
    """Grants, the action policy, the rule gate. `operator`: `config` is the operator's (system mode) and the
    profile is the agent's own file, so the operator's policy is decided on its own as well: the profile's
    `policy:` can make a call stricter, never looser (the strictest layer wins). `mcp`: the verdicts of the
    run's MCP tools from `mcp_servers` (read_only/tools), under any `policy.tools` entry naming them."""
    servers = ("config.yaml mcp_servers", {"tools": mcp}) if mcp else ("", {})
    policy = action_policy.load(servers, ("config.yaml policy", config.policy),
                                (f"agents/{profile.name}.yaml policy", profile.policy))
    layers: list[Layer] = [action_policy.GrantsLayer(), action_policy.PolicyLayer(policy)]
    if operator and profile.policy:
        operators = action_policy.load(servers, ("the operator's config.yaml policy", config.policy))
        layers.append(action_policy.PolicyLayer(operators))
    if config.gate.enabled and importlib.util.find_spec("sentinel.policy.gate"):
        from sentinel.policy.gate.layer import RuleGate

        gate = RuleGate.for_sentinel(home, config.gate, config)
        if gate is not None:
            layers.append(gate)
    return layers


def _gate(layers: list[Layer]) -> "RuleGate | None":
    """The rule gate among a run's layers, when it has one."""
    found = next((layer for layer in layers if getattr(layer, "name", "") == "gate"), None)
    if found is None:
        return None
    from sentinel.policy.gate.layer import RuleGate

    return found if isinstance(found, RuleGate) else None


def build_deps(config: Config, home: Path, profile: profiles.AgentProfile, state: RunState, store: RunStore, *,
               endpoint: tuple[str, str] | None = None, operator: bool = False, children: Children | None = None,
               grants: list[str] | None = None, soul: str | None = None, defer_curator: bool = False) -> Deps:
    """`endpoint`: Muzzle's URL and the run token the supervisor handed over (system mode); `operator`: see
    layers_for; `children`: the engine's child runs (delegate, spawn, run_workflow are offered with it);
    `grants`: a child run's tools as its parent granted them (from the store): the run is granted only
    these, and within that approved delegation their own `needs_approval` is waived (see Delegated); `soul`: a
    temporary subagent's, as its spawn was approved (its profile is then `profile` alone, not a file);
    `defer_curator`: the curator model's call at the run's end is left to a detached process (local mode:
    the command exits on the answer; see sentinel/worker/curate.py)."""
    if config.leash.tools == "sandboxed":
        from sentinel.leash.launch import ensure_launcher

        ensure_launcher()  # fork the launcher before the model client or local model start threads
    from sentinel.muzzle import model_for_run

    registry = default_registry()
    selfstate, authored = _add_agent_tools(registry, config, home, profile, state, store, soul)
    _add_hook_tools(registry, state, store)
    tool_ctx = ToolContext(workspace=Path(state.workspace), run_id=state.id, agent=profile.name,
                           bash_timeout_s=config.tools.bash_timeout_s, output_max_chars=config.tools.output_max_chars,
                           sandbox=config.sandbox, tools_mode=config.leash.tools)
    if operator and os.geteuid() != 0:  # a system-mode worker runs as the agent's user: its files are the agent's
        tool_ctx.extra["agent_uid"] = os.getuid()
    mcp = _add_mcp_tools(registry, config, home, profile, state, store, tool_ctx)
    layers = layers_for(config, home, profile, operator, mcp) + [TrustLayer(store.tool_trusted)]
    if grants is not None:
        layers = [Delegated(layer) if getattr(layer, "name", "") == "policy" else layer for layer in layers]
    gate = _gate(layers)
    judges = gate.judge_models() if gate is not None else []
    side = [m for m in (config.context.summary_model, config.context.curator_model) if m and m != CURATOR_OFF]
    model = model_for_run(state.model, config, run_id=state.id, agent=profile.name, also=judges + side,
                          endpoint=endpoint)
    if gate is not None and getattr(model, "via_muzzle", False):
        gate.route_through_muzzle(*_muzzle_endpoint(model))  # judge calls are model calls too
    granted = frozenset(profile.tools) | set(mcp) if profile.tools is not None else None
    if granted is not None and state.kind == "hook":
        granted |= {"sentinel_act", "sentinel_escalate"}
    if grants is not None:  # a child: never a tool its parent lacked, whatever its profile says now
        granted = frozenset(grants) & granted if granted is not None else frozenset(grants)
    if children is not None and granted is not None and granted & set(CHILD_TOOLS):
        # offered only to a run granted them by name: a small model is not shown three more tools unasked
        named = frozenset(granted)
        for tool in child_tools(children, state, lambda: named):
            registry.add(tool)
    if granted is None and focused(config, state):
        granted = focus(registry.names(), state.task)
    authored.warm(tool_ctx)

    def prompt() -> str:
        soul, parts = selfstate.prompt_parts()
        tools = registry.schemas(granted)
        team = roster(home, profile.name) if any(t["name"] == "delegate" for t in tools) else None
        return system_prompt(soul, tools, str(tool_ctx.workspace), profile.display_name, parts, team)

    keeper = _keeper(config, home, profile, state, store, model, endpoint, defer_curator)
    return Deps(model=model, registry=registry, layers=layers, store=store, tool_ctx=tool_ctx,
                max_steps=config.limits.max_steps, max_wall_s=config.limits.max_wall_s, granted=granted, prompt=prompt,
                keeper=keeper, children=children, draft=drafts(config, state))


# Left out of a task run on a small local model (local.tool_set: focused): measured on the default 1.5B model,
# it called edit_soul to change a port in config.ini; sixteen tools are a menu it picks from badly.
FOCUS_HIDDEN = frozenset({"edit_soul", "update_user", "create_tool", "edit_tool", "list_tools", "delete_tool",
                          "create_skill", "list_skills", "update_plan"})


def focus(names: set[str], task: str) -> frozenset[str]:
    """The tools a focused run is offered: all but FOCUS_HIDDEN, except those the task names ("use edit_soul to
    ..."): hidden, a task asked to use edit_soul ended `done` after writing soul.txt in the workspace."""
    asked = {name for name in FOCUS_HIDDEN if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", task)}
    return frozenset(names) - (FOCUS_HIDDEN - asked)


def drafts(config: Config, state: RunState) -> bool:
    """Whether a task run's model drafts its contract first (safeguards.draft_contract)."""
    how = config.safeguards.draft_contract
    return state.kind == "task" and (how == "always" or how == "local" and state.model.startswith("local/"))


def focused(config: Config, state: RunState) -> bool:
    """Whether the run is offered the focused tool set: a task run (not a chat) on a local model."""
    return (config.local.tool_set == "focused" and state.model.startswith("local/")
            and state.kind not in ("chat",))


def _muzzle_endpoint(model: object) -> tuple[str, str]:
    """Muzzle's URL and the run token of a client pointed at Muzzle (the judges go through it too)."""
    from sentinel.models.openai_compat import OpenAICompatClient

    if not isinstance(model, OpenAICompatClient) or model.api_key is None:
        raise SentinelError(f"model {getattr(model, 'name', model)!r} is marked as going through Muzzle "
                            "but holds no Muzzle URL and run token")
    return model.base_url, model.api_key


def _keeper(config: Config, home: Path, profile: profiles.AgentProfile, state: RunState, store: RunStore,
            model: ModelClient, endpoint: tuple[str, str] | None, defer_curator: bool = False) -> ContextKeeper:
    """Compaction (by the run's model unless `context.summary_model` names another), scribe and curator (its
    model call by the run's model unless `context.curator_model` names another or is "off")."""
    from sentinel.muzzle import model_for_run

    def client(name: str | None) -> ModelClient:
        return model if not name or name == state.model else model_for_run(
            name, config, run_id=state.id, agent=profile.name, endpoint=endpoint)

    summarizer = client(config.context.summary_model)
    curator = None if config.context.curator_model == CURATOR_OFF else client(config.context.curator_model)
    limit = compact.threshold(config.context.compact_at_chars, state.model, config.local.context_tokens)

    def audit(kind: str, record: Mapping[str, object]) -> None:
        store.audit(kind, {"run_id": state.id, "agent": profile.name, **record})

    return ContextKeeper(config.context, summarizer, limit, memory_dir(home) / profile.scope, audit, curator,
                         defer=defer_curator)


def roster(home: Path, own: str) -> dict[str, str]:
    """The agents `delegate` can name, with what each is for (a broken profile is left out: delegating to it
    would be refused anyway)."""
    team = {}
    for name in profiles.names(home):
        if name == own:
            continue
        try:
            team[name] = profiles.load(name, home, check=False).description or ""
        except SentinelError:
            continue
    return team


class Delegated:
    """The action policy inside an approved delegation: a granted tool's own `tools:` verdict of
    `needs_approval` becomes `auto` (the delegation's approval covered it). Argument rules (bash commands,
    paths), every `deny`, the rule gate, the trust layer and further delegation still decide as usual."""

    def __init__(self, inner: Layer):
        self.inner = inner
        self.name = inner.name

    def check(self, ctx: CallContext) -> list[LayerResult]:
        from dataclasses import replace

        return [replace(r, outcome="auto", reason=f"{r.reason}; waived inside the approved delegation")
                if r.outcome == "needs_approval" and r.rule_id == f"tools.{ctx.tool}" and ctx.tool not in CHILD_TOOLS
                else r for r in self.inner.check(ctx)]


def _add_agent_tools(registry: Registry, config: Config, home: Path, profile: profiles.AgentProfile,
                     state: RunState, store: RunStore, soul: str | None = None) -> tuple[SelfState, AuthoredTools]:
    """Self-state, skill and tool-management tools, then the agent's own tools (broken ones are audited)."""

    def audit(kind: str, record: Mapping[str, object]) -> None:
        store.audit(kind, {"run_id": state.id, "agent": profile.name, **record})

    selfstate = (SelfState(home, profile.name, config, audit) if soul is None
                 else FixedSelf(home, profile, soul, config, audit))
    skill_tools = SkillTools(home, attached=lambda: selfstate.profile().skills, attach=selfstate.attach_skill)
    for tool in [*selfstate.tools(), *skill_tools.tools(), plan_tool()]:
        registry.add(tool)
    authored = AuthoredTools(home, registry, config.tools.authored,
                             trusted=lambda tool, sha: store.tool_trusted(state.id, tool, sha))
    for tool in authored.tools():
        registry.add(tool)
    for name, problem in authored.register_all().items():
        audit("tool_broken", {"tool": name, "problem": problem})
    return selfstate, authored


def _add_mcp_tools(registry: Registry, config: Config, home: Path, profile: profiles.AgentProfile, state: RunState,
                   store: RunStore, ctx: ToolContext) -> dict[str, str]:
    """The tools of the MCP servers the profile grants (`mcp:`), each server started now; their verdicts."""
    servers = {name: config.mcp_servers[name] for name in profile.mcp if name in config.mcp_servers}
    if not servers:
        return {}
    from sentinel.mcp.client import muzzle_secrets
    from sentinel.mcp.tools import McpTools

    def audit(kind: str, record: Mapping[str, object]) -> None:
        store.audit(kind, {"run_id": state.id, "agent": profile.name, **record})

    tools = McpTools(servers, ctx, audit=audit, trusted_pin=store.mcp_trust, secret=muzzle_secrets(config, home))
    return tools.register(registry)


def _add_hook_tools(registry: Registry, state: RunState, store: RunStore) -> None:
    """A hook session (a run a watcher started) answers its relay contract with sentinel_act/sentinel_escalate."""
    if state.kind == "hook":
        from sentinel.tools.hook import hook_tools

        for tool in hook_tools(store, state.id):
            registry.add(tool)


def initial_messages(home: Path, profile: profiles.AgentProfile, deps: Deps, task: str,
                     skills: Sequence[str] = ()) -> list[rec.Record]:
    assert deps.prompt is not None
    return [rec.Message(message={"role": "system", "content": deps.prompt()}), *skill_records(home, skills),
            rec.Message(message={"role": "user", "content": task})]
