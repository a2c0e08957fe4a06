"""Muzzle's refusals and failures, each an OpenAI-style error body with its HTTP status.

    401 invalid_token / token_expired        403 model_not_allowed / blocked
    429 budget_exhausted                     400 invalid_request / 404 model_not_found
    502 upstream_unreachable / upstream_bad_response / upstream_error / upstream_auth
    504 upstream_timeout

Refusals Muzzle decides itself carry `x-should-retry: false` so clients do not
retry them; an upstream's own status (a 429 or 503 from the provider) passes
through without it.
"""

from __future__ import annotations

from sentinel.jsontypes import JSONObject

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
          404: "invalid_request_error", 429: "insufficient_quota"}


class MuzzleError(Exception):
    def __init__(self, status: int, code: str, message: str, *, retry: bool = False):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry = retry

    @property
    def decision(self) -> str:
        return f"denied:{self.code}" if self.status < 500 and self.code != "upstream_error" else f"error:{self.code}"

    def body(self) -> JSONObject:
        kind = _TYPES.get(self.status, "api_error" if self.status >= 500 else "invalid_request_error")
        return {"error": {"message": self.message, "type": kind, "code": self.code}}

    def headers(self) -> dict[str, str]:
        return {} if self.retry else {"x-should-retry": "false"}


def unauthorized(message: str, code: str = "invalid_token") -> MuzzleError:
    return MuzzleError(401, code, message)


def bad_request(message: str, code: str = "invalid_request") -> MuzzleError:
    return MuzzleError(400, code, message)
