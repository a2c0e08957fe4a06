"""The decision on one tool call (docs/architecture.md, Decisions on a tool call): a pure function over injected layers.

    decide(ctx, layers) -> Decision

Each layer looks at a CallContext and returns LayerResults; the strictest outcome
wins (deny > needs_approval > auto) and every layer's result is kept for the audit
record. No I/O happens here except inside the injected layers (the judge).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from sentinel.jsontypes import JSONObject

Outcome = Literal["auto", "needs_approval", "deny"]
_RANK = {"auto": 0, "needs_approval": 1, "deny": 2}


def strictest(*outcomes: Outcome) -> Outcome:
    return max(outcomes, key=_RANK.__getitem__, default="auto")


@dataclass(frozen=True)
class CallContext:
    """Everything a layer may look at for one tool call."""

    run_id: str
    agent: str
    tool: str
    arguments: JSONObject
    call_id: str = ""
    task: str = ""            # the operator's original request
    mission: str = ""         # what this agent was asked to do (= task for a head agent)
    workspace: Path = Path(".")
    read_only: bool = False   # the tool has no side effects
    granted: frozenset[str] | None = None  # None: every registered tool
    code_sha256: str | None = None  # an agent-authored tool: the SHA-256 of the code this call would run


@dataclass(frozen=True)
class LayerResult:
    layer: str                # grants | policy | gate | alignment | trust
    outcome: Outcome
    reason: str = ""
    rule_id: str | None = None
    note: str | None = None   # warn/info text carried into the tool result
    warnings: tuple[str, ...] | None = None  # one line each: what the operator must hear (a rule skipped)

    def to_dict(self) -> JSONObject:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    reason: str
    layers: tuple[LayerResult, ...] = field(default_factory=tuple)

    @property
    def notes(self) -> list[str]:
        return [r.note for r in self.layers if r.note]

    def to_dict(self) -> JSONObject:
        return {"outcome": self.outcome, "reason": self.reason, "layers": [r.to_dict() for r in self.layers]}


class Layer(Protocol):
    name: str

    def check(self, ctx: CallContext) -> list[LayerResult]: ...


def decide(ctx: CallContext, layers: list[Layer]) -> Decision:
    """Run the layers in order; a deny stops the pipeline early (nothing stricter exists)."""
    results: list[LayerResult] = []
    for layer in layers:
        results.extend(layer.check(ctx))
        if any(r.outcome == "deny" for r in results):
            break
    outcome = strictest(*(r.outcome for r in results))
    deciding = [r for r in results if r.outcome == outcome and r.reason]
    reason = "; ".join(f"{r.layer}: {r.reason}" for r in deciding) or f"{outcome} by default"
    return Decision(outcome, reason, tuple(results))
