"""Run state rebuilt from the journal: a reducer over events, plus the atomic snapshot cache.

    state = RunState.load(run_dir)      # snapshot (if any) + journal tail
    state.apply(event)                  # one event at a time, in order

The snapshot stores the state and the journal offset it covers; deleting it
only costs a full replay.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Iterable, TypedDict

from sentinel.engine import journal
from sentinel.engine import records as rec
from sentinel.frames import loads
from sentinel.engine.status import RunStatus
from sentinel.jsontypes import JSONObject
from sentinel.models.base import ToolCall, tool_calls

SNAPSHOT = "snapshot.json"


class WorkspaceStep(TypedDict):
    """What one tool call changed in the workspace (a `workspace_step` record, sentinel/worker/undo.py)."""

    call_id: str
    tool: str
    changes: JSONObject   # path -> a file's or symlink's entry (undo.py), or None for a path the call removed
    complete: bool
    undo: int | None
    t: float | None


class Contract(TypedDict):
    """The run's contract: its terms (sentinel/worker/safeguards/contract.py) and the same in words."""

    terms: JSONObject
    clauses: list[str]
JOURNAL = "journal.jsonl"


@dataclass
class RunState:
    id: str = ""
    task: str = ""
    agent: str = ""
    model: str = ""
    workspace: str = ""
    mission: str = ""
    parent_id: str | None = None
    kind: str = "task"                                       # "chat": a session that waits for the next message
    status: str = RunStatus.RUNNING
    output: str | None = None
    error: str | None = None
    messages: list[JSONObject] = field(default_factory=list)
    steps: int = 0
    decisions: dict[str, JSONObject] = field(default_factory=dict)
    started: dict[str, int] = field(default_factory=dict)     # call_id -> times started
    finished: dict[str, bool] = field(default_factory=dict)  # call ids with a result
    approvals: dict[str, str] = field(default_factory=dict)   # call_id -> approval id
    resolved: dict[str, JSONObject] = field(default_factory=dict)
    active_s: float = 0.0
    sessions: int = 0                                        # processes that executed the run
    session_t: float | None = None
    last_t: float | None = None
    turn_steps: int = 0                                      # steps and active seconds when the last user
    turn_s: float = 0.0                                      # message arrived: limits count from there
    skills: list[str] = field(default_factory=list)          # skills attached to the conversation
    compactions: int = 0                                     # times the middle of the conversation was summarized
    request: str = ""                                        # the last user message: the task, or a chat message
    corrections: int = 0                                     # replies sent back as no answer since `request`
    changes: int = 0                                         # tool calls that changed something since `request`
    last_change: str = ""                                    # the call id of the latest of them
    rejected: bool = False                                   # the last assistant reply was not taken as an answer
    safeguards: list[JSONObject] = field(default_factory=list)   # kind, action, detail: each time one fired
    self_edits: list[JSONObject] = field(default_factory=list)   # edit_soul / update_user calls that wrote
    known: list[str] = field(default_factory=list)           # workspace paths the run read or wrote whole
    turn_args: list[str] = field(default_factory=list)       # arguments of every tool call since `request`
    workspace_steps: list[WorkspaceStep] = field(default_factory=list)  # what each call changed (undo)
    contract: Contract | None = None                         # what the task asks for (terms, clauses), once a run
    verified: bool | None = None                             # the last answer's check against the contract
    unchecked: list[str] = field(default_factory=list)       # what that check could not see (`done_unverified`)
    seq: int = 0
    offset: int = 0

    # -- reducer ------------------------------------------------------------

    def apply(self, e: rec.Record) -> None:
        t = e.t
        if isinstance(e, rec.Session):
            self._close_session()
            self.session_t = t
            self.sessions += 1
        handler = getattr(self, f"_on_{e.type}", None)
        if handler:
            handler(e)
        self.last_t = t
        self.seq = e.seq if e.has("seq") else self.seq

    def _close_session(self) -> None:
        if self.session_t is not None and self.last_t is not None:
            self.active_s += max(0.0, self.last_t - self.session_t)
        self.session_t = None

    def _on_created(self, e: rec.Created) -> None:
        for key in ("id", "task", "agent", "model", "workspace", "mission", "parent_id", "kind"):
            if e.has(key):
                setattr(self, key, getattr(e, key))

    def _on_message(self, e: rec.Message) -> None:
        self.messages.append(e.message)
        if e.skill:
            self.skills.append(e.skill)
        elif e.message.get("role") == "user" and not e.note:  # a harness note is not a new request
            self._close_session()  # the time a session waited for this message is not work
            self.turn_steps, self.turn_s = self.steps, self.active_s
            self.request, self.corrections, self.changes = str(e.message.get("content") or ""), 0, 0
            self.last_change, self.turn_args = "", []

    def _on_model(self, e: rec.Model) -> None:
        self.model = e.model

    def _on_system(self, e: rec.System) -> None:
        """The system prompt changed (self-state edited during the run): later model calls see the new one."""
        prompt: JSONObject = {"role": "system", "content": e.content}
        if self.messages and self.messages[0].get("role") == "system":
            self.messages[0] = prompt
        else:
            self.messages.insert(0, prompt)

    def _on_compaction(self, e: rec.Compaction) -> None:
        """The middle of the conversation was summarized: one message stands for messages[start:end] from now on."""
        self.messages[e.start:e.end] = [e.message]
        self.compactions += 1

    def _on_assistant(self, e: rec.Assistant) -> None:
        self.messages.append(e.message)
        self.steps += 1
        self.rejected = bool(e.rejected)
        items = e.message.get("tool_calls")
        for item in items if isinstance(items, list) else []:  # compaction may drop the message: these stay
            call = ToolCall.from_message(item)
            self.turn_args.append(call.arguments if call is not None else "")

    def _on_safeguard(self, e: rec.Safeguard) -> None:
        self.safeguards.append({"kind": e.kind, "action": e.action, "detail": e.detail})
        if e.action == "retry":
            self.corrections += 1

    def _on_self_edit(self, e: rec.SelfEdit) -> None:
        self.self_edits.append({"agent": e.agent, "call_id": e.call_id, "tool": e.tool, "file": e.file,
                                "chars": e.chars, "version": e.version, "excerpt": e.excerpt})

    def _on_decision(self, e: rec.Decision) -> None:
        kept = ("call_id", "tool", "arguments", "outcome", "reason", "layers", "code_sha256")
        self.decisions[e.call_id] = {k: v for k, v in e.to_dict().items() if k in kept}

    def _on_started(self, e: rec.Started) -> None:
        self.started[e.call_id] = self.started.get(e.call_id, 0) + 1

    def _on_finished(self, e: rec.Finished) -> None:
        self.finished[e.call_id] = True
        self.changes += e.changed
        self.known += [p for p in e.known if isinstance(p, str) and p not in self.known]
        if e.changed:
            self.last_change = e.call_id
        self.messages.append({"role": "tool", "tool_call_id": e.call_id, "content": e.result})

    def _on_contract(self, e: rec.ContractMade) -> None:
        self.contract = {"terms": e.terms, "clauses": [c for c in e.clauses if isinstance(c, str)]}

    def _on_verdict(self, e: rec.Verdict) -> None:
        self.verified = e.verified
        self.unchecked = [str(c) for c in e.unchecked]

    def _on_workspace_step(self, e: rec.WorkspaceStep) -> None:
        self.workspace_steps.append({"call_id": e.call_id, "tool": e.tool, "changes": e.changes,
                                     "complete": e.complete, "undo": e.undo, "t": e.t})

    def _on_paused(self, e: rec.Paused) -> None:
        self.approvals[e.call_id] = e.approval_id
        self.status = RunStatus.WAITING_APPROVAL

    def _on_resolved(self, e: rec.Resolved) -> None:
        self.resolved[e.call_id] = {"approval_id": e.approval_id, "approved": e.approved, "reason": e.reason,
                                    "by": e.by}
        self.status = RunStatus.RUNNING

    def _on_status(self, e: rec.Status) -> None:
        self.status = e.status
        self.output = e.output if e.has("output") else self.output
        self.error = e.error

    # -- queries ------------------------------------------------------------

    def elapsed_s(self, now: float) -> float:
        current = now - self.session_t if self.session_t is not None else 0.0
        return self.active_s + max(0.0, current)

    def answer(self) -> str | None:
        """The final answer the conversation ends with (an assistant message without tool calls), if it does."""
        last = self.messages[-1] if self.messages else {}
        if last.get("role") == "assistant" and not last.get("tool_calls") and not self.rejected:
            content = last.get("content")
            return content if isinstance(content, str) else ""
        return None

    def open_calls(self) -> list[ToolCall]:
        """Tool calls of the last assistant message that have no result yet, in order."""
        for msg in reversed(self.messages):
            if msg.get("role") == "assistant":
                return [c for c in tool_calls(msg) if c.id not in self.finished]
            if msg.get("role") in ("user", "system"):
                break
        return []

    # -- persistence --------------------------------------------------------

    @classmethod
    def load(cls, run_dir: Path) -> "RunState":
        state = cls._from_snapshot(run_dir / SNAPSHOT) or cls()
        events, state.offset = journal.read(run_dir / JOURNAL, state.offset)
        for event in events:
            if event.seq > state.seq:
                state.apply(event)
        return state

    @classmethod
    def _from_snapshot(cls, path: Path) -> "RunState | None":
        try:
            data = loads(path.read_bytes())
            return cls(**data)
        except (FileNotFoundError, ValueError, TypeError):
            return None

    def save(self, run_dir: Path, offset: int) -> None:
        """Atomic snapshot: write temp, fsync, rename, fsync the directory."""
        self.offset = offset
        tmp = run_dir / f".{SNAPSHOT}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            shallow = {f.name: getattr(self, f.name) for f in fields(self)}  # asdict deep-copies every message
            # a lone surrogate (a file name that is not UTF-8) is written as its JSON escape, which reads back as it
            os.write(fd, json.dumps(shallow, ensure_ascii=False, separators=(",", ":")).encode("utf-8",
                                                                                                "backslashreplace"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, run_dir / SNAPSHOT)
        dfd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def history(events: Iterable[rec.Record]) -> tuple[list[JSONObject], list[JSONObject]]:
    """The whole conversation as it happened (compactions not applied) and the compactions, from journal records."""
    state = _History()
    for event in events:
        try:
            state.apply(event)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError):
            continue  # a malformed line (the agent owns its journal) costs that line only
    return state.messages, state.folded


@dataclass
class _History(RunState):
    folded: list[JSONObject] = field(default_factory=list)

    def _on_compaction(self, e: rec.Compaction) -> None:
        self.folded.append({"seq": e.seq, "t": e.t, "summarized": e.summarized, "turns": e.turns,
                            "chars_before": e.chars_before, "chars_after": e.chars_after, "start": e.start,
                            "end": e.end})
