"""The JSON value type: what `json.loads` returns and `json.dumps` accepts, spelled for the type checker.

Use `JSONObject` for a parsed object whose shape the code has not checked yet (a frame, a payload a client
sent, a journal line) and narrow it with `isinstance` or a pydantic model before reading fields; use a
dataclass or TypedDict once the shape is known. `Any` stays only at boundaries a third-party API types so.
"""

from __future__ import annotations

from typing import TypeAlias, Union

JSON: TypeAlias = Union[str, int, float, bool, None, list["JSON"], dict[str, "JSON"]]
JSONObject: TypeAlias = dict[str, JSON]
