"""How a chat shows a turn's events: model and tool calls live, text as it streams, the answer typed out.

    view = TerminalView(console)          # a listener: engine.send(session, text, on_event=view)
    view.seq, view.run_id                 # the last durable event shown, and the run it belongs to
                                          # (a child run's events, heard live, are lines of their own)
    PlainView()                           # not a terminal: each answer on stdout, warnings and errors on stderr

A view is one turn's listener. It drops durable events it has already shown, so a chat that catches up
with `engine.events(run_id, after=view.seq)` after someone else acted never shows an event twice.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from sentinel.cli.render import describe
from sentinel.engine import events as ev

TYPE_S = 0.6        # the longest a typed-out answer takes
TYPE_CHUNK_S = 0.004


class View:
    def __init__(self) -> None:
        self.seq = 0
        self.run_id: str | None = None
        self.streamed: list[str] = []  # text deltas of the current model call
        self.children: dict[str, int] = {}  # child run id -> the last of its durable events shown

    def __call__(self, event: ev.Event) -> None:
        self.run_id = self.run_id or event.run_id
        if event.run_id != self.run_id:  # a child run's, heard live: numbered on its own
            if event.durable and event.seq <= self.children.get(event.run_id, 0):
                return
            if event.durable:
                self.children[event.run_id] = event.seq
            return self.child(event)
        if event.durable:
            if event.seq <= self.seq:
                return
            self.seq = event.seq
        self.show(event)

    def child(self, event: ev.Event) -> None:
        """A child run's event (delegate, spawn, a workflow step): shown as a line, never as the answer."""

    def show(self, event: ev.Event) -> None:
        if isinstance(event, ev.TextDelta):
            self.streamed.append(event.text)
            return self.delta(event.text)
        if isinstance(event, ev.ModelCallStarted):
            self.streamed = []
        elif isinstance(event, ev.ModelCallEnded):
            streamed, self.streamed = "".join(self.streamed), []
            return self.ended(event, streamed)
        self.line(event)

    def delta(self, text: str) -> None: ...

    def ended(self, event: ev.ModelCallEnded, streamed: str) -> None: ...

    def line(self, event: ev.Event) -> None: ...


class TerminalView(View):
    def __init__(self, console: Any):
        super().__init__()
        self.console = console
        self.open = False  # streamed text without its newline yet

    def _close(self) -> None:
        if self.open:
            self.console.file.write("\n")
            self.open = False

    def delta(self, text: str) -> None:
        self.console.file.write(text)
        self.console.file.flush()
        self.open = True

    def ended(self, event: ev.ModelCallEnded, streamed: str) -> None:
        self._close()
        content = event.content.strip()
        if streamed.strip() == content or not content:
            return
        if streamed:  # what was cleared (Muzzle's inspection) is not what streamed: the cleared text counts
            self.console.print("[dim](the answer as cleared)[/]")
        if event.tool_calls or event.rejected:  # a reply sent back is no answer: its safeguard's line follows
            self.console.print(content, style="dim", markup=False, highlight=False)
        else:
            self.type_out(content)

    def type_out(self, text: str) -> None:
        step = max(1, int(len(text) * TYPE_CHUNK_S / TYPE_S) + 1)
        for i in range(0, len(text), step):
            self.console.file.write(text[i:i + step])
            self.console.file.flush()
            time.sleep(TYPE_CHUNK_S)
        self.console.file.write("\n")
        self.console.file.flush()

    def child(self, event: ev.Event) -> None:
        if isinstance(event, (ev.ModelCallEnded, ev.Decision, ev.ToolCallEnd, ev.Paused, ev.Safeguard, ev.SelfEdited,
                              ev.Done, ev.Failed)):
            text = describe(event)
            if text:
                self._close()
                self.console.print(f"  [dim]│ {event.run_id}[/] {text}", highlight=False)

    def line(self, event: ev.Event) -> None:
        if isinstance(event, ev.ModelCallStarted):
            self._close()
            self.console.print(f"[dim]● {event.model} · step {event.step}[/]", highlight=False)
            return
        if isinstance(event, (ev.RunStarted, ev.Resumed, ev.Paused)):
            return  # the shell says which session this is and shows the approval it asks about
        if isinstance(event, ev.Idle) and not event.error:
            return
        text = describe(event)
        if text:
            self._close()
            self.console.print(text, highlight=False)


class PlainView(View):
    """Scriptable output: the final answer of each model call on stdout, what went wrong on stderr."""

    def ended(self, event: ev.ModelCallEnded, streamed: str) -> None:
        if not event.tool_calls and not event.rejected:
            print(event.content.strip(), flush=True)

    def line(self, event: ev.Event) -> None:
        if isinstance(event, ev.Warned):
            print(f"warning: {event.message}", file=sys.stderr, flush=True)
        elif isinstance(event, ev.Idle) and event.error:
            print(f"error: {event.error}", file=sys.stderr, flush=True)
        elif isinstance(event, ev.Failed):
            print(f"error: run {event.status}: {event.error or ''}", file=sys.stderr, flush=True)
        elif isinstance(event, ev.Paused):
            print(f"paused: {event.tool} {_short(event.arguments)} needs approval ({event.reason})",
                  file=sys.stderr, flush=True)


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
