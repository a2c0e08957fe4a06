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
from typing import TYPE_CHECKING

from sentinel.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from sentinel.watchers.spec import Match


class Missing:
    """Where a path leads nowhere: not JSON's null, which is a value."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()
_TOKEN = re.compile(r"\[(\d+)\]|\[['\"]([^'\"]+)['\"]\]|([^.\[\]]+)")
_PLACEHOLDER = re.compile(r"\{\{\s*([^}]+?)\s*\}\}")


def lookup(data: JSON, path: str) -> JSON | Missing:
    path = path.strip()
    if path.startswith("$"):
        path = path[1:]
    value = data
    for index, key, name in _TOKEN.findall(path):
        part: int | str = int(index) if index else key or name
        if isinstance(value, list) and isinstance(part, str) and part.isdigit():
            part = int(part)
        if isinstance(value, dict) and isinstance(part, str) and part in value:
            value = value[part]
        elif isinstance(value, (list, str)) and isinstance(part, int) and part < len(value):
            value = value[part]
        else:
            return MISSING
    return value


def _number(value: JSON | Missing) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def compare(op: str, left: JSON | Missing, right: JSON) -> bool:
    if isinstance(left, Missing):
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


def holds(match: Match | None, data: JSON, previous: JSON | Missing = MISSING) -> tuple[bool, JSON | Missing]:
    """Does the watcher's condition hold on `data`? With no condition, any data holds."""
    if match is None:
        return True, data
    value = lookup(data, match.path)
    if match.op == "changed":
        return value is not MISSING and previous is not MISSING and value != previous, value
    return compare(match.op, value, match.value), value


def render(template: str, ctx: JSONObject) -> str:
    def fill(m: re.Match[str]) -> str:
        value = lookup(ctx, m.group(1))
        if isinstance(value, Missing):
            return ""
        return value if isinstance(value, str) else json.dumps(value, sort_keys=True)

    return _PLACEHOLDER.sub(fill, template)


def render_any(template: JSON, ctx: JSONObject) -> JSON:
    """Fill every string in a structure; a string that is exactly one placeholder keeps the value's type."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template.strip())
        if whole:
            value = lookup(ctx, whole.group(1))
            return None if isinstance(value, Missing) else value
        return render(template, ctx)
    if isinstance(template, list):
        return [render_any(t, ctx) for t in template]
    if isinstance(template, dict):
        return {k: render_any(v, ctx) for k, v in template.items()}
    return template
