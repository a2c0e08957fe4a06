"""Conditions on a watcher's data and the templates filled from it.

    value = lookup(data, "$.prices[0].eth")          # MISSING when the path leads nowhere
    holds(match, data, previous) -> (bool, value)     # previous: the value at the last poll (for `changed`)
    render("{{watcher.id}}-{{value}}", ctx)           # dedupeKey; render_any(payloadTemplate, ctx) for structures

A path is dotted (`a.b.0`) or JSONPath-like (`$.a.b[0]`); an empty path is the whole data. Comparisons
between a number and a numeric string compare numbers; a comparison that cannot be made does not hold.
"""

from __future__ import annotations

import json
import re
from typing import Any

MISSING = object()
_TOKEN = re.compile(r"\[(\d+)\]|\[['\"]([^'\"]+)['\"]\]|([^.\[\]]+)")
_PLACEHOLDER = re.compile(r"\{\{\s*([^}]+?)\s*\}\}")


def lookup(data: Any, path: str) -> Any:
    path = path.strip()
    if path.startswith("$"):
        path = path[1:]
    value = data
    for index, key, name in _TOKEN.findall(path):
        part: Any = int(index) if index else key or name
        if isinstance(value, list) and isinstance(part, str) and part.isdigit():
            part = int(part)
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            return MISSING
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def compare(op: str, left: Any, right: Any) -> bool:
    if left is MISSING:
        return False
    if op in ("==", "!="):
        a, b = _number(left), _number(right)
        same = a == b if a is not None and b is not None else left == right
        return same if op == "==" else not same
    if op == "contains":
        return str(right) in left if isinstance(left, str) else right in left if isinstance(left, (list, dict)) else False
    if op == "matches":
        return re.search(str(right), left if isinstance(left, str) else json.dumps(left)) is not None
    a, b = _number(left), _number(right)
    if a is None or b is None:
        return False
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def holds(match: Any, data: Any, previous: Any = MISSING) -> tuple[bool, Any]:
    """Does the watcher's condition hold on `data`? With no condition, any data holds."""
    if match is None:
        return True, data
    value = lookup(data, match.path)
    if match.op == "changed":
        return value is not MISSING and previous is not MISSING and value != previous, value
    return compare(match.op, value, match.value), value


def render(template: str, ctx: dict[str, Any]) -> str:
    def fill(m: re.Match[str]) -> str:
        value = lookup(ctx, m.group(1))
        if value is MISSING:
            return ""
        return value if isinstance(value, str) else json.dumps(value, sort_keys=True)

    return _PLACEHOLDER.sub(fill, template)


def render_any(template: Any, ctx: dict[str, Any]) -> Any:
    """Fill every string in a structure; a string that is exactly one placeholder keeps the value's type."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template.strip())
        if whole:
            value = lookup(ctx, whole.group(1))
            return None if value is MISSING else value
        return render(template, ctx)
    if isinstance(template, list):
        return [render_any(t, ctx) for t in template]
    if isinstance(template, dict):
        return {k: render_any(v, ctx) for k, v in template.items()}
    return template
