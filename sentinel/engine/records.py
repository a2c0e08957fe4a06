"""The journal's records, typed: one frozen dataclass per kind of line `journal.jsonl` holds.

    run.record(Finished(call_id=..., result=...))   # a writer builds the typed record, never a dict
    line = encode(record)         # the one JSON line it is written as (seq and t first, then type, then keys)
    record = parse(line)          # bytes or str of one journal line -> Record | None, never raises
    record = from_dict(obj)       # an already decoded line
    record.to_dict()              # the JSON object the line holds, key for key

Journals are written by agents' workers and read by root (the supervisor): a line is data, never trusted.
`parse` is total: anything that is not a JSON object of a known `type` whose keys have the types below (a
required key present, nested JSON bounded) is None, and the reader skips that line as it skips a torn one.
Keys a kind does not know are dropped. `absent` remembers which optional keys the line left out, so
`to_dict` gives back the line's own object and a reader can tell "no output given" from "output: null".

`encode` writes every key of a kind except the ones declared `optional(...)`, which it leaves out while they
hold their default (a `finished` line says `"changed":true` only when the call changed something), and the keys
a record names in `absent` (a `status` that keeps the output it had): the lines are those the writers wrote as
dicts before, so journals old and new read the same either way.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sentinel.frames import loads
from sentinel.jsontypes import JSON, JSONObject

_OMIT = {"omit": True}
T = typing.TypeVar("T")


def optional(default: T) -> T:
    """A key `encode` leaves out while it holds `default` (a flag or note most lines do not carry)."""
    return field(default=default, metadata=_OMIT)


def optional_list() -> list[JSON]:
    """An optional key whose default is an empty list."""
    return field(default_factory=list, metadata=_OMIT)


@dataclass(frozen=True, kw_only=True)
class Record:
    """One line of a run's journal: `seq` its place, `t` when it was written."""
    type: ClassVar[str] = ""

    seq: int = 0
    t: float | None = None
    absent: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def to_dict(self) -> JSONObject:
        out: JSONObject = {"type": self.type}
        for f in dataclasses.fields(self):
            if f.name != "absent" and f.name not in self.absent:
                out[f.name] = getattr(self, f.name)
        return out

    def has(self, key: str) -> bool:
        """True when the line gave `key` (even as null)."""
        return key not in self.absent


@dataclass(frozen=True, kw_only=True)
class Created(Record):
    """The run was made: its task, agent, model, workspace and place among other runs."""
    type: ClassVar[str] = "created"
    id: str = ""
    task: str = ""
    agent: str = ""
    model: str = ""
    workspace: str = ""
    mission: str = ""
    parent_id: str | None = None
    kind: str = "task"


@dataclass(frozen=True, kw_only=True)
class Session(Record):
    """A process took the run up (the first one, or again after a pause, a crash or a restart)."""

    type: ClassVar[str] = "session"
    pid: int | None = None


@dataclass(frozen=True, kw_only=True)
class Message(Record):
    """A system or user message joined the conversation; `skill` an attached skill, `note` a harness note
    (a resume, a safeguard's correction) rather than a new request."""

    type: ClassVar[str] = "message"
    message: JSONObject
    skill: str | None = optional(None)
    note: str | None = optional(None)


@dataclass(frozen=True, kw_only=True)
class Model(Record):
    """The run's model changed for the turns from here (a chat message naming another model)."""
    type: ClassVar[str] = "model"
    model: str


@dataclass(frozen=True, kw_only=True)
class System(Record):
    """The system prompt changed during the run (self-state edited)."""

    type: ClassVar[str] = "system"
    content: str


@dataclass(frozen=True, kw_only=True)
class Assistant(Record):
    """The model's message (text and the tool calls it asked for), with its latency and usage."""
    type: ClassVar[str] = "assistant"
    message: JSONObject
    model: str | None = None
    latency_ms: float | None = None
    usage: JSONObject | None = None
    recovered: bool = False
    rejected: str | None = optional(None)       # the safeguard that sent the reply back


@dataclass(frozen=True, kw_only=True)
class Safeguard(Record):
    """A small-model safeguard fired: what it caught and what the loop did."""
    type: ClassVar[str] = "safeguard"
    kind: str = ""
    action: str = ""
    detail: str = ""
    note: str | None = optional(None)


@dataclass(frozen=True, kw_only=True)
class SelfEdit(Record):
    """The agent changed its own self-state (soul, user notes)."""
    type: ClassVar[str] = "self_edit"
    agent: str = ""
    call_id: str = ""
    tool: str = ""
    file: str = ""
    chars: int = 0
    version: int | None = None
    excerpt: str = ""


@dataclass(frozen=True, kw_only=True)
class Decision(Record):
    """The verdict on one tool call, with every layer's outcome and reason."""
    type: ClassVar[str] = "decision"
    call_id: str
    tool: str = ""
    arguments: JSON = None
    outcome: str = ""
    reason: str = ""
    layers: list[JSON] = field(default_factory=list)
    code_sha256: str | None = optional(None)
    mcp: JSONObject | None = optional(None)


@dataclass(frozen=True, kw_only=True)
class Started(Record):
    """A tool call began executing."""
    type: ClassVar[str] = "started"
    call_id: str
    tool: str | None = None


@dataclass(frozen=True, kw_only=True)
class Finished(Record):
    """A tool call got its result."""
    type: ClassVar[str] = "finished"
    call_id: str
    result: str
    tool: str | None = optional(None)
    changed: bool = optional(False)
    interrupted: bool = optional(False)
    duplicate: bool = optional(False)
    known: list[JSON] = optional_list()  # workspace paths this call showed or wrote whole


@dataclass(frozen=True, kw_only=True)
class Paused(Record):
    """A tool call waits for a person's approval."""
    type: ClassVar[str] = "paused"
    call_id: str
    approval_id: str
    tool: str = ""
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class Resolved(Record):
    """A pending approval was answered: approved or not, by whom, why."""
    type: ClassVar[str] = "resolved"
    call_id: str
    approval_id: str | None = None
    approved: bool = False
    reason: str | None = None
    by: str | None = None


@dataclass(frozen=True, kw_only=True)
class Status(Record):
    """The run ended, went idle, or stopped: `output` left out keeps the output it had."""

    type: ClassVar[str] = "status"
    status: str
    output: str | None = None
    error: str | None = None

    @classmethod
    def keeping_output(cls, status: str, *, error: str | None = None) -> "Status":
        """A status that leaves `output` out: the run keeps the answer it had (a chat turn stopped)."""
        return cls(status=status, error=error, absent=frozenset({"output"}))


@dataclass(frozen=True, kw_only=True)
class ChildStarted(Record):
    """A child run was made for a tool call (delegate, workflow step)."""
    type: ClassVar[str] = "child_started"
    child_id: str = ""
    call_id: str = ""
    agent: str = ""
    task: str = ""


@dataclass(frozen=True, kw_only=True)
class ChildFinished(Record):
    """A child run ended; its outcome returns to the call that made it."""
    type: ClassVar[str] = "child_finished"
    child_id: str = ""
    call_id: str = ""
    status: str = ""
    output: str | None = None


@dataclass(frozen=True, kw_only=True)
class Compaction(Record):
    """messages[start:end] were summarized into `message`."""

    type: ClassVar[str] = "compaction"
    start: int
    end: int
    message: JSONObject
    summarized: int = 0
    turns: int = 0
    chars_before: int = 0
    chars_after: int = 0


@dataclass(frozen=True, kw_only=True)
class Warned(Record):
    """Something the operator should see that did not stop the run."""
    type: ClassVar[str] = "warning"
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class Checkpoint(Record):
    """A point of the session's work log (sentinel/worker/compact.py): what was done up to here, titled."""
    type: ClassVar[str] = "checkpoint"
    title: str = ""


@dataclass(frozen=True, kw_only=True)
class Archived(Record):
    """The session file was archived under `path`; a fresh one starts."""

    type: ClassVar[str] = "archived"
    path: str = ""


@dataclass(frozen=True, kw_only=True)
class WorkspaceStep(Record):
    """What one tool call changed in the workspace (sentinel/worker/undo.py): path -> a file's or symlink's entry,
    or null for a path it removed; `undo`: the step this one restored the workspace to (`sentinel undo`); `complete`: false
    when the workspace was too large to look at whole (only the paths a file tool named are known)."""

    type: ClassVar[str] = "workspace_step"
    call_id: str = ""
    tool: str = ""
    changes: JSONObject = field(default_factory=dict)
    complete: bool = True
    undo: int | None = optional(None)


@dataclass(frozen=True, kw_only=True)
class ContractMade(Record):
    """What the task asks for, made once at the run's start (sentinel/worker/safeguards/contract.py): `terms` is
    the contract's fields, `clauses` the same in words."""

    type: ClassVar[str] = "contract"
    terms: JSONObject = field(default_factory=dict)
    clauses: list[JSON] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Verdict(Record):
    """The harness's check of an answer against the contract: `verified` only when every clause was checked and
    held; `unchecked` says what could not be (the run then ends `done_unverified`)."""

    type: ClassVar[str] = "verdict"
    verified: bool = False
    checked: list[JSON] = field(default_factory=list)
    unmet: list[JSON] = field(default_factory=list)
    unchecked: list[JSON] = optional_list()  # a line written before it existed has none


KINDS: dict[str, type[Record]] = {cls.type: cls for cls in (
    Created, Session, Message, Model, System, Assistant, Safeguard, SelfEdit, Decision, Started, Finished, Paused,
    Resolved, Status, ChildStarted, ChildFinished, Compaction, Warned, Checkpoint, Archived, WorkspaceStep, ContractMade,
    Verdict)}


def encode(record: Record) -> str:
    """The journal line (without its newline) `record` is written as: seq, t and type first, then its keys in
    declaration order, an optional one only when it differs from its default, none that `absent` names."""
    out: JSONObject = {"seq": record.seq, "t": record.t, "type": record.type}
    absent = record.absent
    for name, default, omit in _write_spec(type(record)):
        value = getattr(record, name)
        if name not in absent and not (omit and value == default):
            out[name] = value
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def valid(record: Record) -> bool:
    """Whether `parse` takes back what `encode` writes of `record`: each key's value has its declared type (a
    writer handing on a value it did not check, such as a store row's field, could break that)."""
    return all(_accepts(accepts, getattr(record, name)) for name, accepts, _ in _field_spec(type(record)))


def parse(line: bytes | str) -> Record | None:
    """The record one journal line holds; None for anything else (torn, not JSON, too deep, unknown kind,
    a key of the wrong type)."""
    try:
        data = loads(line)
    except (ValueError, TypeError):  # UnicodeDecodeError is a ValueError
        return None
    return from_dict(data)


def from_dict(data: JSON) -> Record | None:
    """The record a decoded journal line holds; None when it is not one."""
    if not isinstance(data, dict):
        return None
    kind = data.get("type")
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return None
    names, fields = _names(cls), _field_spec(cls)
    # untyped: each value was checked against its field's declared type just above it is kept (`_accepts`)
    values: dict[str, Any] = {}
    for name, accepts, required in fields:
        value = data.get(name, _MISSING)
        if value is _MISSING:
            if required:
                return None
            continue
        if not _accepts(accepts, value):
            return None
        values[name] = value
    return cls(**values, absent=names.difference(data) if len(values) < len(names) else _NONE)


def _accepts(accepts: tuple[type, ...], value: object) -> bool:
    if isinstance(value, bool) and bool not in accepts:
        return False  # True is an int to Python, not to a journal
    return isinstance(value, accepts)


def _runtime_types(hint: object) -> tuple[type, ...]:
    """What a field's annotation lets a JSON value be (its outer type: a list's items are not checked)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        out: tuple[type, ...] = ()
        for arm in typing.get_args(hint):
            out += _runtime_types(arm)
        return out
    if hint is type(None):
        return (type(None),)
    if hint is float:
        return (int, float)
    origin = typing.get_origin(hint)
    found = origin if origin is not None else hint
    if not isinstance(found, type):
        raise TypeError(f"a journal field typed {hint!r} has no check a JSON value can pass")
    return (found,)


def _fields(cls: type[Record]) -> dict[str, tuple[tuple[type, ...], bool]]:
    hints = typing.get_type_hints(cls)
    return {f.name: (_runtime_types(hints[f.name]),
                     f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
            for f in dataclasses.fields(cls) if f.name != "absent"}


# Each kind's specs are worked out at its first use, not at import: a listing never reads the journal.
FieldSpec = tuple[tuple[str, tuple[type, ...], bool], ...]  # name, the JSON types its value may have, required
WriteSpec = tuple[tuple[str, object, bool], ...]            # name, default, left out when it is the default
_SPECS: dict[type[Record], tuple[FieldSpec, frozenset[str], WriteSpec]] = {}


def _specs(cls: type[Record]) -> tuple[FieldSpec, frozenset[str], WriteSpec]:
    found = _SPECS.get(cls)
    if found is None:
        fields = tuple((name, *spec) for name, spec in _fields(cls).items())
        found = _SPECS[cls] = (fields, frozenset(name for name, _, _ in fields), _writes(cls))
    return found


def _field_spec(cls: type[Record]) -> FieldSpec:
    return _specs(cls)[0]


def _names(cls: type[Record]) -> frozenset[str]:
    return _specs(cls)[1]


def _write_spec(cls: type[Record]) -> WriteSpec:
    return _specs(cls)[2]


def _writes(cls: type[Record]) -> WriteSpec:
    out = []
    for f in dataclasses.fields(cls):
        if f.name in ("absent", "seq", "t"):
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        out.append((f.name, default, bool(f.metadata.get("omit"))))
    return tuple(out)


_MISSING, _NONE = object(), frozenset[str]()
