"""The live view of a model call in flight: a spinner, the seconds so far and the tokens streamed so far.

    call = LiveCall(console)                 # on a terminal only (`allowed()` says whether)
    call.start(started_event, above=None)    # a ModelCallStarted; `above`: what to show over the spinner line
    call.begin("sending")                    # at once, before the first event: the turn was taken (a worker may
                                             # take a second or more to start in system mode)
    call.feed(event)                         # TextDelta / ModelProgress: the count moves on
    call.stop()                              # the region is erased; print the call's summary line after it

It renders the engine's transient events only (`ModelCallStarted`, `TextDelta`, `ModelProgress`), so it
works alike in local mode and in system mode, where they come over the supervisor's socket. The elapsed
time is redrawn by rich's refresh thread, so it moves while the model says nothing.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Callable

from sentinel.engine import events as ev

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.live import Live
    from rich.spinner import Spinner

REFRESH_PER_S = 10


def allowed(console: "Console") -> bool:
    """A spinner only for a person: stdout and the console are both terminals (never when piped)."""
    return bool(console.is_terminal) and sys.stdout.isatty()


def usage_text(usage: dict[str, int] | None) -> str:
    """`12 in / 34 out tokens`, or "" when the model reported no usage."""
    if not usage or ("prompt_tokens" not in usage and "completion_tokens" not in usage):
        return ""
    return f"{usage.get('prompt_tokens', 0)} in / {usage.get('completion_tokens', 0)} out tokens"


class Working:
    """The spinner line: `⠙ model fake/m · step 2 · 3.4 s · 57 tokens`, recomputed at every refresh."""

    def __init__(self, event: ev.ModelCallStarted):
        from rich.spinner import Spinner

        lag = time.time() - event.t if event.t else 0.0  # the event's age when it got here (a socket away)
        self.began = time.monotonic() - min(max(lag, 0.0), 60.0)
        self.model, self.step = event.model, event.step
        self.tokens = self.deltas = 0
        self.spinner = Spinner("dots", style="cyan")

    def feed(self, event: ev.Event) -> None:
        if isinstance(event, ev.ModelProgress):
            self.tokens = max(self.tokens, event.tokens)
        elif isinstance(event, ev.TextDelta):
            self.deltas += 1
            self.tokens = max(self.tokens, self.deltas)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.began

    def __rich__(self) -> "Spinner":
        from rich.text import Text

        tokens = f" · {self.tokens} token{'s' if self.tokens > 1 else ''}" if self.tokens else ""
        self.spinner.update(text=Text(f"model {self.model} · step {self.step} · {self.elapsed:.1f} s{tokens}",
                                      style="dim"))
        return self.spinner


class Pending:
    """The spinner line before a turn's first event: `⠙ sending · 0.4 s`."""

    def __init__(self, label: str):
        from rich.spinner import Spinner

        self.label, self.began = label, time.monotonic()
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> "Spinner":
        from rich.text import Text

        self.spinner.update(text=Text(f"{self.label} · {time.monotonic() - self.began:.1f} s", style="dim"))
        return self.spinner


class Tail:
    """The last lines of a renderable that fit on the screen above `keep` lines (a long answer as it streams)."""

    def __init__(self, renderable: "RenderableType", keep: int = 1):
        self.renderable, self.keep = renderable, keep

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> "RenderResult":
        from rich.segment import Segment

        lines = console.render_lines(self.renderable, options.update(height=None), pad=False)
        room = max(1, options.size.height - self.keep - 1)
        for line in lines[-room:]:
            yield from line
            yield Segment.line()


class LiveCall:
    """One model call's live region on `console`; at most one at a time (rich allows one per console)."""

    def __init__(self, console: "Console"):
        self.console = console
        self.live: Live | None = None
        self.working: Working | None = None

    @property
    def active(self) -> bool:
        return self.live is not None

    def start(self, event: ev.ModelCallStarted, above: "Callable[[], RenderableType | None] | None" = None) -> None:
        self.stop()
        working = self.working = Working(event)

        def render() -> "RenderableType":
            from rich.console import Group

            top = above() if above is not None else None
            return Group(Tail(top, keep=1), working) if top is not None else working

        self._show(render)

    def begin(self, label: str) -> None:
        """A spinner at once, until the first event replaces it (start) or ends it (stop)."""
        self.stop()
        pending = Pending(label)
        self._show(lambda: pending)

    def _show(self, render: Callable[[], "RenderableType"]) -> None:
        from rich.live import Live

        self.live = Live(console=self.console, get_renderable=render, transient=True,
                         refresh_per_second=REFRESH_PER_S, redirect_stdout=False, redirect_stderr=False,
                         vertical_overflow="crop")
        self.live.start(refresh=True)

    def feed(self, event: ev.Event) -> None:
        if self.working is not None:
            self.working.feed(event)

    def stop(self) -> None:
        """Erase the region (nothing when none is shown)."""
        live, self.live, self.working = self.live, None, None
        if live is not None:
            live.stop()
