"""How the supervisor's refusals read on the operator's side: each failure reply's `kind` becomes its error
(sentinel/frames.py lists the kinds); `denied` is Denied, which the mode rule (system.py) raises too."""

from __future__ import annotations

from typing import NoReturn

from sentinel.errors import Busy, NotFound, SentinelError, UsageError
from sentinel.jsontypes import JSONObject

ERRORS: dict[str, type[SentinelError]] = {"usage": UsageError, "not_found": NotFound, "busy": Busy}


class Denied(SentinelError):
    """The supervisor refused the caller (not an operator)."""

    exit_code = 2


def raise_for(message: JSONObject) -> NoReturn:
    """The error a failure reply stands for."""
    kind, error = message.get("kind", "error"), message.get("error")
    if kind == "denied":
        raise Denied(str(error or "permission denied"))
    raise ERRORS.get(str(kind), SentinelError)(str(error or "the supervisor refused"))
