"""The JSON value type: what `json.loads` returns and `json.dumps` accepts, spelled for the type checker.

Use `JSONObject` for a parsed object whose shape the code has not checked yet (a frame, a payload a client
sent, a journal line) and narrow it with `isinstance` or a pydantic model before reading fields; use a
dataclass or TypedDict once the shape is known. `Any` stays only at boundaries a third-party API types so.
"""

from __future__ import annotations

from typing import TypeAlias, Union

JSON: TypeAlias = Union[str, int, float, bool, None, list["JSON"], dict[str, "JSON"]]
JSONObject: TypeAlias = dict[str, JSON]


def object_in(value: JSON) -> JSONObject:
    """`value` when it is an object, else an empty one: for optional fields read from outside (`{}` reads as absent)."""
    return value if isinstance(value, dict) else {}


def list_in(value: JSON) -> list[JSON]:
    """`value` when it is an array, else an empty one: for optional fields read from outside."""
    return value if isinstance(value, list) else []
