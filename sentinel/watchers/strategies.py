"""Where a watcher's data comes from: one Source per strategy.

    source = make_source(watcher, run_command)
    source.due_at            # when to poll next (epoch seconds); webhooks: never (they are read when readable)
    items = source.poll(now) # the data observed now: [] when nothing happened; SourceError when it failed

http-poll GETs JSON; command runs argv under the agent's Leash profile (`run_command` is handed in) and
reads stdout as JSON or text; file reports a change of the file (its first look is the baseline; read as
sentinel/tools/rootpath.py reads: as root through no link another user could have made, a regular file only);
schedule yields one tick per due time; webhook accepts POSTs on 127.0.0.1:port/hooks/<id> carrying the
watcher's secret and yields each JSON body (answering 202 at once, so the sender never waits on a session).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Callable

from sentinel.jsontypes import JSON
from sentinel.watchers.cron import Cron
from sentinel.watchers.envelope import iso
from sentinel.watchers.spec import Command, FileChanged, HttpPoll, Schedule, Watcher, Webhook

RunCommand = Callable[[list[str], float, bytes | None], tuple[int | None, str]]
BODY_MAX = 1 << 20
FILE_MAX = 64 << 20  # the most a file source reads of its file (docs/watchers.md, Strategies)
WEBHOOK_QUEUE_MAX = 100


class SourceError(Exception):
    """A poll that failed (unreachable endpoint, bad JSON, failing command): reported, never a firing."""


class Source:
    def __init__(self, watcher: Watcher):
        self.watcher = watcher
        self.due_at = time.time()

    def poll(self, now: float) -> list[JSON]:
        self.due_at = now + self.interval()
        return [self.observe()]

    def interval(self) -> float:
        s = self.watcher.strategy
        return float((None if isinstance(s, Webhook) else s.intervalS) or 60.0)

    def observe(self) -> JSON:
        raise NotImplementedError

    def fileno(self) -> int | None:
        return None

    def close(self) -> None:
        pass


class HttpPollSource(Source):
    def __init__(self, watcher: Watcher, strategy: HttpPoll):
        super().__init__(watcher)
        self.strategy = strategy

    def observe(self) -> JSON:
        s = self.strategy
        request = urllib.request.Request(s.endpoint, headers={"Accept": "application/json", **s.headers})
        try:
            with urllib.request.urlopen(request, timeout=s.timeoutS) as answer:
                body = answer.read(BODY_MAX)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise SourceError(f"GET {s.endpoint}: {getattr(exc, 'reason', None) or exc}") from None
        try:
            data: JSON = json.loads(body)
        except ValueError:
            raise SourceError(f"GET {s.endpoint}: the answer is not JSON") from None
        return data


class CommandSource(Source):
    def __init__(self, watcher: Watcher, strategy: Command, run_command: RunCommand):
        super().__init__(watcher)
        self.strategy = strategy
        self.run_command = run_command

    def observe(self) -> JSON:
        s = self.strategy
        code, out = self.run_command(s.argv, s.timeoutS, None)
        if code != 0:
            raise SourceError(f"{s.argv[0]} exited {code}: {out.strip()[:200]}")
        if s.format == "text":
            return out.strip()
        try:
            data: JSON = json.loads(out)
        except ValueError:
            raise SourceError(f"{s.argv[0]}: stdout is not JSON (set strategy.format: text)") from None
        return data


class FileSource(Source):
    """A change of the file's content or existence; the first look that succeeds only takes the baseline.
    Read as sentinel/tools/rootpath.py reads (as root, through no link another user could have made; only a
    regular file), at most FILE_MAX bytes."""

    def __init__(self, watcher: Watcher, strategy: FileChanged):
        super().__init__(watcher)
        self.path = os.path.expanduser(strategy.path)
        self.seen: str | None = None
        try:
            self.seen = self._fingerprint()
        except SourceError:
            pass  # the first poll, due now, reports it (and every later one until it can be read)

    def _fingerprint(self) -> str:
        from sentinel.tools import rootpath

        digest, size = hashlib.sha256(), 0
        try:
            with os.fdopen(rootpath.open_read(self.path), "rb") as f:
                while chunk := f.read(1 << 16):
                    size += len(chunk)
                    if size > FILE_MAX:
                        raise SourceError(f"{self.path}: larger than {FILE_MAX} bytes, the most a file watcher reads")
                    digest.update(chunk)
        except FileNotFoundError:
            return "absent"
        except OSError as exc:
            raise SourceError(f"{self.path}: {exc.strerror}") from None
        return digest.hexdigest()

    def poll(self, now: float) -> list[JSON]:
        self.due_at = now + self.interval()
        current = self._fingerprint()
        if self.seen is None:
            self.seen = current
            return []
        if current == self.seen:
            return []
        event = "deleted" if current == "absent" else "created" if self.seen == "absent" else "changed"
        self.seen = current
        return [{"path": self.path, "event": event, "sha256": None if current == "absent" else current,
                 "changedAt": iso(now)}]


class ScheduleSource(Source):
    def __init__(self, watcher: Watcher, strategy: Schedule):
        super().__init__(watcher)
        self.cron = Cron.parse(strategy.cron) if strategy.cron else None
        self.every = strategy.intervalS   # the model requires one of cron and intervalS
        self.due_at = self._next(time.time())

    def _next(self, now: float) -> float:
        return self.cron.next_after(now) if self.cron else now + float(self.every or 0)

    def poll(self, now: float) -> list[JSON]:
        scheduled, self.due_at = self.due_at, self._next(now)
        return [{"scheduledAt": iso(scheduled)}]


class WebhookSource(Source):
    """A loopback listener; `poll` hands over what arrived since the last look."""

    def __init__(self, watcher: Watcher, strategy: Webhook):
        super().__init__(watcher)
        self.due_at = float("inf")
        self.received: list[JSON] = []
        self.server = HTTPServer(("127.0.0.1", strategy.port), _handler(self, watcher.id, strategy.secret))
        self.server.socket.setblocking(False)
        self.server.timeout = 0

    def fileno(self) -> int:
        return self.server.fileno()

    def readable(self) -> None:
        try:
            self.server.handle_request()
        except OSError:
            pass

    def poll(self, now: float) -> list[JSON]:
        items, self.received = self.received, []
        return items

    def close(self) -> None:
        self.server.server_close()


def _handler(source: WebhookSource, watcher_id: str, secret_text: str) -> type[BaseHTTPRequestHandler]:
    secret = secret_text.encode()
    path = f"/hooks/{watcher_id}"

    class Handler(BaseHTTPRequestHandler):
        timeout = 5

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            if self.path != path:
                return self._answer(404, "no such hook")
            if not hmac.compare_digest(self.headers.get("X-Sentinel-Secret", "").encode(), secret):
                return self._answer(403, "bad or missing X-Sentinel-Secret")
            length = int(self.headers.get("Content-Length") or 0)
            if length > BODY_MAX or len(source.received) >= WEBHOOK_QUEUE_MAX:
                return self._answer(413, "too large or too many waiting")
            body = self.rfile.read(length)
            try:
                source.received.append(json.loads(body) if body.strip() else {})
            except ValueError:
                return self._answer(400, "body is not JSON")
            self._answer(202, "accepted")

        def _answer(self, code: int, text: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(text.encode() + b"\n")

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def make_source(watcher: Watcher, run_command: RunCommand) -> Source:
    s = watcher.strategy
    if isinstance(s, HttpPoll):
        return HttpPollSource(watcher, s)
    if isinstance(s, Command):
        return CommandSource(watcher, s, run_command)
    if isinstance(s, FileChanged):
        return FileSource(watcher, s)
    if isinstance(s, Schedule):
        return ScheduleSource(watcher, s)
    try:
        return WebhookSource(watcher, s)
    except OSError as exc:
        raise SourceError(f"webhook port {s.port}: {exc.strerror}") from None

