"""Scope matching: which actions a rule's `scope` and `exclude` patterns select.

    file_write   `**` globs on the path relative to the repository (wcmatch, GLOBSTAR)
    bash         fnmatch patterns on the command string, and on each `&&`/`||`/`;`/`|` segment of it
    mcp          `server:tool` patterns on the composite; a pattern without `:` matches the server or the tool
    any / other  the target of whatever the action is (tool name for tools that are none of the above)

Patterns are translated to regexes once, with wcmatch, when rules load (`compile_patterns`);
the cached regex strings are all the hook needs at run time (`matches`), so wcmatch is not
imported on the hot path.
"""

from __future__ import annotations

import re

_SEGMENTS = re.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")
_CACHE: dict[str, re.Pattern[str]] = {}


def compile_patterns(patterns: list[str], trigger: str) -> list[dict[str, object]]:
    """Each pattern as {"p": pattern, "g": glob regex, "f": fnmatch regex, "c": has a colon}."""
    from wcmatch import fnmatch, glob

    gflags = glob.GLOBSTAR | glob.DOTGLOB | glob.BRACE
    fflags = fnmatch.DOTMATCH | fnmatch.BRACE
    out: list[dict[str, object]] = []
    for pattern in patterns:
        entry: dict[str, object] = {"p": pattern, "c": ":" in pattern}
        if trigger in ("file_write", "any"):
            entry["g"] = glob.translate(pattern.lstrip("./") if pattern.startswith("./") else pattern,
                                        flags=gflags)[0]
        if trigger != "file_write":
            entry["f"] = fnmatch.translate(pattern, flags=fflags)[0]
        out.append(entry)
    return out


def _rx(source: str) -> re.Pattern[str]:
    rx = _CACHE.get(source)
    if rx is None:
        rx = _CACHE[source] = re.compile(source)
    return rx


def _any(sources: object, text: str) -> bool:
    return any(_rx(s).match(text) for s in (sources or ()))  # type: ignore[union-attr]


def command_candidates(command: str) -> list[str]:
    command = command.strip()
    parts = [p for p in _SEGMENTS.split(command) if p]
    return [command] + [p for p in parts if p != command]


def pattern_matches(entry: dict[str, object], trigger: str, target: str, server: str = "", tool: str = "") -> bool:
    if trigger == "file_write":
        return _any(entry.get("g"), target)
    if trigger == "bash":
        return any(_any(entry.get("f"), c) for c in command_candidates(target))
    if trigger == "mcp":
        if entry.get("c"):
            return _any(entry.get("f"), f"{server}:{tool}")
        return any(_any(entry.get("f"), part) for part in (server, tool) if part)
    return _any(entry.get("f"), target)


def matches(scope: list[dict[str, object]], exclude: list[dict[str, object]], trigger: str, target: str,
            server: str = "", tool: str = "") -> bool:
    """True when some scope pattern matches (an empty scope matches everything) and no exclude does."""
    if scope and not any(pattern_matches(e, trigger, target, server, tool) for e in scope):
        return False
    return not any(pattern_matches(e, trigger, target, server, tool) for e in exclude)
