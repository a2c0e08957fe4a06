"""A scripted OpenAI-compatible HTTP server: the test double for any upstream model.

It speaks the real protocol (`POST /v1/chat/completions`, streaming as SSE and
not, tool calls included; `GET /v1/models`) and answers from a script (see
`sentinel.models.script`). Every request body is recorded in `requests` so tests
can assert what reached the upstream. Runs on a loopback port in a thread:

    with ScriptedServer(replies) as server:
        client = OpenAI(base_url=server.base_url, api_key="x")
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from sentinel.jsontypes import JSON, JSONObject
from sentinel.models import script
from sentinel.models.loopback import Loopback


class ScriptedServer(Loopback):
    THREAD = "scripted-server"

    def __init__(self, replies: list[script.Reply] | list[JSON], *, host: str = "127.0.0.1", port: int = 0,
                 model: str = "scripted", require_key: str | None = None, chunk_chars: int = 4,
                 chunk_delay_s: float = 0.0):
        self.replies = _replies(replies)
        self.model = model
        self.require_key = require_key
        self.chunk_chars = chunk_chars
        self.chunk_delay_s = chunk_delay_s  # between streamed chunks, so a client's streaming can be seen
        self.requests: list[JSONObject] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self.listen(_handler(self), host, port)

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def record(self, body: JSONObject, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)


def _replies(replies: list[script.Reply] | list[JSON]) -> list[script.Reply]:
    typed = [r for r in replies if isinstance(r, script.Reply)]
    return typed if typed else script.parse([r for r in replies if not isinstance(r, script.Reply)])


def _completion(server: ScriptedServer, turn: int, reply: script.Reply) -> JSONObject:
    message: JSONObject = {"role": "assistant", "content": reply.content or None}
    calls = reply.calls_with_ids(turn)
    if calls:
        message["tool_calls"] = [c.to_message() for c in calls]
    return {
        "id": f"chatcmpl-{turn}", "object": "chat.completion", "created": int(time.time()), "model": server.model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _chunks(server: ScriptedServer, turn: int, reply: script.Reply, usage: bool) -> list[JSONObject]:
    base: JSONObject = {"id": f"chatcmpl-{turn}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": server.model}
    out: list[JSONObject] = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    text, n = reply.content, server.chunk_chars
    for i in range(0, len(text), n):
        out.append({**base, "choices": [{"index": 0, "delta": {"content": text[i:i + n]}}]})
    for idx, call in enumerate(reply.calls_with_ids(turn)):
        head: JSONObject = {"index": idx, "id": call.id, "type": "function",
                            "function": {"name": call.name, "arguments": ""}}
        out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [head]}}]})
        args = call.arguments
        for i in range(0, len(args), n):
            piece: JSONObject = {"index": idx, "function": {"arguments": args[i:i + n]}}
            out.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]})
    finish = "tool_calls" if reply.tool_calls else "stop"
    out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if usage:
        out.append({**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    return out


def _handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # untyped: http.server's own signature
            pass

        def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str) -> None:
            body = {"error": {"message": message, "type": "invalid_request_error", "code": status}}
            self._send(status, json.dumps(body).encode())

        def _authorized(self) -> bool:
            if server.require_key is None:
                return True
            return self.headers.get("Authorization", "") == f"Bearer {server.require_key}"

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                data = {"object": "list", "data": [{"id": server.model, "object": "model", "owned_by": "scripted"}]}
                self._send(200, json.dumps(data).encode())
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._error(404, f"no route {self.path}")
            if not self._authorized():
                return self._error(401, "bad api key")
            try:
                body = json.loads(raw)
            except ValueError:
                return self._error(400, "body is not JSON")
            if not isinstance(body, dict):
                return self._error(400, "body is not a JSON object")
            server.record(body, dict(self.headers))
            messages = body.get("messages")
            turn, reply = script.pick(server.replies, [m for m in messages if isinstance(m, dict)]
                                      if isinstance(messages, list) else [])
            if reply.delay_ms:
                time.sleep(reply.delay_ms / 1000)
            if reply.error:
                return self._error(reply.error.status, reply.error.message)
            if reply.raw is not None:
                return self._send(200, reply.raw.encode())
            if body.get("stream"):
                options = body.get("stream_options")
                usage = isinstance(options, dict) and bool(options.get("include_usage"))
                return self._stream(_chunks(server, turn, reply, usage))
            self._send(200, json.dumps(_completion(server, turn, reply)).encode())

        def _stream(self, chunks: list[JSONObject]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(server.chunk_delay_s)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


def main(argv: list[str] | None = None) -> None:
    """`python -m sentinel.models.fake_server SCRIPT.yaml [--port N]`: serve a script for demos."""
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m sentinel.models.fake_server")
    parser.add_argument("script", type=Path)
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    srv = ScriptedServer(script.load(args.script), port=args.port)
    print(f"serving {args.script} on {srv.base_url}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
