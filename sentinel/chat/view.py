"""How a chat shows a turn's events: a spinner and the text as it streams, the answer as Markdown, tool calls.

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
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.text import Text

from sentinel.ui.render import describe, workspace_line
from sentinel.ui.spinner import usage_text
from sentinel.engine import events as ev
from sentinel.ui.escape import for_stream, visible

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.markdown import Markdown


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
            return self.delta(event)
        if isinstance(event, ev.ModelCallStarted):
            self.streamed = []
        elif isinstance(event, ev.ModelCallEnded):
            streamed, self.streamed = "".join(self.streamed), []
            return self.ended(event, streamed)
        self.line(event)

    def delta(self, event: ev.TextDelta) -> None: ...

    def close(self) -> None:
        """The turn is over (or stopped): nothing live may stay on screen."""

    def begin(self, label: str) -> None:
        """The turn was handed to the engine: say so at once (its first event may be a second away)."""

    def ended(self, event: ev.ModelCallEnded, streamed: str) -> None: ...

    def line(self, event: ev.Event) -> None: ...


class TerminalView(View):
    """While a model call is in flight: its text so far as Markdown over a spinner line (seconds, tokens). When it
    ends: the answer rendered as Markdown and wrapped to the terminal, then one dim line with its tokens in/out."""

    def __init__(self, console: "Console"):
        super().__init__()
        from sentinel.ui.spinner import LiveCall

        self.console = console
        self.call = LiveCall(console)

    def close(self) -> None:
        self.call.stop()

    def begin(self, label: str) -> None:
        self.call.begin(label)

    def _streamed(self) -> "Markdown | None":
        text = visible("".join(self.streamed), newlines=True)
        return answer_markdown(text) if text.strip() else None

    def delta(self, event: ev.TextDelta) -> None:
        self.call.feed(event)  # `streamed` holds the text: the live region shows it at its next refresh

    def ended(self, event: ev.ModelCallEnded, streamed: str) -> None:
        self.call.stop()
        content = visible(event.content.strip(), newlines=True)  # a model's text moves no cursor
        if content:
            if streamed.strip() and visible(streamed.strip(), newlines=True) != content:  # Muzzle cleared other text than what streamed
                self.console.print("[dim](the answer as cleared)[/]")
            if event.tool_calls or event.rejected:  # a reply sent back is no answer: its safeguard's line follows
                self.console.print(content, style="dim", markup=False, highlight=False)
            else:
                self.console.print(answer_markdown(content))
        self.console.print(f"[dim]● {escape(visible(event.model))} · {event.latency_ms / 1000:.1f} s"
                           f"{' · ' + usage_text(event.usage) if event.usage else ''}[/]", highlight=False)

    def child(self, event: ev.Event) -> None:
        if isinstance(event, ev.ModelCallStarted):  # the spinner says a child's model works too
            return self.call.start(event)
        if isinstance(event, (ev.TextDelta, ev.ModelProgress)):
            return self.call.feed(event)
        if isinstance(event, (ev.ModelCallEnded, ev.Decision, ev.ToolCallEnd, ev.Paused, ev.Safeguard,
                              ev.SelfEdited, ev.Done, ev.Failed)):
            text = describe(event)
            if text:
                self.call.stop()
                self.console.print(f"  [dim]│ {event.run_id}[/] {text}", highlight=False)

    def line(self, event: ev.Event) -> None:
        if isinstance(event, ev.ModelCallStarted):
            return self.call.start(event, above=self._streamed)
        if isinstance(event, ev.ModelProgress):
            return self.call.feed(event)
        if isinstance(event, (ev.RunStarted, ev.Resumed)):
            return  # the shell says which session this is; the spinner of `begin` stays until the worker speaks
        self.call.stop()
        if isinstance(event, ev.Paused):
            return  # the shell shows the approval it asks about
        if isinstance(event, ev.Idle) and not event.error:
            return
        text = describe(event)
        if text:
            self.console.print(text, highlight=False)


def answer_markdown(text: str) -> "Markdown":
    """A model's text as Markdown with no hidden link target: a link reads `its text (its target)` and is no
    terminal hyperlink (an OSC 8 link shows one address and opens another), an image `🌆 alt (its source)`."""
    from rich.markdown import ImageItem, Markdown, MarkdownContext

    class Image(ImageItem):
        def on_enter(self, context: MarkdownContext) -> None:
            self.inline = len(context.stack) > 1  # in a paragraph (always, from markdown-it): one with its text
            super().on_enter(context)

        def shown(self) -> str:
            return f"🌆 {self.text.plain} ({self.destination})"

        def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> "RenderResult":
            if not self.inline:
                yield Text(self.shown(), end="")

        def on_leave(self, context: MarkdownContext) -> None:
            super().on_leave(context)
            if self.inline:
                context.on_text(self.shown(), "image")

    class Shown(Markdown):
        elements = {**Markdown.elements, "image": Image}

    return Shown(text, hyperlinks=False)


class PlainView(View):
    """Scriptable output: the final answer of each model call on stdout, what went wrong on stderr."""

    def ended(self, event: ev.ModelCallEnded, streamed: str) -> None:
        if not event.tool_calls and not event.rejected:
            print(for_stream(event.content.strip(), sys.stdout), flush=True)

    def line(self, event: ev.Event) -> None:
        if isinstance(event, ev.Warned):
            print(f"warning: {visible(event.message)}", file=sys.stderr, flush=True)
        elif isinstance(event, ev.Idle) and event.error:
            print(f"error: {visible(event.error)}", file=sys.stderr, flush=True)
        elif isinstance(event, ev.Failed):
            print(f"error: run {event.status}: {visible(event.error or '')}", file=sys.stderr, flush=True)
        elif isinstance(event, ev.Paused):
            print(visible(f"paused: {event.tool} {_short(event.arguments)} needs approval ({event.reason})"),
                  file=sys.stderr, flush=True)
        elif isinstance(event, ev.WorkspaceChanged):  # what changed, as the harness saw it, beside any answer
            print(f"changed: {workspace_line(event)} (/undo puts it back)", file=sys.stderr, flush=True)


def _short(value: object, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
