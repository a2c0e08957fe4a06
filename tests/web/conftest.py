"""Web console fixtures: scripted runs paused on a `bash` call, a console served in this process (fast, for the
HTTP attacks) and `sentinel web` as a real subprocess (for the browser and system mode); system-mode fixtures
come from tests/supervisor/sx_helpers.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "supervisor"))

from sx_helpers import make_agent, sentinel_cmd, supervisor, system  # noqa: E402,F401

BASH = [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> ran.txt"}}]}, "All done."]


@pytest.fixture
def paused(scripted_server, configure, sentinel_home):
    """start(n=1) -> [(run_id, approval_id)]: local runs paused on a bash call, started in this process (the
    scripted model answers by turn: a bash call first, then a final answer)."""
    from sentinel.local.engine import LocalEngine

    configure(server=scripted_server(BASH))
    workspace = sentinel_home / "workspace"
    workspace.mkdir(exist_ok=True)

    def start(n: int = 1, task: str = "write that it ran to ran.txt") -> list[tuple[str, str]]:
        out = []
        for i in range(n):
            engine = LocalEngine()
            try:
                outcome = engine.start(f"{task} {i}" if n > 1 else task, workspace=workspace)
            finally:
                engine.close()
            assert outcome.status == "waiting_approval", outcome
            out.append((outcome.id, outcome.approval_id))
        return out

    return start


@dataclass
class Console:
    url: str          # the printed sign-in URL
    base: str         # http://127.0.0.1:PORT/s/PREFIX
    origin: str       # http://127.0.0.1:PORT
    port: int
    clients: list = field(default_factory=list)

    def client(self, **kw) -> httpx.Client:
        client = httpx.Client(timeout=10, follow_redirects=False, **kw)
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()

    def signed_in(self) -> "Session":
        client = self.client()
        answer = client.get(self.url)
        assert answer.status_code == 303, answer.text
        page = client.get(self.base + "/", headers={"accept": "text/html"})
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text).group(1)
        return Session(self, client, csrf)


@dataclass
class Session:
    console: Console
    http: httpx.Client
    csrf: str

    def get(self, path: str, **kw) -> httpx.Response:
        return self.http.get(self.console.base + path, **kw)

    def decide(self, approval_id: str, action: str = "approve", *, headers: dict | None = None,
               **body) -> httpx.Response:
        sent = {"x-csrf-token": self.csrf, "origin": self.console.origin, **(headers or {})}
        sent = {k: v for k, v in sent.items() if v is not None}
        return self.http.post(f"{self.console.base}/approvals/{approval_id}/{action}", json=body, headers=sent)


def _console_of(url: str) -> Console:
    origin, _, rest = url.partition("/s/")
    base = origin + "/s/" + rest.split("/login")[0]
    return Console(url, base, origin, int(origin.rsplit(":", 1)[1]))


@pytest.fixture
def console(sentinel_home):
    """start(**web_settings) -> Console served by uvicorn in a thread of this process (local mode)."""
    from sentinel.local.engine import LocalEngine
    from sentinel.web.app import InThread, engines_for
    from sentinel.web.settings import WebSettings

    started: list[tuple[InThread, Console]] = []

    def start(**settings) -> Console:
        server = InThread(engines_for(LocalEngine()), WebSettings(**{"poll_s": 0.1, **settings})).start()
        started.append((server, _console_of(server.url)))
        return started[-1][1]

    yield start
    for server, c in started:
        c.close()
        server.stop()


class WebProcess:
    """`sentinel web --port 0` as a subprocess; `url` is the line it printed."""

    def __init__(self, env: dict, cwd: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "sentinel", "web", "--port", "0"], env=env, cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise AssertionError(f"sentinel web printed no URL: {self.url!r} {self.stop()}")
        self.console = _console_of(self.url)

    def stop(self) -> str:
        """Stop it (SIGTERM, then SIGKILL) and return what it wrote on stderr."""
        if getattr(self, "console", None):
            self.console.close()
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.communicate(timeout=10)[1]
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.communicate(timeout=10)[1]


@pytest.fixture
def web_process(sentinel_home):
    procs: list[WebProcess] = []

    def start(env: dict | None = None) -> WebProcess:
        full = {**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "test-key", **(env or {})}
        workdir = sentinel_home / "workspace"
        workdir.mkdir(exist_ok=True)
        proc = WebProcess(full, workdir)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        err = proc.stop()
        assert "Traceback" not in err, err
