"""Upstreams: route `provider/model` to an OpenAI-compatible endpoint or an in-process backend, and call it.

HTTP upstreams share one `httpx.AsyncClient` (a pooled, keep-alive connection
per upstream) and stream SSE through as it arrives. `local/*` models are HTTP
upstreams too: each runs in its own model host (`sentinel.models.hosts`),
reached on a Unix socket under Muzzle's state directory and started on first
use; when a host's model process dies mid-call, that call fails with
`model_unavailable` naming the cause, and the next call finds a fresh process.
The scripted model runs in a worker thread via `sentinel.models.resolve`, so
the event loop never blocks; its output is shaped like an upstream's. Which
model a name may reach, and from which file, is `served.served_file`'s check.

Both kinds answer in one shape: `complete()` returns a chat.completion dict and
`stream()` an async iterator of chat.completion.chunk dicts. Every failure is a
MuzzleError with the status the caller should see; messages never carry a key.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

import httpx2 as httpx  # the HTTP stack the openai client already loads: one stack per process, not two

from sentinel.errors import SentinelError
from sentinel.models.base import ModelError, ModelUnavailable
from sentinel.models.hosts import HOST_URL
from sentinel.models.shapes import chunk_base, completion_dict, completion_to_chunks
from sentinel.jsontypes import JSON, JSONObject, list_in, object_in
from sentinel.muzzle.errors import MuzzleError, bad_request
from sentinel.muzzle.served import served_file

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.models.base import Completion, ModelClient
    from sentinel.models.hosts import Ready
    from sentinel.muzzle.layout import Credentials

IN_PROCESS = ("scripted",)
HOSTED = "local"


@dataclass(frozen=True)
class Route:
    name: str
    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    file: Path | None = None  # an in-process model's file, when the operator's config names one
    hosted: bool = False  # a local model: its host's Unix socket is the transport

    @property
    def label(self) -> str:
        """What the log names as the upstream: never a key."""
        if self.hosted:
            return f"{self.provider} (model host)"
        return f"{self.provider} (in-process)" if self.base_url is None else f"{self.provider} {self.base_url}"


def split_name(name: JSON) -> tuple[str, str]:
    if not isinstance(name, str):
        raise bad_request("`model` must be a string naming provider/model")
    provider, sep, model = name.partition("/")
    if not sep or not provider or not model:
        raise bad_request(f"model {name!r}: expected provider/model, e.g. ollama/qwen3:4b", "model_not_found")
    return provider, model


class Upstreams:
    def __init__(self, config: "Config", credentials: "Credentials", state_dir: Path | None = None):
        from sentinel import paths
        from sentinel.models.hosts import Hosts

        self.config = config
        self.credentials = credentials
        self.hosts = Hosts(state_dir or paths.state_dir(), config.local, load_timeout_s=config.muzzle.upstream_timeout_s)
        self._http: httpx.AsyncClient | None = None
        self._host_http: dict[str, httpx.AsyncClient] = {}
        self._ready: dict[str, Ready] = {}
        self._backends: dict[str, ModelClient] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._made = threading.Lock()

    def route(self, name: str) -> Route:
        provider, model = split_name(name)
        if provider in IN_PROCESS:
            return Route(name, provider, model, file=served_file(provider, model, self.config.muzzle))
        if provider == HOSTED:  # the host loads a listed file by its path, a packaged model by its name
            file = served_file(provider, model, self.config.muzzle)
            return Route(name, provider, str(file) if file else model, HOST_URL, hosted=True, file=file)
        cfg = self.config.provider(provider)
        if cfg is None:
            raise MuzzleError(404, "model_not_found", f"model {name!r}: unknown provider {provider!r}")
        return Route(name, provider, model, cfg.base_url.rstrip("/"), self.credentials.key_for(provider))

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            s = self.config.muzzle
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(s.upstream_timeout_s, connect=s.connect_timeout_s),
                limits=httpx.Limits(max_connections=512, max_keepalive_connections=128, keepalive_expiry=30),
                follow_redirects=False, trust_env=False)
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        for client in self._host_http.values():
            await client.aclose()
        self._host_http.clear()

    async def _client(self, route: Route) -> httpx.AsyncClient:
        """The pooled client for an HTTP upstream; for a local model, its host's (started and loaded if needed)."""
        if not route.hosted:
            return self.http
        try:
            ready = self.hosts.warm(route.model)
            if ready is None:
                ready = await asyncio.to_thread(self.hosts.ensure, route.model)
        except ModelUnavailable as exc:
            raise MuzzleError(503, "model_unavailable", str(exc)) from None
        except ModelError as exc:
            raise MuzzleError(502, "upstream_error", str(exc)) from None
        self._ready[route.model] = ready
        key = ready.address
        if key not in self._host_http:
            s = self.config.muzzle
            self._host_http[key] = httpx.AsyncClient(
                transport=httpx.AsyncHTTPTransport(uds=key),
                timeout=httpx.Timeout(s.upstream_timeout_s, connect=s.connect_timeout_s), trust_env=False)
        return self._host_http[key]

    async def _host_died(self, route: Route, exc: Exception) -> MuzzleError | None:
        """For a local model whose process went away during the call: the failure naming the model and the cause."""
        ready = self._ready.get(route.model)
        if not route.hosted or ready is None:
            return None
        cause = await asyncio.to_thread(self.hosts.cause, route.model, ready)
        if cause is None:
            return None
        return MuzzleError(503, "model_unavailable", str(self.hosts.unavailable(route.model, cause)))

    # -- calls ------------------------------------------------------------------

    async def complete(self, route: Route, body: JSONObject) -> JSONObject:
        if route.base_url is None:
            return await self._in_process(route, body)
        return await self._http_complete(route, body)

    async def stream(self, route: Route, body: JSONObject) -> AsyncIterator[list[JSONObject]]:
        """Batches of chunks (all that one network read brought); the first batch is fetched before
        returning, so a failure to start is a proper status."""
        source = self._in_process_stream(route, body) if route.base_url is None else self._http_stream(route, body)
        first = await _first(source)
        return _prepend(first, source)

    # -- HTTP -------------------------------------------------------------------

    def _request(self, client: httpx.AsyncClient, route: Route, body: JSONObject) -> httpx.Request:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if route.api_key:
            headers["authorization"] = f"Bearer {route.api_key}"
        data = json.dumps({**body, "model": route.model}, ensure_ascii=False, separators=(",", ":")).encode()
        return client.build_request("POST", f"{route.base_url}/chat/completions", content=data, headers=headers)

    async def _send(self, route: Route, body: JSONObject, stream: bool) -> httpx.Response:
        client = await self._client(route)
        try:
            try:
                return await client.send(self._request(client, route, body), stream=stream)
            except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
                # a pooled connection the upstream had just closed, or a full accept queue: once more, fresh
                return await client.send(self._request(client, route, body), stream=stream)
        except httpx.TimeoutException:
            raise MuzzleError(504, "upstream_timeout", f"upstream {route.label}: timed out") from None
        except httpx.HTTPError as exc:
            raise await self._host_died(route, exc) or MuzzleError(
                502, "upstream_unreachable", f"upstream {route.label}: cannot reach it ({exc.__class__.__name__})") from None

    async def _http_complete(self, route: Route, body: JSONObject) -> JSONObject:
        resp = await self._send(route, body, stream=False)
        if resp.status_code != 200:
            raise upstream_status(route, resp.status_code, resp.content)
        data = _json_or_none(resp.content)
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            raise MuzzleError(502, "upstream_bad_response",
                              f"upstream {route.label} answered with something that is not a chat completion")
        return data

    async def _http_stream(self, route: Route, body: JSONObject) -> AsyncIterator[list[JSONObject]]:
        resp = await self._send(route, body, stream=True)
        try:
            if resp.status_code != 200:
                raise upstream_status(route, resp.status_code, await resp.aread())
            if "text/event-stream" not in resp.headers.get("content-type", ""):
                data = _json_or_none(await resp.aread())  # some servers ignore `stream`: reshape a whole answer
                if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
                    raise MuzzleError(502, "upstream_bad_response",
                                      f"upstream {route.label} answered with something that is not a chat completion")
                yield completion_to_chunks(data)
                return
            async for batch in _sse_batches(route, resp):
                yield batch
        except httpx.TimeoutException:
            raise MuzzleError(504, "upstream_timeout", f"upstream {route.label}: timed out mid-stream") from None
        except httpx.HTTPError as exc:
            raise await self._host_died(route, exc) or MuzzleError(
                502, "upstream_unreachable", f"upstream {route.label}: stream broke ({exc.__class__.__name__})") from None
        finally:
            await resp.aclose()

    # -- in-process backends -----------------------------------------------------

    def backend(self, route: Route) -> "ModelClient":
        """The in-process backend of a route, made on first use (on a worker thread: it reads files)."""
        if route.name not in self._backends:
            try:
                made = _make_backend(route, self.config)
            except SentinelError as exc:
                raise MuzzleError(404, "model_not_found", str(exc)) from None
            with self._made:
                self._locks.setdefault(route.name, threading.Lock())
                self._backends.setdefault(route.name, made)
        return self._backends[route.name]

    def _call_backend(self, route: Route, body: JSONObject,
                      on_delta: Callable[[str], None] | None) -> "Completion":
        backend = self.backend(route)
        tools = [object_in(t.get("function", t)) for t in list_in(body.get("tools")) if isinstance(t, dict)]
        messages = [m for m in list_in(body.get("messages")) if isinstance(m, dict)]
        # untyped: keyword arguments of a backend's complete(), of which only some take `response_format`
        kwargs: dict[str, Any] = {"on_delta": on_delta}
        if body.get("response_format") and "response_format" in inspect.signature(backend.complete).parameters:
            kwargs["response_format"] = body["response_format"]
        with self._locks[route.name]:  # llama.cpp contexts are not thread-safe: one call at a time per model
            try:
                return backend.complete(messages, tools, **kwargs)
            except ModelError as exc:
                raise MuzzleError(502, "upstream_error", str(exc)) from None

    async def _in_process(self, route: Route, body: JSONObject) -> JSONObject:
        completion = await asyncio.to_thread(self._call_backend, route, body, None)
        return completion_dict(route.name, completion)

    async def _in_process_stream(self, route: Route, body: JSONObject) -> AsyncIterator[list[JSONObject]]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | Completion | BaseException] = asyncio.Queue()  # a delta, the end, a failure

        def on_delta(piece: str) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, piece)

        def work() -> None:
            result: Completion | BaseException
            try:
                result = self._call_backend(route, body, on_delta)
            except BaseException as exc:  # noqa: BLE001 - handed to the event loop, re-raised there
                result = exc
            loop.call_soon_threadsafe(queue.put_nowait, result)

        task = loop.run_in_executor(None, work)
        base = chunk_base(route.name)
        streamed = False
        value = await queue.get()
        if not isinstance(value, BaseException):  # a backend that fails at once fails before the stream starts
            yield [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
        while isinstance(value, str):
            streamed = True
            yield [{**base, "choices": [{"index": 0, "delta": {"content": value}}]}]
            value = await queue.get()
        await task
        if isinstance(value, BaseException):
            raise value
        yield completion_to_chunks(completion_dict(route.name, value), skip_content=streamed)[1:]


def _make_backend(route: Route, config: "Config") -> "ModelClient":
    """An in-process backend (scripts: `local/*` models run in their hosts), made on a worker thread."""
    from sentinel.models import resolve

    return resolve(route.name, config)


def upstream_status(route: Route, status: int, raw: bytes) -> MuzzleError:
    """An upstream's error answer, as the caller should see it (never implying the run token was bad)."""
    data = _json_or_none(raw)
    err = data.get("error", data) if isinstance(data, dict) else None
    detail = str(err.get("message")) if isinstance(err, dict) and err.get("message") else f"HTTP {status}"
    message = f"upstream {route.label}: {detail}"
    if status in (401, 403):
        return MuzzleError(502, "upstream_auth", f"{message} (Muzzle's credentials for {route.provider!r} were refused)")
    if status in (400, 404, 413, 422, 429) or status >= 500:
        return MuzzleError(status if status < 500 else 502, "upstream_error", message, retry=status in (429, 503))
    return MuzzleError(502, "upstream_error", message)


def _json_or_none(raw: bytes) -> JSON:
    try:
        parsed: JSON = json.loads(raw)
        return parsed
    except ValueError:
        return None


async def _sse_batches(route: Route, resp: httpx.Response) -> AsyncIterator[list[JSONObject]]:
    """The `data:` events of an SSE body, parsed, grouped by the network read that completed them."""
    pending = b""
    async for raw in resp.aiter_bytes():
        lines = (pending + raw).split(b"\n")
        pending = lines.pop()
        batch: list[JSONObject] = []
        for line in lines:
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                if batch:
                    yield batch
                return
            batch.append(_event(route, data))
        if batch:
            yield batch


def _event(route: Route, data: bytes) -> JSONObject:
    chunk = _json_or_none(data)
    if not isinstance(chunk, dict):
        raise MuzzleError(502, "upstream_bad_response", f"upstream {route.label} sent a stream event that is not JSON")
    if "error" in chunk and "choices" not in chunk:
        raise upstream_status(route, 502, data)
    return chunk


async def _first(source: AsyncIterator[list[JSONObject]]) -> list[JSONObject] | None:
    try:
        return await source.__anext__()
    except StopAsyncIteration:
        return None


async def _prepend(first: list[JSONObject] | None,
                   rest: AsyncIterator[list[JSONObject]]) -> AsyncIterator[list[JSONObject]]:
    try:
        if first is None:
            return
        yield first
        async for chunk in rest:
            yield chunk
    finally:
        await rest.aclose()  # type: ignore[attr-defined]  # releases the upstream connection at once
