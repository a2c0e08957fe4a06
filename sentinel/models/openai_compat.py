"""Any OpenAI-compatible endpoint, through the official `openai` client, streaming."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sentinel.jsontypes import JSON, JSONObject
from sentinel.models.base import (Completion, ModelError, ModelUnavailable, OnDelta, OnProgress, ToolCall, sendable,
                                  tool_schemas_to_openai)

if TYPE_CHECKING:
    import httpx2
    import openai
    from openai.types import CompletionUsage

# Muzzle's codes for "the model process died" and "the upstream cannot be reached": the run may resume later
UNAVAILABLE = ("model_unavailable", "upstream_unreachable")


class OpenAICompatClient:
    def __init__(self, name: str, model: str, base_url: str, api_key: str | None, *, timeout_s: float = 300.0,
                 stream: bool = True, http_client: httpx2.Client | None = None):
        self.name = name
        self.model = model
        self.stream = stream
        self.base_url = base_url
        self.api_key = api_key
        self.via_muzzle = False  # set by muzzle.model_for_run when base_url is Muzzle and api_key a run token
        self.timeout_s = timeout_s
        self._http_client = http_client

    @functools.cached_property
    def _client(self) -> openai.OpenAI:
        """Built at the first call, not with the client: importing `openai` takes 0.3 s, which a process that
        only finds its run still waiting for approval (`sentinel resume`) never needs."""
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "unused", timeout=self.timeout_s,
                             max_retries=1, http_client=self._http_client)

    def complete(self, messages: list[JSONObject], tools: list[JSONObject], *,
                 on_delta: OnDelta | None = None, on_progress: OnProgress | None = None,
                 **options: JSON) -> Completion:
        """`options`: further request fields (response_format, max_tokens, temperature)."""
        import openai

        # the openai client sends the OpenAI JSON passed here as is; what the agent made (a file name that is not
        # UTF-8) must not stop the request from being encoded (sendable)
        # untyped: the client types each request field with its own TypedDicts
        kwargs: dict[str, Any] = {"model": self.model, "messages": sendable(list(messages)), **options}
        if tools:
            kwargs["tools"] = sendable(list(tool_schemas_to_openai(tools)))
        try:
            if self.stream:
                return self._streamed(kwargs, on_delta, on_progress)
            return self._whole(kwargs)
        except openai.APIStatusError as exc:
            if _code(exc) in UNAVAILABLE:
                raise self._unavailable(exc) from None
            raise ModelError(f"model {self.name}: HTTP {exc.status_code}: {_error_message(exc)}") from None
        except openai.APITimeoutError:
            raise ModelError(f"model {self.name}: no answer within the timeout (limits.model_timeout_s)") from None
        except openai.APIConnectionError as exc:
            raise ModelUnavailable(f"model {self.name}: cannot reach {self._client.base_url} "
                                   f"({exc.__class__.__name__})") from None
        except openai.APIError as exc:  # an error event in the middle of a stream
            if _code(exc) in UNAVAILABLE:
                raise self._unavailable(exc) from None
            raise ModelError(f"model {self.name}: {_error_message(exc)}") from None
        except openai.OpenAIError as exc:
            raise ModelError(f"model {self.name}: {str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__}") from None

    def _unavailable(self, exc: openai.APIError) -> ModelUnavailable:
        message = _error_message(exc)
        return ModelUnavailable(message if message.startswith(self.name) else f"model {self.name}: {message}")

    def _whole(self, kwargs: dict[str, Any]) -> Completion:  # untyped: the request fields, as in complete
        resp = self._client.chat.completions.create(**kwargs)
        if not resp.choices:
            raise ModelError(f"model {self.name}: response has no choices")
        msg = resp.choices[0].message
        calls = [ToolCall(c.id or f"call_{i}", c.function.name, c.function.arguments or "{}")
                 for i, c in enumerate(msg.tool_calls or []) if getattr(c, "function", None)]
        return Completion(msg.content or "", calls, _usage(resp.usage), resp.model or self.model)

    # untyped: the request fields, as in complete
    def _streamed(self, kwargs: dict[str, Any], on_delta: OnDelta | None, on_progress: OnProgress | None) -> Completion:
        text: list[str] = []
        calls: dict[int, _Pending] = {}
        usage: dict[str, int] = {}
        model = self.model
        stream = self._client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs)
        chunks = pieces = 0
        for chunk in stream:
            chunks += 1
            model = chunk.model or model
            if chunk.usage:
                usage = _usage(chunk.usage)
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta.content:
                    pieces += 1
                    text.append(delta.content)
                    if on_delta:
                        on_delta(delta.content)
                for tc in delta.tool_calls or []:
                    slot = calls.setdefault(tc.index, _Pending())
                    slot.id = tc.id or slot.id
                    if tc.function and tc.function.name:
                        slot.name += tc.function.name
                    if tc.function and tc.function.arguments:
                        slot.arguments.append(tc.function.arguments)
                        pieces += 1
            if on_progress and pieces:
                on_progress(pieces)
        if not chunks:
            raise ModelError(f"model {self.name}: the response carried no completion chunks "
                             "(is this an OpenAI-compatible endpoint?)")
        tool_calls = [ToolCall(s.id or f"call_{i}", s.name, "".join(s.arguments) or "{}")
                      for i, s in sorted(calls.items())]
        return Completion("".join(text), tool_calls, usage, model)


@dataclass
class _Pending:
    """A tool call whose pieces are still streaming in."""
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _usage(usage: CompletionUsage | None) -> dict[str, int]:
    if not usage:
        return {}
    return {"prompt_tokens": usage.prompt_tokens or 0, "completion_tokens": usage.completion_tokens or 0}


def body_error(exc: Exception) -> str | None:
    """The message of an OpenAI-style error body (`{"error": {"message": ...}}`), if the server sent one."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return None


def _code(exc: openai.APIError) -> str | None:
    body = exc.body
    err = body.get("error", body) if isinstance(body, dict) else None
    code = (err.get("code") if isinstance(err, dict) else None) or exc.code
    return None if code is None else str(code)


def _error_message(exc: Exception) -> str:
    return body_error(exc) or str(getattr(exc, "message", "")) or "error"
