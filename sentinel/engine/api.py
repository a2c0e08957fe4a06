"""The one engine protocol every UI talks to: local mode and the supervisor's client implement it.

    engine = sentinel.connect.open_engine()     # LocalEngine, or SystemEngine when a supervisor answers
    outcome = engine.start("task", on_event=render)
    for event in engine.events(run_id, after=seq, follow=True): ...

    session = engine.start("hello", chat=True, on_event=render)     # a chat session: `idle` after each answer
    engine.send(session.id, "and then?", on_event=render)           # the next turn, until its answer or a pause

The CLI, the chat and the web console send these operations and render `sentinel.engine.events`; none of
them reaches into the store, the journal or the worker.

`Engine` is five smaller protocols, one per concern, so a user can ask for only what it calls: RunEngine,
ApprovalEngine, AgentEngine, WatcherEngine, AdminEngine. Each operation's request and result are declared
once in sentinel/engine/operations.py (the wire the supervisor's client speaks); docs/architecture.md shows
how one is added.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Self, Sequence

from sentinel.engine.rows import ApprovalRow, FiringRow, InboxRow, RunRow, SessionRow, StoredRun
from sentinel.jsontypes import JSON, JSONObject

if TYPE_CHECKING:  # named in signatures only: a listing never imports the journal's records and events
    from sentinel.engine.events import Event, Listener
    from sentinel.engine.state import RunState


@dataclass
class Outcome:
    """Where a run stands after an operation: done, waiting_approval, failed, interrupted or cancelled; a chat
    session is `idle` between turns (never done: it waits for the next message)."""

    id: str
    status: str
    output: str | None = None
    error: str | None = None
    approval_id: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return {"id": self.id, "status": self.status, "output": self.output, "error": self.error,
                "approval_id": self.approval_id, "warnings": list[JSON](self.warnings)}

    @classmethod
    def from_dict(cls, data: JSONObject) -> "Outcome":
        warnings = data.get("warnings") or []
        return cls(_text(data, "id"), _text(data, "status"), _optional(data, "output"), _optional(data, "error"),
                   _optional(data, "approval_id"), [str(w) for w in warnings] if isinstance(warnings, list) else [])


def _text(data: JSONObject, key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        from sentinel.errors import SentinelError

        raise SentinelError(f"the other end sent an outcome without {key!r}")
    return value


def _optional(data: JSONObject, key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class RunDetail:
    """One run as `show` reports it, the same in local and system mode (`sentinel show ID --json` prints
    `to_dict()`). `messages`: the conversation as the model sees it now; `history`: as it happened, before
    any compaction (`compactions` says where); `decisions`: the verdicts as the store recorded them, each
    with its operator resolution; `user`: the Linux user its tools run as (None: the operator's, local mode)."""

    id: str
    status: str
    task: str
    agent: str
    model: str
    kind: str = "task"
    user: str | None = None
    workspace: str = ""
    parent_id: str | None = None
    output: str | None = None
    error: str | None = None
    steps: int = 0
    created_at: float = 0.0
    skills: list[str] = field(default_factory=list)
    messages: list[JSONObject] = field(default_factory=list)
    history: list[JSONObject] = field(default_factory=list)
    compactions: list[JSONObject] = field(default_factory=list)
    decisions: list[JSONObject] = field(default_factory=list)
    children: list[JSONObject] = field(default_factory=list)
    safeguards: list[JSONObject] = field(default_factory=list)
    self_edits: list[JSONObject] = field(default_factory=list)
    pending_approvals: list[ApprovalRow] = field(default_factory=list)
    checkpoints: list[JSONObject] = field(default_factory=list)  # what each call changed (sentinel undo)
    contract: list[str] | None = None   # what the task asks for, in words (None: a run without one, e.g. a chat)
    verified: bool | None = None        # the answer checked against it by the harness (None: not checked)
    unchecked: list[str] = field(default_factory=list)  # what the harness could not check (`done_unverified`)

    def to_dict(self) -> JSONObject:
        return asdict(self) | {"pending_approvals": [a.to_dict() for a in self.pending_approvals]}

    @classmethod
    def of(cls, row: StoredRun, state: RunState, *, status: str, decisions: list[JSONObject],
           history: list[JSONObject], compactions: list[JSONObject], children: list[JSONObject],
           pending: list[ApprovalRow]) -> "RunDetail":
        """The one way both modes build `show`: the store's row first (the agent writes its journal, never
        the store), the replayed journal for the conversation."""
        return cls(id=row["id"], status=status, kind=row.get("kind") or "task", task=row["task"],
                   agent=row["agent"], user=row.get("user"), model=row["model"], skills=state.skills,
                   workspace=row["workspace"], parent_id=row.get("parent_id"),
                   output=row.get("output") or state.output, error=row.get("error") or state.error,
                   steps=state.steps, created_at=row["created_at"], messages=state.messages,
                   decisions=decisions, compactions=compactions, history=history, children=children,
                   safeguards=state.safeguards, self_edits=state.self_edits, pending_approvals=pending,
                   checkpoints=[{"step": i, "call_id": s.get("call_id", ""), "tool": s.get("tool", ""),
                                 "undo": s.get("undo"), "complete": s.get("complete", True),
                                 "changed": [p for p in sorted(p for p, e in s["changes"].items() if e is not None)],
                                 "removed": [p for p in sorted(p for p, e in s["changes"].items() if e is None)]}
                                for i, s in enumerate(state.workspace_steps, 1)],
                   contract=state.contract["clauses"] if state.contract else None, verified=state.verified,
                   unchecked=state.unchecked)

    @classmethod
    def from_dict(cls, data: JSONObject) -> "RunDetail":
        """From the supervisor's answer; keys this version does not know are left out."""
        names = {f.name for f in fields(cls)}
        known = {k: v for k, v in data.items() if k in names}
        listed = known.pop("pending_approvals", None) or []
        approvals = [ApprovalRow.from_dict(a) for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []
        construct: Callable[..., RunDetail] = cls  # the peer's values as it sent them (`show --json` prints them)
        return construct(**known, pending_approvals=approvals)


class RunEngine(Protocol):
    """Runs and chat sessions: start, continue, stop and read them. `on_event` receives the run's typed events
    while the call executes it."""

    mode: str  # "local" or "system"

    def start(self, task: str, *, model: str | None = None, agent: str | None = None,
              workspace: Path | None = None, on_event: Listener | None = None, chat: bool = False,
              skills: Sequence[str] = (), hook: str | None = None) -> Outcome:
        """Start a run (with `chat`, a chat session whose first message is `task`); `skills` join its context.
        `hook`: a watcher firing's id; the run is its hook session and answers its relay contract."""
        ...

    def send(self, run_id: str, text: str, *, skills: Sequence[str] = (), model: str | None = None,
             on_event: Listener | None = None) -> Outcome:
        """Add a user message to an idle chat session and execute the turn until its answer or a pause."""
        ...

    def interrupt(self, run_id: str) -> Outcome:
        """Stop a chat session's current turn (its work stops, its pending approval can never be used); the
        session becomes idle and its next message continues the conversation."""
        ...

    def sessions(self, *, limit: int | None = None) -> list[SessionRow]:
        """Chat sessions, most recently active first: id, title (the first message), agent, model, status."""
        ...

    def resume(self, run_id: str, *, on_event: Listener | None = None) -> Outcome: ...

    def run_workflow(self, name: str, input_text: str = "", *, workspace: Path | None = None,
                     on_event: Listener | None = None) -> Outcome:
        """Run a saved workflow: each step a child run of the workflow's run, until it ends or a step pauses."""
        ...

    def cancel(self, run_id: str) -> Outcome: ...

    def undo(self, run_id: str, to: int | None = None) -> JSONObject:
        """Put the run's workspace back as it was after checkpoint `to` (0: before its first change; None: the
        checkpoint before the current one); what was restored, removed, and could not be."""
        ...

    def runs(self, *, status: str | None = None, limit: int | None = None,
             all_hosts: bool = False) -> list[RunRow]:
        """`all_hosts`: on a store many hosts share (system mode), every host's runs, not only this one's."""
        ...

    def show(self, run_id: str) -> RunDetail: ...

    def events(self, run_id: str | None = None, *, after: int = 0, follow: bool = False) -> Iterator[Event]:
        """A run's durable events after `after` (the newest run when None); with `follow`, until it pauses or ends."""
        ...


class ApprovalEngine(Protocol):
    """The approval queue: list it, decide (by id or with a one-tap link), and resume what was decided."""

    def pending(self, *, all_hosts: bool = False) -> list[ApprovalRow]: ...

    def approve(self, ident: str, *, digest: str | None = None, on_event: Listener | None = None,
                follow: bool = True, always: bool = False) -> Outcome:
        """Approve an approval (or a run's single pending one); `digest`, when given, must match the call's.
        The decision is recorded, then the run resumes: `follow` waits for it to pause or end (its events to
        `on_event`); without it the engine's own runner resumes it and this answers at once. `always`: a coding
        agent's ask only (sentinel/engine/asks.py): its exact call joins the repository's allowlist."""
        ...

    def deny(self, ident: str, *, reason: str = "", digest: str | None = None,
             on_event: Listener | None = None, follow: bool = True) -> Outcome: ...

    def link(self, secret: str) -> JSONObject:
        """What a one-tap decision link (sentinel/notify) would decide; refused when it can no longer be used."""
        ...

    def decide_link(self, secret: str, *, approved: bool, reason: str = "",
                    on_event: Listener | None = None, follow: bool = True, always: bool = False) -> Outcome:
        """Approve or deny with a one-tap link, once, then resume the run as `approve` does (`always`: as
        `approve`'s)."""
        ...


class AgentEngine(Protocol):
    """What agents may name and run: the chat's catalog, the workflow roster, trusted code and MCP pins."""

    def catalog(self, agent: str | None = None) -> dict[str, list[dict[str, str]]]:
        """What a chat completes: `agents`, `skills` and `workflows`, each a list of {name, description}."""
        ...

    def roster(self) -> list[str] | None:
        """The agents a workflow step may name: the supervisor's registered agents; None in local mode, where
        any agent profile here may be named."""
        ...

    def trust_list(self, agent: str | None = None) -> list[JSONObject]:
        """Trusted code of agent-authored tools: agent, tool, code_sha256, trusted_by, trusted_at."""
        ...

    def trust_revoke(self, tool: str, *, agent: str | None = None, code_sha256: str | None = None) -> int:
        """Revoke trust in a tool's code (all agents, every hash unless narrowed); how many grants were revoked."""
        ...

    def mcp_trust(self, server: str) -> JSONObject | None:
        """The pin of an MCP server (`sentinel mcp trust`): sha256, document, trusted_by, trusted_at; None."""
        ...

    def mcp_trust_set(self, server: str, sha256: str, document: str) -> None:
        """Pin an MCP server's listing as the operator approved it (`document` must hash to `sha256`)."""
        ...

    def mcp_trust_forget(self, server: str) -> None:
        """Drop an MCP server's pin (the server was removed from the configuration)."""
        ...

    def audit_quarantined(self, scope: str, findings: list[JSONObject]) -> None:
        """Record memory notes the CLI's sync found and quarantined (note, title, finding), one audit record each."""
        ...


class WatcherEngine(Protocol):
    """Watchers: their firings, the operator's inbox, and firing one now."""

    def firings(self, *, watcher: str | None = None, limit: int | None = None) -> list[FiringRow]:
        """Watcher firings, newest first: watcher, dedupe key, hook session (run_id), status (pending, notified,
        fallback, suppressed), outcome, escalation."""
        ...

    def inbox(self, *, limit: int | None = None) -> list[InboxRow]:
        """The operator's inbox, newest first: what relays delivered there (notify, fallback, failed deliveries)."""
        ...

    def fire_watcher(self, ident: str, payload: JSON, *, on_event: Listener | None = None) -> FiringRow:
        """Fire a watcher now (no match, dedupe or cooldown) and wait until its relay settled the firing; its
        hook session's events go to `on_event`. The firing as `firings()` lists it."""
        ...


class AdminEngine(Protocol):
    """The engine itself: its status, and the web console's sign-in."""

    mode: str  # "local" or "system"

    def status(self) -> JSONObject: ...

    def web_token(self, listening: str | None = None) -> JSONObject:
        """The web console's kept secret path and a one-time sign-in token for this operator:
        {prefix, operator, token} (sentinel/web/guard.py). `listening`: the address (scheme://host:port) of the
        console now starting, which links then name (unless `web.public_url` is set)."""
        ...

    def web_sign_in(self, token: str, session_ttl_s: float) -> JSONObject | None:
        """Trade a one-time sign-in token for a console session; None when the token is unknown or used."""
        ...

    def web_session(self, secret: str) -> JSONObject | None:
        """The console session a cookie's secret names, or None."""
        ...


class Engine(RunEngine, ApprovalEngine, AgentEngine, WatcherEngine, AdminEngine, Protocol):
    """Every operation (sentinel/engine/operations.py declares each one's request and result); a user that needs
    fewer takes the smaller protocol it uses."""

    def close(self) -> None: ...

    def __enter__(self) -> "Engine": ...

    def __exit__(self, *exc: object) -> None: ...


class Closing:
    """`with open_engine() as engine:` for both engines: closed however the block ends."""

    def close(self) -> None: ...

    def __enter__(self) -> Self:  # the engine itself, whichever it is
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
