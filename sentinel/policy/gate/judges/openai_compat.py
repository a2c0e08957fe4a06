"""Any OpenAI-compatible endpoint: `response_format` json_schema strict, through the official client.

`openai` is imported when the first call is made, never when the gate loads. Each call
uses its own short-lived client (closed afterwards: no pooled sockets outlive a call).
Reasoning models that refuse `temperature` get one retry without it. `max_tokens` bounds every
answer (a verdict is a few dozen tokens; an unbounded judge can ramble past the timeout).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sentinel.jsontypes import JSON
from sentinel.models.openai_compat import body_error
from sentinel.policy.gate.judges.base import JudgeError, Request, Watchdog, past_deadline

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion


class OpenAIJudge:
    gpu = False

    def __init__(self, name: str, base_url: str, api_key: str | None):
        self.name = name
        self.base_url = base_url
        self.api_key = api_key

    @staticmethod
    def prepare() -> None:
        """Import the client before a deadline starts running (the gate calls this first)."""
        import openai  # noqa: F401

    @staticmethod
    def kwargs(request: Request) -> dict[str, Any]:  # untyped: the openai client's request fields, as in _create
        return {"model": request.model, "messages": request.messages(), "temperature": request.temperature,
                "max_tokens": request.max_tokens, "response_format": {"type": "json_schema",
                                    "json_schema": {**request.schema, "strict": True}}}

    def complete(self, request: Request) -> JSON:
        import openai

        kwargs = self.kwargs(request)
        timeout = max(0.001, request.remaining())
        client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "unused", timeout=timeout,
                               max_retries=0)
        watchdog = Watchdog(request, client.close)  # closing the client drops its connection at the deadline
        try:
            with client, watchdog:
                resp = self._create(client, kwargs, request)
        except openai.APITimeoutError:
            raise past_deadline(self.name, request) from None
        except openai.APIStatusError as exc:
            raise JudgeError(f"{self.name}: HTTP {exc.status_code}: {_message(exc)}") from None
        except openai.APIConnectionError:
            if watchdog.fired:
                raise past_deadline(self.name, request) from None
            raise JudgeError(f"{self.name}: cannot reach {self.base_url}") from None
        except openai.OpenAIError as exc:
            raise JudgeError(f"{self.name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        if not resp.choices:
            raise JudgeError(f"{self.name}: response has no choices")
        content = (resp.choices[0].message.content or "").strip()
        try:
            answer: JSON = json.loads(content)
            return answer
        except ValueError:
            raise JudgeError(f"{self.name}: model {request.model} answered with non-JSON: {content[:80]!r}") from None

    @staticmethod
    # untyped: the openai client types each request field with its own TypedDicts; the JSON passed here is sent as is
    def _create(client: openai.OpenAI, kwargs: dict[str, Any], request: Request) -> ChatCompletion:
        import openai

        try:
            resp: ChatCompletion = client.chat.completions.create(timeout=max(0.001, request.remaining()), **kwargs)
        except openai.BadRequestError as exc:
            if "temperature" not in _message(exc).lower():
                raise
            kwargs.pop("temperature", None)
            resp = client.chat.completions.create(timeout=max(0.001, request.remaining()), **kwargs)
        return resp


def _message(exc: Exception) -> str:
    return body_error(exc) or str(getattr(exc, "message", "") or exc).splitlines()[0]
