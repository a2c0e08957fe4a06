"""Helpers for watcher tests: a loopback JSON endpoint whose value a test sets, and watcher files.
System-mode fixtures come from tests/supervisor/sx_helpers.py."""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import yaml

from sentinel.models.loopback import Loopback

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "supervisor"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sx_helpers import make_agent, sentinel_cmd, supervisor, system  # noqa: E402,F401
from watch_helpers import ESCALATE, NOTIFY, price_watcher  # noqa: E402


class PriceServer(Loopback):
    """GET / answers {"price": value}; `value` is set by the test; `hits` counts the polls."""

    def __init__(self, value):
        self.value = value
        self.hits = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                server.hits += 1
                body = json.dumps({"price": server.value}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.listen(Handler)
        self.start()

    @property
    def url(self):
        return super().url + "/"


@pytest.fixture
def price_server():
    servers = []

    def start(value):
        servers.append(PriceServer(value))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


@pytest.fixture
def write_watcher(sentinel_home):
    """write_watcher(id, endpoint, **overrides) -> path of a price watcher in $SENTINEL_HOME/watchers."""

    def write(ident, endpoint, **overrides):
        data = price_watcher(ident, endpoint, **overrides)
        path = sentinel_home / "watchers" / f"{ident}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump(data))
        return path

    return write


@pytest.fixture
def two_models(scripted_server, configure):
    """Providers `notify/m` (a model that notifies) and `escalate/m` (one that escalates)."""
    n, e = scripted_server(NOTIFY), scripted_server(ESCALATE)
    configure({"providers": {"notify": {"base_url": n.base_url, "api_key_env": "FAKE_KEY"},
                             "escalate": {"base_url": e.base_url, "api_key_env": "FAKE_KEY"}},
               "default_model": "notify/m"})
    return n, e
