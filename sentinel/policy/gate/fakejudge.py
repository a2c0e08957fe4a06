"""A scripted judge server on loopback: the test double for every HTTP judge backend.

It speaks Ollama's native `POST /api/chat` (answer in `message.content`) and the
OpenAI-compatible `POST /v1/chat/completions` (answer in `choices[0].message.content`).
The answer comes from `responder(body) -> dict`, by default `by_substring(...)`: the
first rule whose text occurs in the user message decides. Every request body is kept
in `requests`, so tests assert what reached the "model" (schema, temperature, prompt).

    with FakeJudge(by_substring({"billing": VIOLATION}), delay_ms=100) as judge:
        cfg = {"backends": {"ollama": {"url": judge.url}}}

`trickle_s` makes it the judge that never finishes: headers at once, then the body one byte every
`trickle_s` seconds (each socket read succeeds; only a deadline on the whole call ends it), until the
client hangs up or the judge stops.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from io import BufferedIOBase
from typing import Any, Callable, Mapping

from sentinel.jsontypes import JSON, JSONObject
from sentinel.models.loopback import Loopback

PASS: JSONObject = {"violation": False, "confidence": 0.95, "reason": "no violation"}


class Failure:
    """A responder's answer meaning: reply with this HTTP status and error message."""

    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message
Answer = JSON | Failure  # what the judge answers: JSON (a string is sent as the content itself), or a failure
Responder = Callable[[JSONObject], Answer]


def user_text(body: JSONObject) -> str:
    messages = body.get("messages")
    return "\n".join(str(m.get("content") or "") for m in (messages if isinstance(messages, list) else [])
                     if isinstance(m, dict) and m.get("role") == "user")


def by_substring(table: Mapping[str, Answer], default: Answer = PASS) -> Responder:
    """Answer table[key] for the first key found in the user message, else `default`."""

    def respond(body: JSONObject) -> Answer:
        text = user_text(body)
        for key, answer in table.items():
            if key in text:
                return answer
        return default

    return respond


class FakeJudge(Loopback):
    THREAD = "fake-judge"

    def __init__(self, responder: Responder | None = None, *, delay_ms: float = 0, status: int = 200,
                 host: str = "127.0.0.1", port: int = 0, trickle_s: float = 0):
        self.responder = responder or by_substring({})
        self.delay_ms = delay_ms
        self.trickle_s = trickle_s
        self.hung_up = threading.Event()  # a trickled reply's client closed the connection
        self._stopping = threading.Event()
        self.status = status
        self.requests: list[JSONObject] = []
        self.paths: list[str] = []
        self.authorizations: list[str] = []  # each request's Authorization header ("" when none)
        self._lock = threading.Lock()
        self.listen(_handler(self), host, port, queue=64)  # `url` is the Ollama-style root, `base_url` OpenAI's

    def stop(self) -> None:
        self._stopping.set()
        super().stop()

    def trickle(self, wfile: BufferedIOBase, raw: bytes) -> None:
        for i in range(len(raw)):
            if self._stopping.wait(self.trickle_s):
                return
            try:
                wfile.write(raw[i:i + 1])
                wfile.flush()
            except OSError:
                self.hung_up.set()
                return

    def answer(self, path: str, body: JSONObject) -> Answer:
        with self._lock:
            self.requests.append(body)
            self.paths.append(path)
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000)
        return self.responder(body)


def _reply(path: str, body: JSONObject, answer: JSON) -> JSONObject:
    content = answer if isinstance(answer, str) else json.dumps(answer)
    if path.endswith("/api/chat"):
        return {"model": body.get("model"), "created_at": "2026-01-01T00:00:00Z", "done": True,
                "message": {"role": "assistant", "content": content}}
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model"), "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}


def _handler(judge: FakeJudge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # untyped: http.server's own signature
            pass

        def _send(self, status: int, data: JSONObject) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw) * 1000 if judge.trickle_s else len(raw)))
            self.end_headers()
            if judge.trickle_s:
                self.wfile.flush()
                return judge.trickle(self.wfile, raw * 1000)
            self.wfile.write(raw)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            judge.authorizations.append(self.headers.get("Authorization") or "")
            path = self.path.rstrip("/")
            if not (path.endswith("/api/chat") or path.endswith("/chat/completions")):
                return self._send(404, {"error": f"no route {self.path}"})
            try:
                body = json.loads(raw)
            except ValueError:
                return self._send(400, {"error": "body is not JSON"})
            if not isinstance(body, dict):
                return self._send(400, {"error": "body is not a JSON object"})
            answer = judge.answer(path, body)
            if isinstance(answer, Failure):
                return self._send(answer.status, {"error": {"message": answer.message}})
            if judge.status != 200:
                return self._send(judge.status, {"error": {"message": "scripted failure"}})
            self._send(200, _reply(path, body, answer))

    return Handler


def write_repo(root: str | Path, rules: Mapping[str, JSON], config: Mapping[str, JSON] | None = None) -> Path:
    """A repository with .claude/sentinel/config.yaml and one rule file per entry (a mapping or YAML text)."""
    import yaml

    root = Path(root)
    rules_dir = root / ".claude" / "sentinel" / "rules"
    rules_dir.mkdir(parents=True, exist_ok=True)
    (root / ".claude" / "sentinel" / "config.yaml").write_text(yaml.safe_dump(config or {}))
    for name, body in rules.items():
        text = body if isinstance(body, str) else yaml.safe_dump(body, sort_keys=False)
        (rules_dir / f"{name}.yaml").write_text(text)
    return root
