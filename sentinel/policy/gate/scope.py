"""Scope matching: which actions a rule's `scope` and `exclude` patterns select.

    file_write   `**` globs on the path relative to the repository (wcmatch, GLOBSTAR)
    bash         fnmatch patterns on each simple command a real parse finds (sentinel.policy.shell), and on
                 the whole line; a line the parse is not sure of is in scope of every bash rule
    mcp          `server:tool` patterns on the composite; a pattern without `:` matches the server or the tool
    any / other  the target of whatever the action is (tool name for tools that are none of the above)

Patterns are translated to regexes once, with wcmatch, when rules load (`compile_patterns`);
the cached regex strings are all the hook needs at run time (`matches`), so wcmatch is not
imported on the hot path. Nor is the shell parser, unless a bash rule's scope could match: a
command whose text lacks every scope pattern's literal pieces (and has no expansion, glob or
opaque word that could produce them) is out of scope without a parse (`shell.may_run`).

A file_write rule applies to a bash command when a path it may write (sentinel.policy.writes) matches
the glob, or is a directory above a match; when what it writes is unknown, it applies. A line of plain
words whose commands are all known read-only is decided without the parser (`writes.writes_nothing`).

A bash rule applies when some command (or the whole line) is in its scope and not excluded.
A command the parse knows only in part (`$x`, a glob, xargs' input from some word on) is in
scope when a pattern's literal head could still match it, and is never excluded.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from sentinel.policy.gate.action import Action
    from sentinel.policy.gate.dump import PatternDump
    from sentinel.policy.shell import Command

_CACHE: dict[str, re.Pattern[str]] = {}


def compile_patterns(patterns: list[str], trigger: str) -> list[PatternDump]:
    """Each pattern as {"p": pattern, "g": glob regex, "f": fnmatch regex, "c": has a colon}."""
    from wcmatch import fnmatch, glob

    from sentinel.policy.shell import literal_runs

    gflags = glob.GLOBSTAR | glob.DOTGLOB | glob.BRACE
    fflags = fnmatch.DOTMATCH | fnmatch.BRACE
    out: list[PatternDump] = []
    for pattern in patterns:
        entry: PatternDump = {"p": pattern, "c": ":" in pattern}
        if trigger in ("file_write", "any"):
            entry["g"] = glob.translate(pattern.lstrip("./") if pattern.startswith("./") else pattern,
                                        flags=gflags)[0]
        if trigger != "file_write":
            entry["f"] = fnmatch.translate(pattern, flags=fflags)[0]
            entry["r"] = literal_runs(pattern)
        out.append(entry)
    return out


def _rx(source: str) -> re.Pattern[str]:
    rx = _CACHE.get(source)
    if rx is None:
        rx = _CACHE[source] = re.compile(source)
    return rx


def _any(sources: list[str] | None, text: str) -> bool:
    return any(_rx(s).match(text) for s in (sources or ()))


def pattern_matches(entry: PatternDump, trigger: str, target: str, server: str = "", tool: str = "") -> bool:
    if trigger == "file_write":
        return _any(entry.get("g"), target)
    if trigger == "mcp":
        if entry.get("c"):
            return _any(entry.get("f"), f"{server}:{tool}")
        return any(_any(entry.get("f"), part) for part in (server, tool) if part)
    return _any(entry.get("f"), target)


def matches(scope: list[PatternDump], exclude: list[PatternDump], trigger: str, target: str,
            server: str = "", tool: str = "") -> bool:
    """True when some scope pattern matches (an empty scope matches everything) and no exclude does."""
    if trigger == "bash":
        return bash_matches(scope, exclude, target)
    if scope and not any(pattern_matches(e, trigger, target, server, tool) for e in scope):
        return False
    return not any(pattern_matches(e, trigger, target, server, tool) for e in exclude)


def bash_matches(scope: list[PatternDump], exclude: list[PatternDump], command: str) -> bool:
    """Some command of the line is in scope and not excluded; every rule when the parse is not sure."""
    command = command.strip()
    if not command:
        return False
    if scope and not any(_may_run(e, command) for e in scope):
        return False
    if not scope and not exclude:
        return True
    from sentinel.policy import shell

    parsed = shell.parse(command)
    if not parsed.sure:
        return True
    candidates = [shell.Command([command])] + parsed.commands
    return any((not scope or any(_command_in(e, c) for e in scope)) and
               (c.open_at is not None or not any(_any(e.get("f"), c.text) for e in exclude)) for c in candidates)


def writes_match(scope: list[PatternDump], exclude: list[PatternDump], action: Action, unknown: bool,
                 unspelled: bool = False) -> bool:
    """A bash command may write a path in scope and not excluded; `unknown` when what it writes is unknown, or
    `unspelled` when it is unknown and the line does not spell every word (an expansion, a glob, `~`).
    A written path also matches when it is a directory above a match (`rm -r src/core` under `src/core/b/**`)."""
    command = action.command.strip()
    if not command:
        return False
    from sentinel.policy.writes import writes_nothing

    if writes_nothing(command):  # `ls -la && git status`: no parse, no import of bashlex
        return False
    writes = action.writes()
    if not writes.known and (unknown or (unspelled and not writes.spelled)):
        return True
    # what is known is matched even when the rest is not: `npm test; rm -rf .claude/sentinel` names its write
    return paths_match(scope, exclude, writes.paths)


def paths_match(scope: list[PatternDump], exclude: list[PatternDump], paths: Iterable[str]) -> bool:
    """Some path is in scope (or a directory above a match) and not excluded."""
    return any((not scope or any(_any(e.get("g"), p) or _below(str(e.get("p") or ""), p) for e in scope)) and
               not any(_any(e.get("g"), p) for e in exclude) for p in paths)


def _below(pattern: str, path: str) -> bool:
    """Some path below `path` (a directory) could match the `**` glob `pattern`."""
    from fnmatch import fnmatchcase

    pattern = pattern[2:] if pattern.startswith("./") else pattern
    if not pattern or pattern.startswith("/") != path.startswith("/"):
        return False
    have = [s for s in path.split("/") if s and s != "."]
    want = [s for s in pattern.split("/") if s]
    for i, seg in enumerate(have):
        if i >= len(want):
            return False
        if want[i] == "**":
            return True
        if "{" not in want[i] and not fnmatchcase(seg, want[i]):
            return False
    return len(want) > len(have)


def _may_run(entry: PatternDump, command: str) -> bool:
    from sentinel.policy.shell import may_run, literal_runs

    runs = entry["r"] if "r" in entry else literal_runs(str(entry.get("p") or ""))
    return runs is None or may_run(command, runs)


def _command_in(entry: PatternDump, command: Command) -> bool:
    """The pattern matches the command's text, or (for a command known only in part) could match some expansion."""
    text, open_at, known = command.text, command.open_at, command.known
    if _any(entry.get("f"), text):
        return True
    if open_at is None:
        return False
    head = _head(str(entry.get("p") or ""))
    return head.startswith(known) or known.startswith(head)


def _head(pattern: str) -> str:
    """The literal text every match of the pattern starts with."""
    return re.split(r"[*?\[{\\]", pattern, maxsplit=1)[0]
