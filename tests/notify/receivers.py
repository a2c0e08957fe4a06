"""Loopback receivers speaking the real protocols: an HTTP endpoint that records what is POSTed (a webhook, ntfy,
Slack, Discord, Telegram's API), and an SMTP server (RFC 5321: EHLO, MAIL, RCPT, DATA, QUIT) that records mail."""

from __future__ import annotations

import email
import email.policy
import json
import socketserver
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Webhook:
    """Records each POST as {path, headers, body, json, t}; answers `fail_first` of them with 500."""

    def __init__(self, fail_first: int = 0):
        self.received: list[dict[str, Any]] = []
        self.fail_first = fail_first
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                failing = outer.fail_first > 0
                if failing:
                    outer.fail_first -= 1
                else:
                    try:
                        parsed = json.loads(body)
                    except ValueError:
                        parsed = None
                    outer.received.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                           "json": parsed, "t": time.time()})
                self.send_response(500 if failing else 200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.received

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Smtp:
    """A minimal SMTP server: each message as {from, to, message (email.message.EmailMessage)}."""

    def __init__(self) -> None:
        self.mail: list[dict[str, Any]] = []
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def say(self, line: str) -> None:
                self.wfile.write((line + "\r\n").encode())

            def handle(self) -> None:
                self.say("220 localhost test SMTP")
                sender, rcpts = None, []
                while line := self.rfile.readline():
                    verb = line.decode(errors="replace").strip()
                    upper = verb.upper()
                    if upper.startswith(("EHLO", "HELO")):
                        self.say("250 localhost")
                    elif upper.startswith("MAIL FROM:"):
                        sender, rcpts = verb[10:].strip(" <>"), []
                        self.say("250 OK")
                    elif upper.startswith("RCPT TO:"):
                        rcpts.append(verb[8:].strip(" <>"))
                        self.say("250 OK")
                    elif upper == "DATA":
                        self.say("354 end with <CRLF>.<CRLF>")
                        data = b""
                        while (chunk := self.rfile.readline()) not in (b".\r\n", b""):
                            data += chunk[1:] if chunk.startswith(b"..") else chunk
                        message = email.message_from_bytes(data, policy=email.policy.default)
                        outer.mail.append({"from": sender, "to": rcpts, "message": message})
                        self.say("250 OK queued")
                    elif upper == "QUIT":
                        self.say("221 bye")
                        return
                    else:
                        self.say("250 OK" if upper in ("RSET", "NOOP") else "502 not implemented")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.mail) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.mail

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
