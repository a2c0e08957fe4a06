"""SQL read as the database will run it, for rules that look at what an MCP call sends (`when`/`unless`).

    statements("DELETE FROM t -- where") -> ["DELETE FROM t"]
    statements("UPDATE a SET b = (SELECT 0 FROM c WHERE d)") -> ["UPDATE a SET b = (…)", "SELECT 0 FROM c WHERE d"]

Each statement of a text that opens with a keyword (parsed by `sqlparse`, a SQL lexer made for the job), with its
comments dropped, every string literal and quoted name emptied to `''`, single spaces, and each parenthesised part
replaced by `(…)`; a parenthesised part that is a statement itself (it opens with SELECT, INSERT, UPDATE, DELETE,
a DDL word or WITH) is given as a statement of its own, recursively: a subquery's WHERE is not its statement's, and a `DELETE` inside a
`WITH … AS (…)` is a statement of its own. So a pattern finds what the server will run, not what a comment, a
literal or a subquery says: `DELETE FROM t -- where`, `UPDATE t SET a = 'where'` and
`UPDATE t SET a = (SELECT 0 FROM c WHERE d)` have no WHERE of their own. A text that opens with no keyword
(`prod`, a table's name) is no statement. What runs inside a dollar-quoted body (`DO $$ … $$`), a function or
`EXECUTE` is not read: it stays in its statement as written, so a rule should exempt the statements it knows
(`unless: ['^select\b']`) rather than list the ones it forbids.

None when the text is too long to read here (MAX_CHARS): the caller is then not sure, and must judge.
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_CHARS = 100_000
_SPACE = re.compile(r"\s+")

from sqlparse.sql import Token, TokenList  # imported with this module: only a rule reading SQL imports it


def statements(text: str) -> list[str] | None:
    read = _read(text)
    return None if read is None else list(read)


@lru_cache(maxsize=32)  # each rule that reads the same call asks again (as shell.parse is cached for commands)
def _read(text: str) -> tuple[str, ...] | None:
    if len(text) > MAX_CHARS:
        return None
    import sqlparse

    found: list[str] = []
    for statement in sqlparse.parse(text):
        if _opens(list(statement.tokens), "Keyword"):
            _statement(list(statement.tokens), found)
    return tuple(found)


def _opens(tokens: list[Token], kind: str) -> bool:
    """Whether the first token that is not a space or a comment is a keyword (`kind` Keyword), or a statement's
    own keyword (`kind` DML: SELECT, INSERT, UPDATE, DELETE; DDL: DROP, TRUNCATE, ALTER, …; CTE: WITH)."""
    from sqlparse import tokens as T

    for token in tokens:
        first = _first(token)
        if first.is_whitespace or first.ttype in T.Comment:
            continue
        if kind == "Keyword":
            return first.ttype in T.Keyword
        return any(first.ttype in k for k in (T.Keyword.DML, T.Keyword.DDL, T.Keyword.CTE))
    return False


def _first(token: Token) -> Token:
    """The first plain token of a group (the token itself when it is one)."""
    while isinstance(token, TokenList) and token.tokens:
        token = token.tokens[0]
    return token


def _statement(tokens: list[Token], found: list[str]) -> None:
    """Append the statement these tokens make, then each parenthesised part of it that is a statement itself (a
    subquery; not a column list or a function's arguments) as its own."""
    inner: list[list[Token]] = []
    words: list[str] = []
    _words(tokens, words, inner)
    said = _SPACE.sub(" ", "".join(words)).strip().rstrip(";").strip()
    if said:
        found.append(said)
    for part in inner:
        if _opens(part, "DML"):
            _statement(part, found)


def _words(tokens: list[Token], words: list[str], inner: list[list[Token]]) -> None:
    from sqlparse import tokens as T
    from sqlparse.sql import Parenthesis

    for token in tokens:
        if isinstance(token, Parenthesis):
            words.append("(…)")
            inner.append(list(token.tokens[1:-1]))  # without its own parentheses
        elif isinstance(token, TokenList):
            _words(list(token.tokens), words, inner)
        elif token.ttype in T.Comment:
            words.append(" ")
        elif token.ttype in T.String:
            words.append("''")
        elif token.is_whitespace:
            words.append(" ")
        else:
            words.append(str(token.value))
