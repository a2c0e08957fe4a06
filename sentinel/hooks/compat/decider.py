"""The person in the compatibility run's `ask` cases: a Sentinel home whose `notify:` webhook is a loopback
receiver, the web console on loopback, and a decision posted through the notification's one-tap link the way a
browser posts the link page's form (or no decision at all, for the expiry case).

    with Decider(home, decision="deny", reason="not today") as person:
        env = {"SENTINEL_HOME": str(home), "SENTINEL_MODE": "local"}   # the client's hooks ask here
        ... run the client ...
        person.notified, person.decided, person.answer                 # what happened

The link is rewritten to the console's own port (a notification names `web.public_url`, by default
127.0.0.1:8789); nothing else is touched: the page is fetched, then the form is posted with the console's Origin.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from sentinel.jsontypes import JSON

if TYPE_CHECKING:
    from sentinel.web.app import InThread

DECISIONS = ("approve", "deny", "none")


class Decider:
    def __init__(self, home: Path, decision: str, reason: str = "", delay_s: float = 0.5):
        if decision not in DECISIONS:
            raise ValueError(f"decision: one of {', '.join(DECISIONS)}")
        self.home, self.decision, self.reason, self.delay_s = home, decision, reason, delay_s
        self.notified: list[JSON] = []   # each webhook body, as posted
        self.decided: str | None = None      # the link page's answer, once posted
        self.error: str | None = None
        self._got = threading.Event()
        self._stop = threading.Event()

    # -- setup ------------------------------------------------------------------------------------

    def __enter__(self) -> "Decider":
        import yaml

        self.receiver = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self.receiver.serve_forever, daemon=True, name="compat-webhook").start()
        url = f"http://127.0.0.1:{self.receiver.server_address[1]}/hook"
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.yaml").write_text(yaml.safe_dump(
            {"notify": [{"type": "webhook", "url": url, "on": ["approval"], "one_tap": True}]}))
        self.console = self._console()
        self.worker = threading.Thread(target=self._decide, daemon=True, name="compat-decider")
        self.worker.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._got.set()
        self.worker.join(10)
        self.console.stop()
        self.receiver.shutdown()
        self.receiver.server_close()

    def _console(self) -> InThread:
        from sentinel.local.engine import LocalEngine
        from sentinel.web.app import InThread
        from sentinel.web.live import Engines
        from sentinel.web.settings import WebSettings

        home = self.home
        return InThread(Engines(lambda: LocalEngine(home), "local"), WebSettings(poll_s=0.25)).start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        decider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    decider.notified.append(json.loads(body))
                except ValueError:
                    decider.notified.append({"raw": body.decode(errors="replace")})
                decider._got.set()
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    # -- the person --------------------------------------------------------------------------------

    def summary(self) -> dict[str, str | int | None]:
        """What the case's result records: notifications received, the decision posted and its answer."""
        return {"notifications": len(self.notified), "decision": self.decision,
                "answer": "posted" if self.decided else None, "error": self.error}

    def link(self, notification: JSON) -> str:
        """The notification's one-tap link, on this console's port."""
        if not isinstance(notification, dict):
            raise ValueError(f"the notification is not a JSON object: {notification!r}")
        parts = urllib.parse.urlsplit(str(notification["decide_url"]))
        return urllib.parse.urlunsplit(("http", f"127.0.0.1:{self.console.port}", parts.path, "", ""))

    def _decide(self) -> None:
        self._got.wait()
        if self._stop.is_set() or self.decision == "none" or not self.notified:
            return
        time.sleep(self.delay_s)  # the client is seen waiting first
        try:
            self.decided = self.post(self.link(self.notified[0]), self.decision, self.reason)
        except Exception as exc:  # reported in the case's result, never raised in a thread
            self.error = f"{type(exc).__name__}: {exc}"

    def post(self, link: str, decision: str, reason: str = "") -> str:
        """Open the link page, then submit its form as a browser does (urlencoded, with the page's Origin)."""
        with urllib.request.urlopen(link, timeout=30) as page:
            page.read()
        form = urllib.parse.urlencode({"decision": decision, "reason": reason}).encode()
        origin = f"http://127.0.0.1:{self.console.port}"
        req = urllib.request.Request(link, data=form, headers={
            "Content-Type": "application/x-www-form-urlencoded", "Origin": origin, "Referer": link})
        with urllib.request.urlopen(req, timeout=30) as answer:
            text: str = answer.read().decode(errors="replace")
            return text
