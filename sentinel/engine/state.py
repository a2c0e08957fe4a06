"""Run state rebuilt from the journal: a reducer over events, plus the atomic snapshot cache.

    state = RunState.load(run_dir)      # snapshot (if any) + journal tail
    state.apply(event)                  # one event at a time, in order

The snapshot stores the state and the journal offset it covers; deleting it
only costs a full replay.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from sentinel.engine import journal
from sentinel.frames import loads

SNAPSHOT = "snapshot.json"
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
    status: str = "running"
    output: str | None = None
    error: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    steps: int = 0
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    started: dict[str, int] = field(default_factory=dict)     # call_id -> times started
    finished: dict[str, bool] = field(default_factory=dict)  # call ids with a result
    approvals: dict[str, str] = field(default_factory=dict)   # call_id -> approval id
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)
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
    rejected: bool = False                                   # the last assistant reply was not taken as an answer
    safeguards: list[dict[str, Any]] = field(default_factory=list)   # kind, action, detail: each time one fired
    self_edits: list[dict[str, Any]] = field(default_factory=list)   # edit_soul / update_user calls that wrote
    seq: int = 0
    offset: int = 0

    # -- reducer ------------------------------------------------------------

    def apply(self, e: dict[str, Any]) -> None:
        kind = e["type"]
        t = e.get("t")
        if kind == "session":
            self._close_session()
            self.session_t = t
            self.sessions += 1
        handler = getattr(self, f"_on_{kind}", None)
        if handler:
            handler(e)
        self.last_t = t
        self.seq = e.get("seq", self.seq)

    def _close_session(self) -> None:
        if self.session_t is not None and self.last_t is not None:
            self.active_s += max(0.0, self.last_t - self.session_t)
        self.session_t = None

    def _on_created(self, e: dict[str, Any]) -> None:
        for key in ("id", "task", "agent", "model", "workspace", "mission", "parent_id", "kind"):
            setattr(self, key, e.get(key, getattr(self, key)))

    def _on_message(self, e: dict[str, Any]) -> None:
        self.messages.append(e["message"])
        if e.get("skill"):
            self.skills.append(e["skill"])
        elif e["message"].get("role") == "user" and not e.get("note"):  # a harness note is not a new request
            self._close_session()  # the time a session waited for this message is not work
            self.turn_steps, self.turn_s = self.steps, self.active_s
            self.request, self.corrections, self.changes = str(e["message"].get("content") or ""), 0, 0

    def _on_model(self, e: dict[str, Any]) -> None:
        self.model = e["model"]

    def _on_system(self, e: dict[str, Any]) -> None:
        """The system prompt changed (self-state edited during the run): later model calls see the new one."""
        prompt = {"role": "system", "content": e["content"]}
        if self.messages and self.messages[0].get("role") == "system":
            self.messages[0] = prompt
        else:
            self.messages.insert(0, prompt)

    def _on_compaction(self, e: dict[str, Any]) -> None:
        """The middle of the conversation was summarized: one message stands for messages[start:end] from now on."""
        self.messages[e["start"]:e["end"]] = [e["message"]]
        self.compactions += 1

    def _on_assistant(self, e: dict[str, Any]) -> None:
        self.messages.append(e["message"])
        self.steps += 1
        self.rejected = bool(e.get("rejected"))

    def _on_safeguard(self, e: dict[str, Any]) -> None:
        self.safeguards.append({k: e.get(k) for k in ("kind", "action", "detail")})
        if e.get("action") == "retry":
            self.corrections += 1

    def _on_self_edit(self, e: dict[str, Any]) -> None:
        self.self_edits.append({k: e.get(k) for k in ("agent", "call_id", "tool", "file", "chars", "version",
                                                           "excerpt")})

    def _on_decision(self, e: dict[str, Any]) -> None:
        self.decisions[e["call_id"]] = {k: e[k] for k in ("call_id", "tool", "arguments", "outcome", "reason", "layers",
                                                          "code_sha256") if k in e}

    def _on_started(self, e: dict[str, Any]) -> None:
        self.started[e["call_id"]] = self.started.get(e["call_id"], 0) + 1

    def _on_finished(self, e: dict[str, Any]) -> None:
        self.finished[e["call_id"]] = True
        self.changes += bool(e.get("changed"))
        self.messages.append({"role": "tool", "tool_call_id": e["call_id"], "content": e["result"]})

    def _on_paused(self, e: dict[str, Any]) -> None:
        self.approvals[e["call_id"]] = e["approval_id"]
        self.status = "waiting_approval"

    def _on_resolved(self, e: dict[str, Any]) -> None:
        self.resolved[e["call_id"]] = {k: e.get(k) for k in ("approval_id", "approved", "reason", "by")}
        self.status = "running"

    def _on_status(self, e: dict[str, Any]) -> None:
        self.status = e["status"]
        self.output = e.get("output", self.output)
        self.error = e.get("error")

    # -- queries ------------------------------------------------------------

    def elapsed_s(self, now: float) -> float:
        current = now - self.session_t if self.session_t is not None else 0.0
        return self.active_s + max(0.0, current)

    def answer(self) -> str | None:
        """The final answer the conversation ends with (an assistant message without tool calls), if it does."""
        last = self.messages[-1] if self.messages else {}
        if last.get("role") == "assistant" and not last.get("tool_calls") and not self.rejected:
            return last.get("content") or ""
        return None

    def open_calls(self) -> list[dict[str, Any]]:
        """Tool calls of the last assistant message that have no result yet, in order."""
        for msg in reversed(self.messages):
            if msg.get("role") == "assistant":
                return [c for c in msg.get("tool_calls") or [] if c["id"] not in self.finished]
            if msg.get("role") in ("user", "system"):
                break
        return []

    # -- persistence --------------------------------------------------------

    @classmethod
    def load(cls, run_dir: Path) -> "RunState":
        state = cls._from_snapshot(run_dir / SNAPSHOT) or cls()
        events, state.offset = journal.read(run_dir / JOURNAL, state.offset)
        for event in events:
            if event.get("seq", 0) > state.seq:
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
            os.write(fd, json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":")).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, run_dir / SNAPSHOT)
        dfd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def history(events: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The whole conversation as it happened (compactions not applied) and the compactions, from journal records."""
    state = _History()
    for event in events:
        try:
            state.apply(event)
        except (KeyError, TypeError, AttributeError, ValueError):
            continue  # a malformed line (the agent owns its journal) costs that line only
    return state.messages, state.folded


@dataclass
class _History(RunState):
    folded: list[dict[str, Any]] = field(default_factory=list)

    def _on_compaction(self, e: dict[str, Any]) -> None:
        self.folded.append({k: e.get(k) for k in ("seq", "t", "summarized", "turns", "chars_before", "chars_after",
                                                  "start", "end")})
