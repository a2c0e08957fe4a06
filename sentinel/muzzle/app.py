"""The listener: an OpenAI-compatible ASGI app (starlette) that authenticates, inspects, forwards and logs.

    POST /v1/chat/completions   streaming (SSE) and not, tool calls included
    GET  /v1/models             the models the caller's token may use
    GET  /healthz               liveness, no token needed

One call, in order: bearer token -> grant (401), body (413 over
`max_request_bytes`, 408 when the guard cut off a slow one, 400), model allowed
(403), budget left (429), route (404), outbound inspection (403 when a block
rule matches), upstream call (502/504 and upstream statuses), inbound
inspection, answer, then one log line and the tokens charged to the run.

Parsing and inspecting a large body or reply (over OFF_LOOP_BYTES) runs on a
worker thread, at most HEAVY_AT_ONCE at a time, so one caller's megabytes
never stall every other caller's call; small ones stay inline (a thread hop
costs more than they do).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, AsyncIterator, Callable, TypeVar, TypeVarTuple, Unpack

import anyio
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from sentinel.jsontypes import JSON, JSONObject, list_in, object_in
from sentinel.muzzle.calllog import CallLog, CallRecord
from sentinel.muzzle.errors import MuzzleError, bad_request, unauthorized
from sentinel.muzzle.guard import BODY_LATE, ConnectionGuard
from sentinel.muzzle.inspect import Inspector, StreamInspector, tool_calls_of
from sentinel.muzzle.layout import Credentials, Layout
from sentinel.muzzle.redact import Finding, Redactor
from sentinel.muzzle.tokens import Grant, TokenStore
from sentinel.muzzle.upstream import Route as Upstream
from sentinel.muzzle.upstream import Upstreams

if TYPE_CHECKING:
    from sentinel.config import Config

T = TypeVar("T")
A = TypeVarTuple("A")
JSON_TYPE = "application/json"
OFF_LOOP_BYTES = 64 * 1024
HEAVY_AT_ONCE = 2
logger = logging.getLogger("sentinel.muzzle")


def dumps(obj: JSON) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def sse(obj: JSON) -> bytes:
    return b"data: " + dumps(obj) + b"\n\n"


class Muzzle:
    """One listener's state: token store, inspector, upstreams and call log."""

    def __init__(self, config: "Config", layout: Layout, *, store: TokenStore | None = None):
        self.config = config
        self.layout = layout
        self.store = store or TokenStore.open(layout.store_path)
        credentials = Credentials(config, layout.keys_file)
        extra = [(p.name, p.pattern) for p in config.muzzle.redact]
        self.redactor = Redactor(self.store.redaction_key(), extra, credentials.known_secrets())
        self.inspector = Inspector(self.redactor, config.muzzle)
        self.upstreams = Upstreams(config, credentials, layout.state_dir)
        self.log = CallLog(layout.log_path)
        self._heavy: anyio.CapacityLimiter | None = None

    async def cpu(self, size: int, fn: Callable[[Unpack[A]], T], *args: Unpack[A]) -> T:
        """`fn(*args)`, on a worker thread when `size` (bytes or characters of text) makes it heavy."""
        if size < OFF_LOOP_BYTES:
            return fn(*args)
        if self._heavy is None:
            self._heavy = anyio.CapacityLimiter(HEAVY_AT_ONCE)
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._heavy)

    async def aclose(self) -> None:
        await self.upstreams.aclose()
        self.log.close()
        self.store.close()

    # -- checks -------------------------------------------------------------------

    def authenticate(self, header: str | None) -> Grant:
        scheme, _, token = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise unauthorized("missing bearer token: a run's client sends its Muzzle run token as the API key")
        grant = self.store.lookup(token.strip())
        if grant is None:
            raise unauthorized("unknown token")
        if grant.revoked:
            raise unauthorized("token revoked", "token_revoked")
        if grant.expired:
            raise unauthorized("token expired", "token_expired")
        return grant

    def authorize(self, grant: Grant, model: str) -> None:
        if not grant.allows(model):
            raise MuzzleError(403, "model_not_allowed",
                              f"model {model!r} is not allowed for agent {grant.agent!r} "
                              f"(allowed: {', '.join(grant.models) or 'none'})")
        over = self.store.spent(grant).over(grant.budgets)
        if over:
            raise MuzzleError(429, "budget_exhausted", f"{over} for agent {grant.agent!r}, run {grant.run_id!r}")

    # -- bookkeeping --------------------------------------------------------------

    def note(self, rec: CallRecord, findings: list[Finding], inbound: bool) -> None:
        if inbound:
            rec.redactions_in += len(findings)
        else:
            rec.redactions_out += len(findings)
        rec.redaction_kinds = sorted({*rec.redaction_kinds, *(f.kind for f in findings)})

    def finish(self, rec: CallRecord, grant: Grant | None) -> None:
        """The log line, and the call's tokens charged to the run and the agent."""
        if rec.decision == "allowed" and (rec.redactions_out or rec.redactions_in):
            rec.decision = "+".join(d for d, n in (("redacted", rec.redactions_out), ("flagged", rec.redactions_in)) if n)
        if rec.error:
            rec.error = self.redactor.redact(rec.error)[0]
        self.log.write(rec)
        if grant is not None and (rec.tokens_in or rec.tokens_out):
            self.store.charge(grant, rec.tokens_in + rec.tokens_out)

    def refuse(self, rec: CallRecord, grant: Grant | None, exc: MuzzleError) -> Response:
        message = self.redactor.redact(exc.message)[0]
        exc.message = message
        rec.status, rec.decision, rec.error = exc.status, exc.decision, message
        self.finish(rec, grant)
        return Response(dumps(exc.body()), exc.status, headers=exc.headers(), media_type=JSON_TYPE)

    def usage(self, rec: CallRecord, usage: JSON, body: JSONObject, out_chars: int) -> None:
        counted = object_in(usage)
        prompt, completion = counted.get("prompt_tokens"), counted.get("completion_tokens")
        rec.usage_estimated = not isinstance(prompt, int) or not isinstance(completion, int)
        rec.tokens_in = prompt if isinstance(prompt, int) else math.ceil(len(dumps(body.get("messages"))) / 4)
        rec.tokens_out = completion if isinstance(completion, int) else math.ceil(out_chars / 4)

    # -- handlers -----------------------------------------------------------------

    async def chat(self, request: Request) -> Response:
        rec, grant = CallRecord(), None
        try:
            grant = self.authenticate(request.headers.get("authorization"))
            rec.agent, rec.run = grant.agent, grant.run_id
            raw = await read_body(request, self.config.muzzle.max_request_bytes)
            asked = await self.cpu(len(raw), parse_body, raw)
            rec.model, rec.stream = asked.model, asked.stream
            self.authorize(grant, asked.model)
            route = self.upstreams.route(asked.model)
            rec.upstream = route.label
            body, findings = await self.cpu(len(raw), self.inspector.request, asked.body)
            self.note(rec, findings, inbound=False)
            if rec.stream:
                return await self._stream(rec, grant, route, body)
            return await self._whole(rec, grant, route, body)
        except MuzzleError as exc:
            return self.refuse(rec, grant, exc)
        except ClientDisconnect:
            rec.status, rec.decision, rec.error = 499, "error:client_closed", "the caller went away mid-request"
            self.finish(rec, grant)
            return Response(status_code=499)

    async def _whole(self, rec: CallRecord, grant: Grant, route: Upstream, body: JSONObject) -> Response:
        data = await self.upstreams.complete(route, body)
        rec.mark_first_token()
        calls = tool_calls_of(data)
        out_chars = sum(len(str(object_in(c.get("message")).get("content") or ""))
                        for c in list_in(data["choices"]) if isinstance(c, dict)) + sum(len(c["arguments"]) for c in calls)
        findings, rec.tool_calls = await self.cpu(out_chars, self._inspect_reply, data, calls)
        self.note(rec, findings, inbound=True)
        self.usage(rec, data.get("usage"), body, out_chars)
        data["model"] = rec.model
        self.finish(rec, grant)
        return Response(dumps(data), media_type=JSON_TYPE)

    def _inspect_reply(self, data: JSONObject,
                       calls: list[dict[str, str]]) -> tuple[list[Finding], list[dict[str, str]]]:
        """Findings in a whole reply (redacted in place), and its tool calls as the log records them."""
        findings = self.inspector.response(data)
        return findings, [{**c, "arguments": self.redactor.redact(c["arguments"])[0]} for c in calls]

    async def _stream(self, rec: CallRecord, grant: Grant, route: Upstream, body: JSONObject) -> Response:
        options = object_in(body.get("stream_options"))
        want_usage = bool(options.get("include_usage"))
        upstream_body = body
        if route.base_url is not None:  # ask for usage so budgets count real tokens; dropped if unasked
            upstream_body = {**body, "stream_options": {**options, "include_usage": True}}
        chunks = await self.upstreams.stream(route, upstream_body)
        inspector = self.inspector.stream()
        return StreamingResponse(self._relay(rec, grant, body, chunks, inspector, want_usage),
                                 media_type="text/event-stream", headers={"cache-control": "no-cache"})

    async def _relay(self, rec: CallRecord, grant: Grant, body: JSONObject,
                     chunks: AsyncIterator[list[JSONObject]],
                     inspector: StreamInspector, want_usage: bool) -> AsyncIterator[bytes]:
        last: JSONObject | None = None
        logged = False
        try:
            async for batch in chunks:  # one write per upstream read, not one per event
                last = batch[-1] if batch else last
                parts = await self.cpu(_text_size(batch), self._relay_batch, rec, batch, inspector, want_usage)
                if parts:
                    yield b"".join(parts)
            for out in inspector.finish(last):
                yield sse({**out, "model": rec.model})
            logged = self._stream_done(rec, grant, body, inspector)  # logged before the caller sees [DONE]
            yield b"data: [DONE]\n\n"
        except MuzzleError as exc:
            exc.message = self.redactor.redact(exc.message)[0]
            rec.status, rec.decision, rec.error = exc.status, exc.decision, exc.message
            logged = self._stream_done(rec, grant, body, inspector)
            yield sse(exc.body())
        except (asyncio.CancelledError, GeneratorExit):
            rec.status, rec.decision, rec.error = 499, "error:client_closed", "the caller went away mid-stream"
            raise
        except Exception as exc:  # a harness bug: the caller gets an error event, the log says what broke
            logger.exception("muzzle: stream relay failed")
            rec.status, rec.decision, rec.error = 500, "error:internal", f"internal error ({exc.__class__.__name__})"
            logged = self._stream_done(rec, grant, body, inspector)
            yield sse(MuzzleError(500, "internal_error", rec.error).body())
        finally:
            with anyio.CancelScope(shield=True):
                await _aclose(chunks)
                if not logged:
                    self._stream_done(rec, grant, body, inspector)

    def _relay_batch(self, rec: CallRecord, batch: list[JSONObject], inspector: StreamInspector,
                     want_usage: bool) -> list[bytes]:
        parts = []
        for chunk in batch:
            for out in inspector.process(chunk):
                if out.get("usage") and not out.get("choices") and not want_usage:
                    continue
                if _carries_output(out):
                    rec.mark_first_token()
                out["model"] = rec.model
                parts.append(sse(out))
        return parts

    def _stream_done(self, rec: CallRecord, grant: Grant, body: JSONObject, inspector: StreamInspector) -> bool:
        self.note(rec, inspector.findings, inbound=True)
        rec.tool_calls = inspector.tool_calls
        self.usage(rec, inspector.usage, body, inspector.text_chars)
        self.finish(rec, grant)
        return True

    async def models(self, request: Request) -> Response:
        try:
            grant = self.authenticate(request.headers.get("authorization"))
        except MuzzleError as exc:
            return Response(dumps(exc.body()), exc.status, headers=exc.headers(), media_type=JSON_TYPE)
        data: list[JSON] = [{"id": m, "object": "model", "created": 0, "owned_by": "muzzle"} for m in grant.models]
        return Response(dumps({"object": "list", "data": data}), media_type=JSON_TYPE)

    async def health(self, request: Request) -> Response:
        return Response(b'{"ok":true}', media_type=JSON_TYPE)


@dataclass(frozen=True)
class Asked:
    """What Muzzle reads of a chat.completions request; `body` is all of it, inspected and forwarded as sent."""

    body: JSONObject
    model: str
    stream: bool


def parse_body(raw: bytes) -> Asked:
    try:
        body = json.loads(raw)
    except ValueError:
        raise bad_request("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("`model` is required (provider/model)")
    if not isinstance(body.get("messages"), list):  # an empty list is the upstream's to judge
        raise bad_request("`messages` must be a list")
    return Asked(body, model, bool(body.get("stream")))


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused (413) past `limit` bytes before any more is read; one the guard cut
    off for being slow is a 408 (for the log: the connection is gone)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    parts, size = [], 0
    try:
        async for part in request.stream():
            size += len(part)
            if size > limit:
                raise too_large(limit)
            parts.append(part)
    except ClientDisconnect:
        if request.scope.get(BODY_LATE):
            raise MuzzleError(408, "request_timeout", "the request body did not arrive in time "
                                                      "(the operator's muzzle.body_timeout_s)") from None
        raise
    return b"".join(parts)


def too_large(limit: int) -> MuzzleError:
    return MuzzleError(413, "request_too_large", f"the request body is over {limit} bytes "
                                                 "(the operator's muzzle.max_request_bytes)")


def _text_size(batch: list[JSONObject]) -> int:
    """Characters of text a batch of chunks carries (what inspecting it costs)."""
    size = 0
    for chunk in batch:
        for choice in list_in(chunk.get("choices")):
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict):
                content = delta.get("content")
                size += len(content) if isinstance(content, str) else 0
                for call in list_in(delta.get("tool_calls")):
                    func = call.get("function") if isinstance(call, dict) else None
                    args = func.get("arguments") if isinstance(func, dict) else None
                    size += len(args) if isinstance(args, str) else 0
    return size


def _carries_output(chunk: JSONObject) -> bool:
    for choice in list_in(chunk.get("choices")):
        delta = object_in(choice.get("delta")) if isinstance(choice, dict) else {}
        if delta.get("content") or delta.get("tool_calls"):
            return True
    return False


async def _aclose(chunks: AsyncIterator[list[JSONObject]]) -> None:
    close = getattr(chunks, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


def build_app(config: "Config", layout: Layout) -> Starlette:
    """The app, with the connection guard its server must use (`app.state.guard.protocol()`)."""
    muzzle = Muzzle(config, layout)
    guard = ConnectionGuard(config.muzzle)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            guard.close()
            await muzzle.aclose()

    app = Starlette(routes=[
        Route("/v1/chat/completions", muzzle.chat, methods=["POST"]),
        Route("/chat/completions", muzzle.chat, methods=["POST"]),
        Route("/v1/models", muzzle.models, methods=["GET"]),
        Route("/healthz", muzzle.health, methods=["GET"]),
    ], lifespan=lifespan)
    app.state.muzzle = muzzle
    app.state.guard = guard
    return app
