"""The chat's two front ends: a terminal (prompt_toolkit in, rich out) and plain lines (stdin not a TTY).

    io = TerminalIO(history_file, completer)   # ↑/↓ history kept in a file, completion menus, colors
    io = LineIO()                              # `printf 'task\\ny\\n' | sentinel chat`: one line per input
    io.read("› ") -> str | None                # None: Ctrl-D or end of input
    io.confirm("approve? [y/N] ", closed) -> "yes" | "no" | "closed" | "eof"

`closed()` is asked while a y/N prompt waits: when it turns true (someone resolved the approval
elsewhere), the prompt closes by itself.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Protocol

from sentinel.chat.view import PlainView, TerminalView, View
from sentinel.engine.rows import ApprovalRow
from sentinel.ui.escape import for_stream, visible

if TYPE_CHECKING:
    from prompt_toolkit.completion import Completer
    from rich.console import RenderableType
    from prompt_toolkit.output import Output

CLOSE_POLL_S = 0.5
Answer = Literal["yes", "no", "closed", "eof"]


class ChatIO(Protocol):
    """What the shell asks of a front end (TerminalIO or LineIO)."""

    interactive: bool

    def view(self) -> View: ...
    def read(self, prompt: str) -> str | None: ...
    def confirm(self, question: str, closed: Callable[[], bool]) -> Answer: ...
    def say(self, markup: str) -> None: ...
    def plain(self, text: str) -> None: ...
    def error(self, text: str) -> None: ...
    def approval(self, approval: ApprovalRow) -> None: ...
YES = ("y", "yes")


def no_cpr_output() -> "Output":
    """The terminal's output without cursor position requests: a one-line y/N question needs no room for a menu,
    and a terminal that answers no CPR in time (a busy machine, some pty relays) made prompt_toolkit print a
    warning and then the question again: `approve? [y/N]` twice."""
    from prompt_toolkit.output.defaults import create_output

    output = create_output()
    if hasattr(output, "enable_cpr"):
        output.enable_cpr = False
    return output


def answer(text: str) -> Answer:
    return "yes" if text.strip().lower() in YES else "no"


class TerminalIO:
    interactive = True

    def __init__(self, history: Path, completer: "Completer"):
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
        from rich.console import Console

        from sentinel.chat.complete import STYLE, Lexer

        history.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.console = Console(highlight=False)
        self.session: PromptSession[str] = PromptSession(history=FileHistory(str(history)), completer=completer,
                                                         complete_while_typing=True, lexer=Lexer(), style=STYLE)

    def view(self) -> View:
        return TerminalView(self.console)

    def read(self, prompt: str) -> str | None:
        while True:
            try:
                return self.session.prompt([("class:prompt", prompt)])
            except KeyboardInterrupt as exc:
                if type(exc) is not KeyboardInterrupt:  # the terminal closed (chat.shell.HungUp): leave
                    raise
                continue  # Ctrl-C at the prompt clears the line; only Ctrl-D leaves
            except EOFError:
                return None

    def confirm(self, question: str, closed: Callable[[], bool]) -> Answer:
        from prompt_toolkit import PromptSession

        gone = object()  # the prompt's result when it closed by itself
        session: PromptSession[object] = PromptSession(output=no_cpr_output())

        async def watch() -> None:
            while True:
                await asyncio.sleep(CLOSE_POLL_S)
                if closed():
                    session.app.exit(result=gone)
                    return

        def start_watching() -> None:
            session.app.create_background_task(watch())

        try:
            text = session.prompt(question, pre_run=start_watching)
        except EOFError:
            return "eof"
        return "closed" if text is gone else answer(str(text))

    def say(self, markup: str) -> None:
        self.console.print(markup)

    def plain(self, text: str) -> None:
        self.console.print(visible(text, newlines=True), markup=False)

    def error(self, text: str) -> None:
        from rich.markup import escape

        self.console.print(f"[red]error[/]: {escape(visible(text))}")

    def approval(self, approval: ApprovalRow) -> None:
        from rich.console import Group
        from rich.panel import Panel
        from rich.syntax import Syntax
        from rich.text import Text

        # What the agent wrote is shown with every cursor-moving or hiding character escaped: the panel shows
        # what would run (real newlines kept: a multi-line command is seen as such).
        args = approval.arguments
        shown = str(args["command"]) if approval.tool == "bash" and isinstance(args, dict) and "command" in args \
            else json.dumps(args, ensure_ascii=False, indent=2)
        parts: list[RenderableType] = [Text(visible(shown, newlines=True)),
                            Text(f"why: {visible(approval.reason or '', newlines=True)}", style="dim")]
        if approval.code:  # an agent-authored tool not trusted yet: the code about to run
            parts.append(Syntax(visible(str(approval.code), newlines=True), "python", line_numbers=True))
        title = Text(f"approval {approval.id} · {visible(approval.tool)}")
        self.console.print(Panel(Group(*parts), title=title, title_align="left", border_style="yellow"))


class LineIO:
    """One line of stdin per message or answer, no prompt_toolkit: the chat can be scripted."""

    interactive = False

    def view(self) -> View:
        return PlainView()

    def read(self, prompt: str) -> str | None:
        line = sys.stdin.readline()
        return None if line == "" else line.rstrip("\n")

    def confirm(self, question: str, closed: Callable[[], bool]) -> Answer:
        print(question, end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if line == "":
            print(file=sys.stderr)
            return "eof"
        return "closed" if closed() else answer(line)

    def say(self, markup: str) -> None:
        from rich.text import Text

        print(Text.from_markup(markup).plain, file=sys.stderr, flush=True)

    def plain(self, text: str) -> None:
        print(for_stream(text, sys.stdout), flush=True)

    def error(self, text: str) -> None:
        print(f"error: {for_stream(text, sys.stderr, newlines=False)}", file=sys.stderr, flush=True)

    def approval(self, approval: ApprovalRow) -> None:
        args = json.dumps(approval.arguments, ensure_ascii=False)
        print(visible(f"approval {approval.id}: {approval.tool} {args} ({approval.reason})"),
              file=sys.stderr, flush=True)
        if approval.code:
            print(visible(str(approval.code), newlines=True), file=sys.stderr, flush=True)
