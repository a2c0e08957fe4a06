"""Each engine operation declared once: its request (the fields it sends) and how its result reads back.

    Start(task="fix the tests", agent="ana")     # a request: a frozen dataclass named after the operation
    Start.op == "start"                           # its wire name, the Engine method's name
    frame = encode(request)                       # {"op": "start", "task": ..., ...}: the client sends this
    request = decode(Start, frame)                # the supervisor reads it back; UsageError names a bad field
    outcome = request.result(reply["result"])     # the client's typed answer (an Outcome here)

Both executions follow the declaration: local mode's `LocalEngine.start` (sentinel/local/engine.py) and the
supervisor's handler (sentinel/supervisor/ops/), which its `OPS` maps by name; tests/engine/test_engine_ops.py
checks each operation has a client method, a supervisor handler and a local method whose parameters name its
fields. A field marked `wire` is sent by the client but is no parameter of the method (`follow`: the client
hears the run's events; the workflow the client read from the operator's own files).

Field types are the few a frame carries (CHECKS below: strings, whole numbers, flags, JSON); a class naming
another is refused when it is declared, so every field of every operation is checked before a handler runs.
Neither pydantic nor @dataclass: the client imports this on every system-mode command, and building thirty
models or generating thirty classes' methods cost it more than the rest of its import (`Operation` reads the
annotations once; mypy sees dataclasses, through `dataclass_transform`).
"""

from __future__ import annotations

import json
from dataclasses import MISSING, Field, dataclass, field
from typing import Callable, ClassVar, Generic, TypeVar, dataclass_transform

from sentinel.engine.api import Outcome, RunDetail
from sentinel.engine.rows import ApprovalRow, FiringRow, InboxRow, Row, RunRow, SessionRow
from sentinel.errors import SentinelError, UsageError
from sentinel.jsontypes import JSON, JSONObject

R = TypeVar("R", covariant=True)
O = TypeVar("O", bound="Operation[object]")
Listed = TypeVar("Listed", bound=Row)

WIRE = {"wire": True}  # field metadata: sent on the wire, no parameter of the engine method


@dataclass(frozen=True)
class Spec:
    """One declared field: its name, its type as written (a key of CHECKS), its default."""

    name: str
    kind: str
    default: object = MISSING
    factory: Callable[[], object] | None = None
    wire: bool = False

    @property
    def required(self) -> bool:
        return self.default is MISSING and self.factory is None


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
class Operation(Generic[R]):
    """One engine operation's request; `R` is what the Engine method returns. A subclass reads like a frozen,
    keyword-only dataclass, but is made by `__init_subclass__` from its annotations (no code generated per
    class: declaring thirty operations costs the client's start-up nothing it would notice). Field defaults are
    what a frame that leaves the field out gets."""

    op: ClassVar[str]         # its wire name: the Engine method's name
    group: ClassVar[str]      # the smaller protocol it belongs to (sentinel/engine/api.py)
    streams: ClassVar[bool] = False  # the supervisor may send `event` frames before its reply
    specs: ClassVar[tuple[Spec, ...]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        specs = list(cls.specs)
        for name, kind in cls.__dict__.get("__annotations__", {}).items():
            if str(kind).startswith("ClassVar"):
                continue
            given = cls.__dict__.get(name, MISSING)
            if isinstance(given, Field):
                factory = None if given.default_factory is MISSING else given.default_factory
                spec = Spec(name, str(kind), given.default, factory, bool(given.metadata.get("wire")))
                delattr(cls, name)
            else:
                spec = Spec(name, str(kind), given)
            if spec.kind not in CHECKS:
                raise TypeError(f"{cls.__name__}.{name}: {spec.kind!r} is no field type a frame carries")
            specs.append(spec)
        cls.specs = tuple(specs)

    def __init__(self, **values: object) -> None:
        for spec in self.specs:
            if spec.name in values:
                value = values.pop(spec.name)
            elif spec.factory is not None:
                value = spec.factory()
            elif spec.default is not MISSING:
                value = spec.default
            else:
                raise TypeError(f"{type(self).__name__}: {spec.name} is required")
            object.__setattr__(self, spec.name, value)
        if values:
            raise TypeError(f"{type(self).__name__}: no field {', '.join(values)}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, Operation) and other.arguments() == self.arguments()

    __hash__ = None  # type: ignore[assignment]  # equal by value, mutable lists inside: never a dict key

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.arguments().items())})"

    def result(self, value: JSON) -> R:
        """The reply's `result`, typed; anything else is a broken peer (SentinelError)."""
        raise NotImplementedError

    def arguments(self) -> JSONObject:
        """The request's fields as a frame carries them."""
        return {spec.name: getattr(self, spec.name) for spec in self.specs}


OPERATIONS: dict[str, type[Operation[object]]] = {}


def operation(name: str, group: str, *, streams: bool = False) -> Callable[[type[O]], type[O]]:
    """Declare an operation: its wire name (the method's) and its protocol group."""
    def declare(cls: type[O]) -> type[O]:
        cls.op, cls.group, cls.streams = name, group, streams
        OPERATIONS[name] = cls
        return cls

    return declare


def encode(request: Operation[object]) -> JSONObject:
    return {"op": request.op, **request.arguments()}


def decode(cls: type[O], message: JSONObject) -> O:
    """The request a frame carries: each declared field checked (a missing or wrong one is a UsageError naming
    it); a field left out, or null, takes its default; keys the operation does not declare are ignored."""
    values: dict[str, JSON] = {}
    for spec in cls.specs:
        value = message.get(spec.name)
        if value is None and not spec.required:
            continue
        values[spec.name] = CHECKS[spec.kind](spec.name, value)
    construct: Callable[..., O] = cls
    return construct(**values)


def wire_only(cls: type[Operation[object]]) -> list[str]:
    """The fields of `cls` the engine method does not take (sent by the client for the transport)."""
    return [spec.name for spec in cls.specs if spec.wire]


# -- field checks: one per type a frame carries -------------------------------------------------------

def _string(name: str, value: JSON) -> JSON:
    if not isinstance(value, str):
        raise UsageError(f"{name}: must be a string" + ("" if value is not None else " (missing)"))
    return value


def _count(name: str, value: JSON) -> JSON:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{name}: must be a whole number, not {json.dumps(value)[:40]}")
    return value


def _number(name: str, value: JSON) -> JSON:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{name}: must be a number, not {json.dumps(value)[:40]}")
    return float(value)


def _flag(name: str, value: JSON) -> JSON:
    if not isinstance(value, bool):
        raise UsageError(f"{name}: must be true or false, not {json.dumps(value)[:40]}")
    return value


def _strings(name: str, value: JSON) -> JSON:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{name}: must be a list of strings")
    return value


def _object(name: str, value: JSON) -> JSON:
    if not isinstance(value, dict):
        raise UsageError(f"{name}: must be an object")
    return value


def _objects(name: str, value: JSON) -> JSON:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise UsageError(f"{name}: must be a list of objects")
    return value


def _anything(name: str, value: JSON) -> JSON:
    return value


def _optional(check: Callable[[str, JSON], JSON]) -> Callable[[str, JSON], JSON]:
    return lambda name, value: None if value is None else check(name, value)


CHECKS: dict[str, Callable[[str, JSON], JSON]] = {
    "str": _string, "str | None": _optional(_string), "int": _count, "int | None": _optional(_count),
    "float": _number, "bool": _flag, "list[str]": _strings, "JSONObject": _object, "list[JSONObject]": _objects,
    "JSON": _anything,
}


# -- results: a reply's JSON read back as the method's type ----------------------------------------------

def result_object(value: JSON) -> JSONObject:
    """A result that must be a JSON object: anything else is a broken peer, never a result."""
    if not isinstance(value, dict):
        raise SentinelError(f"the other end answered {type(value).__name__} where an object was due")
    return value


def result_optional(value: JSON) -> JSONObject | None:
    return None if value is None else result_object(value)


def result_objects(value: JSON) -> list[JSONObject]:
    if not isinstance(value, list):
        raise SentinelError(f"the other end answered {type(value).__name__} where a list was due")
    return [result_object(item) for item in value]


def _rows(kind: type[Listed], value: JSON) -> list[Listed]:
    return [kind.from_dict(item) for item in result_objects(value)]


class _Outcome(Operation[Outcome]):
    def result(self, value: JSON) -> Outcome:
        return Outcome.from_dict(result_object(value))


class _Nothing(Operation[None]):
    def result(self, value: JSON) -> None:
        return None


class _Object(Operation[JSONObject]):
    def result(self, value: JSON) -> JSONObject:
        return result_object(value)


class _Optional(Operation[JSONObject | None]):
    def result(self, value: JSON) -> JSONObject | None:
        return result_optional(value)


# -- runs ------------------------------------------------------------------------------------------------

@operation("start", "runs", streams=True)
class Start(_Outcome):
    """A new run (`chat`: a chat session); `hook`: a watcher firing's id, whose hook session it is."""

    task: str
    model: str | None = None
    agent: str | None = None
    workspace: str | None = None
    chat: bool = False
    skills: list[str] = field(default_factory=list)
    hook: str | None = None
    follow: bool = field(default=False, metadata=WIRE)


@operation("send", "runs", streams=True)
class Send(_Outcome):
    """A chat session's next message."""

    run_id: str
    text: str
    skills: list[str] = field(default_factory=list)
    model: str | None = None
    follow: bool = field(default=False, metadata=WIRE)


@operation("interrupt", "runs")
class Interrupt(_Outcome):
    run_id: str


@operation("resume", "runs", streams=True)
class Resume(_Outcome):
    run_id: str
    follow: bool = field(default=False, metadata=WIRE)


@operation("run_workflow", "runs", streams=True)
class RunWorkflow(_Outcome):
    """System mode: the operator's workflow, read by the client from the operator's own files and sent whole."""

    name: str
    input_text: str = ""
    workflow: JSON = field(default=None, metadata=WIRE)
    source: str | None = field(default=None, metadata=WIRE)
    follow: bool = field(default=False, metadata=WIRE)


@operation("cancel", "runs")
class Cancel(_Outcome):
    run_id: str


@operation("undo", "runs")
class Undo(_Object):
    run_id: str
    to: int | None = None


@operation("runs", "runs")
class Runs(Operation[list[RunRow]]):
    limit: int | None = None
    all_hosts: bool = False

    def result(self, value: JSON) -> list[RunRow]:
        return _rows(RunRow, value)


@operation("show", "runs")
class Show(Operation[RunDetail]):
    """Its long lists come first as `part` frames (sentinel/frames.py)."""

    run_id: str

    def result(self, value: JSON) -> RunDetail:
        return RunDetail.from_dict(result_object(value))


@operation("events", "runs", streams=True)
class Events(_Outcome):
    """A run's events after `after`, as `event` frames (the newest run when `run_id` is None); its reply is the
    run's outcome once it pauses or ends (`follow`) or at once."""

    run_id: str | None = None
    after: int = 0
    follow: bool = False


@operation("sessions", "runs")
class Sessions(Operation[list[SessionRow]]):
    limit: int | None = None

    def result(self, value: JSON) -> list[SessionRow]:
        return _rows(SessionRow, value)


# -- approvals ------------------------------------------------------------------------------------------

@operation("pending", "approvals")
class Pending(Operation[list[ApprovalRow]]):
    all_hosts: bool = False

    def result(self, value: JSON) -> list[ApprovalRow]:
        return _rows(ApprovalRow, value)


@operation("approve", "approvals", streams=True)
class Approve(_Outcome):
    ident: str
    digest: str | None = None
    follow: bool = False
    always: bool = False


@operation("deny", "approvals", streams=True)
class Deny(_Outcome):
    ident: str
    reason: str = ""
    digest: str | None = None
    follow: bool = False


@operation("link", "approvals")
class Link(_Object):
    secret: str


@operation("decide_link", "approvals", streams=True)
class DecideLink(_Outcome):
    secret: str
    approved: bool
    reason: str = ""
    follow: bool = False
    always: bool = False


# -- agents: what they may name, trusted code, MCP pins ----------------------------------------------------

@operation("catalog", "agents")
class Catalog(Operation[dict[str, list[dict[str, str]]]]):
    agent: str | None = None

    def result(self, value: JSON) -> dict[str, list[dict[str, str]]]:
        return {kind: [{k: str(v) for k, v in item.items()} for item in result_objects(items)]
                for kind, items in result_object(value).items()}


@operation("trust_list", "agents")
class TrustList(Operation[list[JSONObject]]):
    agent: str | None = None

    def result(self, value: JSON) -> list[JSONObject]:
        return result_objects(value)


@operation("trust_revoke", "agents")
class TrustRevoke(Operation[int]):
    tool: str
    agent: str | None = None
    code_sha256: str | None = None

    def result(self, value: JSON) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SentinelError(f"the other end answered {type(value).__name__} where a count was due")
        return value


@operation("mcp_trust", "agents")
class McpTrust(_Optional):
    server: str


@operation("mcp_trust_set", "agents")
class McpTrustSet(_Nothing):
    server: str
    sha256: str
    document: str


@operation("mcp_trust_forget", "agents")
class McpTrustForget(_Nothing):
    server: str


@operation("audit_quarantined", "agents")
class AuditQuarantined(_Nothing):
    """Memory notes the CLI's sync quarantined (note, title, finding), one audit record each."""

    scope: str
    findings: list[JSONObject]


# -- watchers -----------------------------------------------------------------------------------------------

@operation("fire_watcher", "watchers")
class FireWatcher(Operation[FiringRow]):
    """Answers with the firing as it stands once its hook session started (the client waits for its relay)."""

    ident: str
    payload: JSON = None

    def result(self, value: JSON) -> FiringRow:
        return FiringRow.from_dict(result_object(value))


@operation("firings", "watchers")
class Firings(Operation[list[FiringRow]]):
    watcher: str | None = None
    limit: int | None = None

    def result(self, value: JSON) -> list[FiringRow]:
        return _rows(FiringRow, value)


@operation("inbox", "watchers")
class Inbox(Operation[list[InboxRow]]):
    limit: int | None = None

    def result(self, value: JSON) -> list[InboxRow]:
        return _rows(InboxRow, value)


# -- admin: status, the web console's sign-in ---------------------------------------------------------------

@operation("status", "admin")
class Status(_Object):
    pass


@operation("web_token", "admin")
class WebToken(_Object):
    listening: str | None = None


@operation("web_sign_in", "admin")
class WebSignIn(_Optional):
    token: str
    session_ttl_s: float


@operation("web_session", "admin")
class WebSession(_Optional):
    secret: str

