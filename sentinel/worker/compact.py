"""What keeps a long run's mind: compaction, the scribe, the curator and the resumption protocol, hooked
into the loop (`Deps.keeper`).

    keeper.before_call(run)   before each model call: resume note, scribe, compaction when over the threshold
    keeper.at_end(run)        the run (or a chat turn) stopped: last checkpoint, curator, tidy session file

Compaction (the pure parts are sentinel/memory/compact.py): when the conversation passes
`context.compact_at_chars`, the scribe checkpoints, the middle turns go to the summary model, and a
`compaction` record (span, summary, characters before and after) is journaled and the snapshot taken:
the journal keeps every earlier message, the state continues from the compacted conversation. A failed
summary call drops nothing; it is tried again `context.retry_after_turns` model turns later. The system
prompt is never summarized: the loop rebuilds it from the agent's files before every call.

The scribe is deterministic: `runs/<id>/session-live.md` is rendered from the journal
(sentinel/memory/session.py) and written when its text changes; a `checkpoint` record is journaled
when plan tasks were completed, before a compaction and when the run stops with changes unrecorded.
The curator (every `context.curate_every_checkpoints` checkpoints and at the end) adds the session's
decisions and error -> fix pairs to the scope's MEMORY.md (sentinel/memory/curator.py). When a run (or a
chat turn) ends after at least CURATE_MIN_CALLS tool calls, it also asks the curator model
(`context.curator_model`, default the run's model) for the session's conventions and patterns; each passes
the injection scanner like any learning. The run's outcome is journaled before any of this, and a curator
call that fails only costs a warning: the deterministic learnings are kept all the same. In local mode
(`defer`) that call is made by a detached process after the command has printed its answer and exited
(sentinel/worker/curate.py); its failure is then audited (`curator_failed`) and logged in state/curator.log.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

from sentinel import paths
from sentinel.engine import journal
from sentinel.engine import records as rec
from sentinel.engine.run import Run
from sentinel.engine.state import RunState
from sentinel.engine.status import SETTLED
from sentinel.errors import SentinelError
from sentinel.jsontypes import JSONObject
from sentinel.memory import compact, curator
from sentinel.memory.session import LIVE, SessionLog
from sentinel.memory.settings import ContextSettings
from sentinel.models import ModelClient, ModelError

TIDY_KEEP = 2  # checkpoints the curator's tidy-up keeps
CURATE_MIN_CALLS = 2  # tool calls in the ended turn before the curator model is asked for conventions

Audit = Callable[[str, Mapping[str, object]], None]


class ContextKeeper:
    """A run's context as it grows: compaction, the session file (scribe) and the curator."""

    def __init__(self, settings: ContextSettings, model: ModelClient, threshold: int, scope_dir: Path,
                 audit: Audit | None = None, curator_model: ModelClient | None = None, defer: bool = False):
        self.settings = settings
        self.model = model
        self.curator_model = curator_model  # None: the deterministic curator only
        # defer: the curator model's call is left to a detached process (sentinel/worker/curate.py) that the
        # caller starts when `deferred` is set, so a command in the operator's terminal exits on the answer
        self.defer = defer
        self.deferred = False
        self.threshold = threshold
        self.scope_dir = scope_dir
        self.audit = audit or (lambda kind, record: None)
        self.log = SessionLog()
        self._offset = 0
        self._first = True
        self._retry_at = 0          # steps: no summary call before this (after a failed one)
        self._written: str | None = None
        self._size = compact.Sizes()

    # -- hooks --------------------------------------------------------------------------------------

    def before_call(self, run: Run) -> None:
        self._catch_up(run)
        if self._first:
            self._first = False
            self._resume(run)
        if self.log.changes and self._completed_since_checkpoint():
            self.checkpoint(run, "tasks completed")
        self.scribe(run)
        self.compact(run)

    def at_end(self, run: Run) -> None:
        try:
            self._catch_up(run)
            if self.log.changes:
                self.checkpoint(run, f"run {run.state.status}")
            if run.state.status in SETTLED:
                if self.defer:
                    self.deferred = self.curator_model is not None and wants_conventions(run.state)
                    self.curate(run)
                else:
                    self.curate(run, self.conventions(run))
                self.scribe(run, keep_checkpoints=TIDY_KEEP)
            else:
                self.scribe(run)
        except (OSError, SentinelError) as exc:  # the run's outcome stands; its session file is behind
            run.record(rec.Warned(message=f"session file not updated: {exc}"))

    # -- the scribe ---------------------------------------------------------------------------------

    def _catch_up(self, run: Run) -> None:
        records, self._offset = journal.read(run.journal.path, self._offset)
        for record in records:
            self.log.feed(record)

    def _completed_since_checkpoint(self) -> bool:
        return any(item["status"] == "done" and i not in self.log.done_at_checkpoint
                   for i, item in enumerate(self.log.plan, 1))

    def before_children(self, run: Run) -> None:
        """The scribe writes before a child run starts, so a crash in the child loses no state."""
        self._catch_up(run)
        if self.log.changes:
            self.checkpoint(run, "before children")
        self.scribe(run)

    def checkpoint(self, run: Run, title: str) -> None:
        run.record(rec.Checkpoint(title=title))
        self._catch_up(run)
        every = self.settings.curate_every_checkpoints
        if every and len(self.log.checkpoints) % every == 0:
            self.curate(run)

    def scribe(self, run: Run, keep_checkpoints: int | None = None) -> None:
        text = self.log.render(self.pressure(run), keep_checkpoints)
        if text != self._written:
            paths.write_atomic(run.dir / LIVE, text, 0o600, sync=False)
            self._written = text

    def pressure(self, run: Run) -> str:
        used = self._size(run.state.messages) / self.threshold
        return "Low" if used < 0.5 else "Medium" if used < 0.8 else "High"

    # -- the curator --------------------------------------------------------------------------------

    def curate(self, run: Run, extra: Sequence[str] = ()) -> None:
        curated = curator.curate(self.scope_dir, [*self.log.learnings(), *extra])
        for learning, finding in curated.flagged:
            self.audit("memory_quarantined", {"scope": self.scope_dir.name, "note": curator.MEMORY_MD,
                                              "title": learning[:80], "finding": finding})

    def conventions(self, run: Run) -> list[str]:
        """The curator model's conventions and patterns of the turn that ended; none when the turn made fewer
        than CURATE_MIN_CALLS tool calls or the call fails (a warning says so)."""
        if self.curator_model is None or not wants_conventions(run.state):
            return []
        try:
            return conventions(run.state, self.curator_model)
        except ModelError as exc:
            run.record(rec.Warned(message=f"curator: the model call failed ({exc}); kept the "
                                  "deterministic learnings only"))
            return []

    # -- the resumption protocol --------------------------------------------------------------------

    def _resume(self, run: Run) -> None:
        """A process taking up a run (or a chat session's next turn) reads session-live.md first."""
        live = run.dir / LIVE
        if run.state.sessions < 2 or not live.exists():
            return
        done, total = self.log.progress()
        if total and not self.log.active():  # the plan was complete: archive the file, start fresh
            target = _free(run.dir, f"session-{time.strftime('%Y-%m-%d')}")
            os.rename(live, target)
            run.record(rec.Archived(path=target.name))
            self._catch_up(run)
            self._written = None
            return
        if total:
            text = live.read_text(encoding="utf-8", errors="replace")
            note = (f"{compact.RESUMING.format(done=done, total=total)} Your session file (runs/{run.state.id}/{LIVE}) "
                    f"follows; skip to the first incomplete task and do not redo finished ones.\n\n{text}")
            run.record(rec.Message(message={"role": "user", "content": note}, note="resume"))
            self._catch_up(run)

    # -- compaction ---------------------------------------------------------------------------------

    def compact(self, run: Run) -> None:
        state = run.state
        before = self._size(state.messages)
        if before < self.threshold or state.steps < self._retry_at:
            return
        where = compact.span(state.messages, self.settings.keep_recent_turns)
        if where is None:
            return
        self.checkpoint(run, "before compaction")
        self.scribe(run)
        start, end = where
        middle = state.messages[start:end]
        try:
            text = self.model.complete(compact.summary_request(middle), []).content.strip()
            if not text:
                raise ModelError("the summary was empty")
        except ModelError as exc:
            self._retry_at = state.steps + self.settings.retry_after_turns
            run.record(rec.Warned(message=f"compaction: the summary call failed ({exc}); nothing was dropped, "
                                  f"trying again after {self.settings.retry_after_turns} more model turns"))
            return
        turns = compact.turns_in(middle)
        summary = compact.summary_message(text, turns, compact.latest_request(middle))
        after = before - compact.size(middle) + compact.message_size(summary)
        run.record(compact.record(start, end, summary, before, after, turns))
        run.snapshot()  # a resume continues from the compacted state without replaying the span


def _free(folder: Path, stem: str) -> Path:
    for n in range(1, 1000):
        path = folder / (f"{stem}.md" if n == 1 else f"{stem}-{n}.md")
        if not path.exists():
            return path
    raise SentinelError(f"{folder}: too many archived session files named {stem}")


def wants_conventions(state: RunState) -> bool:
    """Whether the turn that ended made enough tool calls to ask the curator model for conventions."""
    calls: int = sum(m.get("role") == "tool" for m in _turn(state.messages, state.request))
    return calls >= CURATE_MIN_CALLS


def conventions(state: RunState, model: ModelClient) -> list[str]:
    """The curator model's conventions and patterns of the turn that ended (ModelError when the call fails)."""
    reply = model.complete(curator.conventions_request(_turn(state.messages, state.request)), []).content
    return curator.conventions(reply)


def _turn(messages: list[JSONObject], request: str) -> list[JSONObject]:
    """The messages from the last request on (the whole conversation when it is no longer there)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and messages[i].get("content") == request:
            return messages[i:]
    return messages
