"""Ollama's native API: POST /api/chat with `format` set to the JSON schema (structured outputs).

Plain `http.client`, no third-party import: this is the hook's default backend and it
must stay cheap to start. Calls to one Ollama URL are limited by `ollama_concurrency`
(the GPU serialises them anyway).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from urllib.parse import urlsplit

from sentinel.jsontypes import JSON, JSONObject
from sentinel.policy.gate.judges.base import JudgeError, Request, Watchdog, past_deadline


class OllamaJudge:
    gpu = True

    def __init__(self, url: str, limit: threading.BoundedSemaphore, name: str = "ollama"):
        self.name = name
        self.url = url.rstrip("/")
        self.limit = limit
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise JudgeError(f"ollama: bad url {url!r}")
        self._parts = parts
        self._host: str = parts.hostname

    def body(self, request: Request) -> JSONObject:
        messages: list[JSON] = list(request.messages())
        return {"model": request.model, "messages": messages, "stream": False,
                "format": request.body_schema(), "think": request.think,
                "options": {"temperature": request.temperature, "num_predict": request.max_tokens}}

    def complete(self, request: Request) -> JSON:
        with self.limit:
            data = self._post("/api/chat", self.body(request), request)
        message = data.get("message")
        content = str((message.get("content") if isinstance(message, dict) else None) or "").strip()
        try:
            answer: JSON = json.loads(content)
            return answer
        except ValueError:
            raise JudgeError(f"ollama: model {request.model} answered with non-JSON: {content[:80]!r}") from None

    def _post(self, path: str, body: JSONObject, request: Request) -> JSONObject:
        """One POST whose every byte arrives by the request's deadline: the socket timeout bounds each read, the
        watchdog cuts the connection at the deadline (a judge trickling a byte at a time passes every read)."""
        p = self._parts
        cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
        conn = cls(self._host, p.port, timeout=max(0.001, request.remaining()))
        watchdog = Watchdog(request, lambda: _cut(conn))
        try:
            with watchdog:
                conn.request("POST", (p.path or "") + path, json.dumps(body), {"Content-Type": "application/json"})
                resp = conn.getresponse()
                raw = resp.read()
        except (socket.timeout, TimeoutError):
            raise past_deadline("ollama", request) from None
        except (OSError, http.client.HTTPException) as exc:
            if watchdog.fired:
                raise past_deadline("ollama", request) from None
            raise JudgeError(f"ollama: cannot reach {self.url} ({exc.__class__.__name__})") from None
        finally:
            conn.close()
        if watchdog.fired:
            raise past_deadline("ollama", request)
        return _decode(resp.status, raw, self.url)


def _cut(conn: http.client.HTTPConnection) -> None:
    if conn.sock is not None:
        conn.sock.shutdown(socket.SHUT_RDWR)


def _decode(status: int, raw: bytes, url: str) -> JSONObject:
    try:
        data: JSON = json.loads(raw)
    except ValueError:
        raise JudgeError(f"ollama: HTTP {status} from {url} with a non-JSON body") from None
    if status != 200:
        message = data.get("error") if isinstance(data, dict) else None
        raise JudgeError(f"ollama: HTTP {status}: {message or 'error'}")
    if not isinstance(data, dict):
        raise JudgeError("ollama: response is not a JSON object")
    return data
