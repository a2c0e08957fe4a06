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
import fcntl
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Protocol

from sentinel.chat.view import PlainView, TerminalView, View
from sentinel.engine.rows import ApprovalRow
from sentinel.ui.escape import for_stream, visible
from sentinel.ui.render import code_listing

if TYPE_CHECKING:
    from prompt_toolkit.completion import Completer
    from rich.console import RenderableType
    from prompt_toolkit.input import Input
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


def typed_ahead(terminal: "Input") -> bool:
    """Drop every key typed before now (the approval panel is on screen): an answer counts only if typed after
    the question was seen. A habitual `y⏎` typed while the model still streamed sat in the terminal's input
    queue, and answered a question no one had read. Whether anything was dropped (a key pressed without Enter
    is dropped too, unseen here: it is in no complete line yet)."""
    import termios

    from prompt_toolkit.input.typeahead import get_typeahead

    dropped = bool(get_typeahead(terminal))  # what prompt_toolkit read past the last line it returned
    sys.stdout.flush()
    try:
        fd = sys.stdin.fileno()
        queued = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
        termios.tcflush(fd, termios.TCIFLUSH)
    except (OSError, ValueError, termios.error):  # not a terminal after all: nothing queued to drop
        return dropped
    return dropped or int.from_bytes(queued, sys.byteorder) > 0


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

        if typed_ahead(session.input):
            self.console.print("[dim]keys typed before this question were dropped: answer it now[/]")
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
        from rich.cells import cell_len
        from rich.console import Group
        from rich.panel import Panel
        from rich.text import Text

        # What the agent wrote is shown with every cursor-moving or hiding character escaped, and in full: the
        # panel wraps, it never crops (a line cut at the panel's edge hid `os.system(...)` from the person
        # approving it). Real newlines are kept: a multi-line command or file is seen as such.
        parts = approval_parts(approval)
        title = f"approval {approval.id} · {visible(approval.tool)}"
        if cell_len(title) + 6 > self.console.width:  # a panel's title is cut to fit: the tool's name goes in the body
            parts.insert(0, Text(f"tool: {visible(approval.tool)}"))
            title = f"approval {approval.id}"
        self.console.print(Panel(Group(*parts), title=Text(title), title_align="left", border_style="yellow"))


LEXERS = {".py": "python", ".json": "json", ".diff": "diff", ".yaml": "yaml", ".yml": "yaml"}


def approval_parts(approval: ApprovalRow) -> "list[RenderableType]":
    """Everything an approval would run, escaped and wrapped: the call (a bash command as it reads, any other
    argument beside it), why it paused, and each file of an agent-authored tool's code (or of an MCP server's
    changed pin) line by line, never cropped."""
    from rich.syntax import Syntax
    from rich.text import Text

    args = approval.arguments
    parts: list[RenderableType] = []
    if approval.tool == "bash" and isinstance(args.get("command"), str):
        parts.append(Text(visible(str(args["command"]), newlines=True)))
        rest = {k: v for k, v in args.items() if k != "command"}
        if rest:
            parts.append(Text(visible(json.dumps(rest, ensure_ascii=False, indent=2), newlines=True)))
    else:
        parts.append(Text(visible(json.dumps(args, ensure_ascii=False, indent=2), newlines=True)))
    parts.append(Text(f"why: {visible(approval.reason or '', newlines=True)}", style="dim"))
    if approval.code is not None:  # an agent-authored tool not trusted yet (or a changed MCP pin): what would run
        if approval.code_sha256:
            parts.append(Text(f"code sha256 {approval.code_sha256}", style="dim"))
        for name, text in approval.code.items():
            parts.append(Text(f"── {visible(name)}", style="bold"))
            lexer = LEXERS.get(Path(name).suffix.lower(), "text")
            shown = visible(text.removesuffix("\n"), newlines=True)
            parts.append(Syntax(shown, lexer, line_numbers=True, word_wrap=True))
    return parts


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
        if approval.code is not None:  # every file, line by line (sentinel approvals shows it the same way)
            print(code_listing(approval), file=sys.stderr, flush=True)
