"""The engine's typed events: what happens in a run, in order, for every UI to render.

    translator = Translator(run_id)
    for event in translator.feed(record): ...     # journal record -> typed events
    event.to_dict() / parse(dict)                  # the wire form (`--json`, the supervisor socket)

Every UI renders this one stream: CLI progress, `run --json` warnings, `logs --follow`, the chat and the
web console. Durable events come from journal records and carry the record's sequence number, so a
client that reconnects asks for events after the last `seq` it saw and misses nothing. Transient
events (a model call starting, a text delta) are emitted live only; they carry the seq of the last
durable event and are never replayed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, TypedDict

from sentinel.engine import records as rec
from sentinel.engine.status import ANSWERED, RunStatus
from sentinel.jsontypes import JSON, JSONObject


class Origin(TypedDict):
    """The run and seq every event carries (a transient event: those of the last durable one)."""

    run_id: str
    seq: int


class Stamp(Origin):
    """An event's origin and the time of the journal record it comes from."""

    t: float | None


@dataclass(frozen=True, kw_only=True)
class Event:
    """What a run did, as UIs and scripts see it: its run, its place (`seq`) and time."""
    type: ClassVar[str] = "event"
    durable: ClassVar[bool] = True

    run_id: str
    seq: int
    t: float | None = None

    def to_dict(self) -> JSONObject:
        return {"type": self.type, **dataclasses.asdict(self)}


@dataclass(frozen=True, kw_only=True)
class RunStarted(Event):
    """A run was made: its task, agent, model and workspace."""
    type: ClassVar[str] = "run_started"
    task: str = ""
    agent: str = ""
    model: str = ""
    workspace: str = ""
    parent_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Resumed(Event):
    """A process took the run up again (after a pause, a crash or a restart)."""

    type: ClassVar[str] = "resumed"
    pid: int | None = None


@dataclass(frozen=True, kw_only=True)
class MessageAdded(Event):
    """A system or user message joined the conversation (the task, a chat message, a resume note)."""

    type: ClassVar[str] = "message"
    role: str = ""
    content: str = ""


@dataclass(frozen=True, kw_only=True)
class ModelCallStarted(Event):
    """A model call went out (transient: never journaled)."""
    type: ClassVar[str] = "model_call_started"
    durable: ClassVar[bool] = False
    model: str = ""
    step: int = 0


@dataclass(frozen=True, kw_only=True)
class TextDelta(Event):
    """A piece of the model's text as it streams (transient)."""
    type: ClassVar[str] = "text_delta"
    durable: ClassVar[bool] = False
    text: str = ""


@dataclass(frozen=True, kw_only=True)
class ModelProgress(Event):
    """A model call in flight streamed `tokens` pieces so far (text and tool-call arguments; one piece is one
    token for the servers Sentinel talks to). Sent a few times a second at most, not per piece."""

    type: ClassVar[str] = "model_progress"
    durable: ClassVar[bool] = False
    tokens: int = 0


@dataclass(frozen=True, kw_only=True)
class ModelCallEnded(Event):
    """The model answered: its text and the tool calls it asked for (none means the answer is final, unless
    `rejected` names the safeguard that sent it back: a tool call written as text, an empty answer...)."""

    type: ClassVar[str] = "model_call_ended"
    model: str = ""
    latency_ms: float = 0.0
    content: str = ""
    tool_calls: list[JSON] = field(default_factory=list)
    recovered: bool = False
    rejected: str = ""
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens (in), completion_tokens (out)


@dataclass(frozen=True, kw_only=True)
class Decision(Event):
    """The verdict on one tool call, with every layer's outcome and reason."""

    type: ClassVar[str] = "decision"
    call_id: str = ""
    tool: str = ""
    arguments: JSON = None
    outcome: str = ""
    reason: str = ""
    layers: list[JSON] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ToolCallBegin(Event):
    """A tool call began executing."""
    type: ClassVar[str] = "tool_call_begin"
    call_id: str = ""
    tool: str = ""
    arguments: JSON = None


@dataclass(frozen=True, kw_only=True)
class ToolCallEnd(Event):
    """A tool call got its one result: its output, a denial, or the note that it was interrupted."""

    type: ClassVar[str] = "tool_call_end"
    call_id: str = ""
    tool: str = ""
    result: str = ""
    interrupted: bool = False


@dataclass(frozen=True, kw_only=True)
class Paused(Event):
    """A tool call waits for a person's approval."""
    type: ClassVar[str] = "paused"
    call_id: str = ""
    approval_id: str = ""
    tool: str = ""
    reason: str = ""
    arguments: JSON = None


@dataclass(frozen=True, kw_only=True)
class Resolved(Event):
    """A pending approval was answered."""
    type: ClassVar[str] = "resolved"
    call_id: str = ""
    approval_id: str = ""
    approved: bool = False
    reason: str = ""
    by: str | None = None


@dataclass(frozen=True, kw_only=True)
class ChildStarted(Event):
    """A child run was made for a tool call."""
    type: ClassVar[str] = "child_started"
    child_id: str = ""
    agent: str = ""
    task: str = ""
    call_id: str = ""


@dataclass(frozen=True, kw_only=True)
class ChildFinished(Event):
    """A child run ended."""
    type: ClassVar[str] = "child_finished"
    child_id: str = ""
    status: str = ""
    output: str | None = None
    call_id: str = ""


@dataclass(frozen=True, kw_only=True)
class Compaction(Event):
    """Older messages were folded into a summary."""
    type: ClassVar[str] = "compaction"
    summarized: int = 0           # messages folded into the summary
    chars_before: int = 0
    chars_after: int = 0


@dataclass(frozen=True, kw_only=True)
class Warned(Event):
    """Something the operator should see that did not stop the run (a rule skipped: judge unreachable)."""

    type: ClassVar[str] = "warning"
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class Safeguard(Event):
    """A small-model safeguard fired (docs/agents.md): `kind` what it caught, `action` what the loop did
    (recovered, retry, deduplicated, flagged, refused, stopped)."""

    type: ClassVar[str] = "safeguard"
    kind: str = ""
    action: str = ""
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class SelfEdited(Event):
    """The agent changed its own self-state (`edit_soul`, `update_user`): what it wrote, and for the soul the
    version `sentinel agent restore-soul` brings back."""

    type: ClassVar[str] = "self_edit"
    agent: str = ""
    call_id: str = ""
    tool: str = ""
    file: str = ""
    chars: int = 0
    version: int | None = None
    excerpt: str = ""


@dataclass(frozen=True, kw_only=True)
class WorkspaceChanged(Event):
    """A tool call changed workspace files (checkpoint `step`, which `sentinel undo` and /undo go back through): the
    harness's own account of what changed, whatever the answer says."""

    type: ClassVar[str] = "workspace_changed"
    step: int = 0
    call_id: str = ""
    tool: str = ""
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    undo: int | None = None


@dataclass(frozen=True, kw_only=True)
class ContractMade(Event):
    """What the task asks for, in words (sentinel/worker/safeguards/contract.py); empty: nothing to check."""

    type: ClassVar[str] = "contract"
    clauses: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Verdict(Event):
    """The answer checked against the contract by the harness: `verified` when it had clauses and all held."""

    type: ClassVar[str] = "verdict"
    verified: bool = False
    checked: list[str] = field(default_factory=list)
    unmet: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # what the harness could not check: `done_unverified`


@dataclass(frozen=True, kw_only=True)
class Done(Event):
    """The run answered: `done` when the harness checked all its contract asks for, `done_unverified` when it
    could not (`unverified` says what was not checked)."""

    type: ClassVar[str] = "done"
    output: str | None = None
    status: str = RunStatus.DONE
    unverified: str | None = None


@dataclass(frozen=True, kw_only=True)
class Idle(Event):
    """A chat session's turn is over: answered (`output`), or stopped or failed (`error`); it waits for the next
    message."""

    type: ClassVar[str] = "idle"
    output: str | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Failed(Event):
    """The run stopped without an answer: `failed`, `cancelled`, or `interrupted` (resumable)."""

    type: ClassVar[str] = "failed"
    status: str = RunStatus.FAILED
    error: str | None = None


KINDS: dict[str, type[Event]] = {cls.type: cls for cls in (
    RunStarted, Resumed, MessageAdded, ModelCallStarted, TextDelta, ModelProgress, ModelCallEnded, Decision,
    ToolCallBegin, ToolCallEnd, Paused, Resolved, ChildStarted, ChildFinished, Compaction, Warned, Safeguard,
    SelfEdited, WorkspaceChanged, ContractMade, Verdict, Done, Idle, Failed)}

Listener = Callable[[Event], None]


def parse(data: JSONObject) -> Event | None:
    """An event from its wire form; None for a kind this version does not know (newer peer)."""
    cls = KINDS.get(str(data.get("type")))
    if cls is None:
        return None
    names = {f.name for f in dataclasses.fields(cls)}
    # untyped: a peer's JSON, handed on as it came (UIs render these fields as text, whatever their type)
    given: dict[str, Any] = {k: v for k, v in data.items() if k in names}
    try:
        return cls(**given)
    except TypeError:
        return None


def _usage(usage: JSONObject | None) -> dict[str, int]:
    """The token counts a journal's `assistant` record claims (the agent's file: only ints are taken)."""
    if usage is None:
        return {}
    return {k: v for k, v in usage.items() if k in ("prompt_tokens", "completion_tokens") and type(v) is int}


def layer_warnings(layers: list[JSON] | None) -> list[str]:
    """The warnings a decision's layers attached (e.g. a rule skipped because its judge is unreachable)."""
    out: list[str] = []
    for layer in layers or []:
        warnings = layer.get("warnings") if isinstance(layer, dict) else None
        out += [str(w) for w in warnings] if isinstance(warnings, list) else []
    return out


class Decided(TypedDict):
    """What a run's decision said of a call, kept for the events that follow it (`tool` None: not given)."""

    tool: str | None
    arguments: JSON


class Translator:
    """Turns one run's journal records, in order, into typed events.

    `decisions` may be the live RunState's decisions, so a call decided before a pause still gets its
    arguments on the ToolCallBegin emitted after the resume."""

    def __init__(self, run_id: str = "", decisions: dict[str, JSONObject] | None = None,
                 sessions: int = 0, steps: int = 0):
        self.run_id = run_id
        self.steps = steps  # workspace checkpoints so far
        self.known = decisions if decisions is not None else {}   # read only
        self.decisions: dict[str, Decided] = {}
        self.sessions = sessions
        self.seq = 0

    def feed(self, record: rec.Record) -> list[Event]:
        self.seq = record.seq if record.has("seq") else self.seq
        handler = getattr(self, f"_{record.type}", None)
        stamp: Stamp = {"run_id": self.run_id, "seq": self.seq, "t": record.t}
        return handler(record, stamp) if handler else []

    def _created(self, r: rec.Created, base: Stamp) -> list[Event]:
        self.run_id = base["run_id"] = r.id if r.has("id") else self.run_id
        return [RunStarted(**base, task=r.task, agent=r.agent, model=r.model, workspace=r.workspace,
                           parent_id=r.parent_id)]

    def _session(self, r: rec.Session, base: Stamp) -> list[Event]:
        self.sessions += 1
        return [Resumed(**base, pid=r.pid)] if self.sessions > 1 else []

    def _message(self, r: rec.Message, base: Stamp) -> list[Event]:
        msg = r.message
        return [MessageAdded(**base, role=str(msg.get("role", "")), content=str(msg.get("content") or ""))]

    def _assistant(self, r: rec.Assistant, base: Stamp) -> list[Event]:
        msg = r.message
        content, calls = msg.get("content"), msg.get("tool_calls")
        return [ModelCallEnded(**base, model=r.model or "", latency_ms=r.latency_ms or 0.0,
                               content=content if isinstance(content, str) else "",
                               tool_calls=calls if isinstance(calls, list) else [],
                               recovered=r.recovered, rejected=r.rejected or "", usage=_usage(r.usage))]

    def _decision(self, r: rec.Decision, base: Stamp) -> list[Event]:
        self.decisions[r.call_id] = {"tool": r.tool if r.has("tool") else None, "arguments": r.arguments}
        out: list[Event] = [Decision(**base, call_id=r.call_id, tool=r.tool, arguments=r.arguments,
                                     outcome=r.outcome, reason=r.reason, layers=r.layers)]
        return out + [Warned(**base, message=f"{r.tool}: {w}") for w in layer_warnings(r.layers)]

    def _decided(self, call_id: str) -> Decided:
        if (decided := self.decisions.get(call_id)) is not None:
            return decided
        known = self.known.get(call_id) or {}
        tool = known.get("tool")
        return {"tool": tool if isinstance(tool, str) else None, "arguments": known.get("arguments")}

    def _started(self, r: rec.Started, base: Stamp) -> list[Event]:
        decided = self._decided(r.call_id)
        return [ToolCallBegin(**base, call_id=r.call_id, tool=r.tool or decided["tool"] or "",
                              arguments=decided["arguments"])]

    def _finished(self, r: rec.Finished, base: Stamp) -> list[Event]:
        tool = r.tool or self._decided(r.call_id)["tool"] or ""
        return [ToolCallEnd(**base, call_id=r.call_id, tool=tool, result=r.result, interrupted=r.interrupted)]

    def _paused(self, r: rec.Paused, base: Stamp) -> list[Event]:
        decided = self._decided(r.call_id)
        return [Paused(**base, call_id=r.call_id, approval_id=r.approval_id, tool=r.tool, reason=r.reason,
                       arguments=decided["arguments"])]

    def _resolved(self, r: rec.Resolved, base: Stamp) -> list[Event]:
        return [Resolved(**base, call_id=r.call_id, approval_id=r.approval_id or "", approved=r.approved,
                         reason=r.reason or "", by=r.by)]

    def _child_started(self, r: rec.ChildStarted, base: Stamp) -> list[Event]:
        return [ChildStarted(**base, child_id=r.child_id, agent=r.agent, task=r.task, call_id=r.call_id)]

    def _child_finished(self, r: rec.ChildFinished, base: Stamp) -> list[Event]:
        return [ChildFinished(**base, child_id=r.child_id, status=r.status, output=r.output, call_id=r.call_id)]

    def _compaction(self, r: rec.Compaction, base: Stamp) -> list[Event]:
        return [Compaction(**base, summarized=r.summarized, chars_before=r.chars_before, chars_after=r.chars_after)]

    def _warning(self, r: rec.Warned, base: Stamp) -> list[Event]:
        return [Warned(**base, message=r.message)]

    def _safeguard(self, r: rec.Safeguard, base: Stamp) -> list[Event]:
        return [Safeguard(**base, kind=r.kind, action=r.action, detail=r.detail)]

    def _contract(self, r: rec.ContractMade, base: Stamp) -> list[Event]:
        return [ContractMade(**base, clauses=[str(c) for c in r.clauses])]

    def _verdict(self, r: rec.Verdict, base: Stamp) -> list[Event]:
        return [Verdict(**base, verified=r.verified, checked=[str(c) for c in r.checked],
                        unmet=[str(c) for c in r.unmet], unchecked=[str(c) for c in r.unchecked])]

    def _workspace_step(self, r: rec.WorkspaceStep, base: Stamp) -> list[Event]:
        self.steps += 1
        changes = r.changes if isinstance(r.changes, dict) else {}
        return [WorkspaceChanged(**base, step=self.steps, call_id=r.call_id, tool=r.tool,
                                 changed=sorted(p for p, e in changes.items() if e is not None),
                                 removed=sorted(p for p, e in changes.items() if e is None),
                                 undo=r.undo if isinstance(r.undo, int) else None)]

    def _self_edit(self, r: rec.SelfEdit, base: Stamp) -> list[Event]:
        return [SelfEdited(**base, agent=r.agent, call_id=r.call_id, tool=r.tool, file=r.file, chars=r.chars,
                           version=r.version, excerpt=r.excerpt)]

    def _status(self, r: rec.Status, base: Stamp) -> list[Event]:
        if r.status in ANSWERED:
            return [Done(**base, output=r.output, status=r.status,
                         unverified=r.error if r.status == RunStatus.DONE_UNVERIFIED else None)]
        if r.status == RunStatus.IDLE:
            return [Idle(**base, output=r.output, error=r.error)]
        return [Failed(**base, status=r.status, error=r.error)]
