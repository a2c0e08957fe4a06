"""What the chat offers as you type: `/` commands, `@agent` and `$skill` completion, and their colors.

    COMMANDS                              the slash commands and their help
    Completer(catalog)                    prompt_toolkit completer; `catalog()` returns the engine's catalog
    Lexer()                               colors a known /command, @name and $skill as they are typed
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from prompt_toolkit.completion import Completer as _Completer
from prompt_toolkit.completion import CompleteEvent, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.lexers import Lexer as _Lexer
from prompt_toolkit.styles import Style

COMMANDS: dict[str, str] = {
    "/help": "these commands",
    "/agents": "the agents you can talk to",
    "/use": "NAME: talk to another agent (its own session starts with your next message)",
    "/model": "M: use model M (provider/model) from your next message on",
    "/status": "this session, the engine and pending approvals",
    "/memory": "[QUERY]: search the agent's memory",
    "/skills": "skills you can attach ($name in a message attaches one)",
    "/workflow": "run NAME: run a saved workflow",
    "/mcp": "the MCP servers configured, and which this agent is granted",
    "/undo": "[STEP]: put the workspace back as it was before the last change (or after checkpoint STEP)",
    "/new": "start a fresh session with your next message",
    "/chats": "the saved sessions (`sentinel restore ID` reopens one)",
    "/quit": "leave (Ctrl-D does too)",
}

TOKEN = re.compile(r"(?<!\S)([@$][\w./-]*)")

STYLE = Style.from_dict({
    "command": "ansicyan bold", "partial": "ansicyan", "unknown": "ansired", "agent": "ansimagenta bold", "skill": "ansigreen",
    "prompt": "bold", "completion-menu.completion.current": "reverse",
})

Catalog = Callable[[], dict[str, list[dict[str, str]]]]


class Completer(_Completer):
    def __init__(self, catalog: Catalog):
        self.catalog = catalog

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        word = document.get_word_before_cursor(WORD=True)
        if text.startswith("/") and " " not in text:
            yield from _matching(text, [(name, help_) for name, help_ in COMMANDS.items()])
        elif text.startswith("/use "):
            yield from _matching(word, self._names("agents"))
        elif re.fullmatch(r"/workflow\s+\S*", text):
            yield from _matching(word, [("run", "run a saved workflow")])
        elif text.startswith("/workflow run "):
            yield from _matching(word, self._names("workflows"))
        elif word.startswith("@"):
            yield from _matching(word, self._names("agents", "@"))
        elif word.startswith("$"):
            yield from _matching(word, self._names("skills", "$"))

    def _names(self, kind: str, prefix: str = "") -> list[tuple[str, str]]:
        return [(prefix + item["name"], item.get("description") or "") for item in self.catalog().get(kind, [])]


def _matching(word: str, options: list[tuple[str, str]]) -> Iterable[Completion]:
    for name, meta in options:
        if name.startswith(word):
            yield Completion(name, start_position=-len(word), display_meta=meta)


class Lexer(_Lexer):
    def lex_document(self, document: Document) -> Callable[[int], StyleAndTextTuples]:
        lines = document.lines

        def line(number: int) -> StyleAndTextTuples:
            return list(fragments(lines[number], first=number == 0))

        return line


def _command_class(head: str, typing: bool = False) -> str:
    if head in COMMANDS:
        return "class:command"
    return "class:partial" if typing and any(c.startswith(head) for c in COMMANDS) else "class:unknown"


def fragments(text: str, first: bool = True) -> list[tuple[str, str]]:
    """Style fragments of one input line: the /command, then each @name and $skill."""
    out: list[tuple[str, str]] = []
    rest = text
    if first and text.startswith("/"):
        head, sep, rest = text.partition(" ")
        out.append((_command_class(head) if sep else _command_class(head, typing=True), head + sep))
    pos = 0
    for match in TOKEN.finditer(rest):
        out.append(("", rest[pos:match.start()]))
        out.append(("class:agent" if match.group(1)[0] == "@" else "class:skill", match.group(1)))
        pos = match.end()
    out.append(("", rest[pos:]))
    return [f for f in out if f[1]]
