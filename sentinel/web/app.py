"""The console as an ASGI app, and `sentinel web` serving it on loopback.

    app = build_app(console, guard)       # starlette: routes, static files, the guard in front
    serve(port=None)                      # `sentinel web [--port P]`: print the sign-in URL, serve until ^C

Local mode: this process runs the engine (a run approved here executes in this process, as `sentinel
approve` would). System mode: every read and decision goes over the supervisor's socket as the operator
who started the console, and the one-time sign-in token is issued by the supervisor, to operators only.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from sentinel.engine.api import Engine
from sentinel.errors import SentinelError
from sentinel.web import views
from sentinel.web.guard import Guard, Launch
from sentinel.web.live import Engines, Hub
from sentinel.web.render import Templates
from sentinel.web.settings import WebSettings

STATIC = Path(__file__).resolve().parent / "static"
WILDCARDS = ("0.0.0.0", "::", "")


def build_app(engines: Engines, launch: Launch, port: int, settings: WebSettings) -> Any:
    """The guarded ASGI app for one launch."""
    console = views.Console(engines, Hub(engines, settings.poll_s), Templates(), launch.prefix, launch.operator)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        console.hub.start()
        try:
            yield
        finally:
            await console.hub.stop()

    inner = [*views.ROUTES, Mount("/static", StaticFiles(directory=STATIC), name="static")]
    app = Starlette(routes=[Mount(launch.prefix, routes=inner)], lifespan=lifespan,
                    exception_handlers={SentinelError: views.sentinel_error})
    app.state.console = console
    hosts = [*settings.allowed_hosts, *([settings.host] if settings.host not in WILDCARDS else [])]
    return Guard(launch, port, hosts).wrap(app)


def engines_for(engine: Engine) -> Engines:
    """Local mode: a fresh LocalEngine per call (one SQLite connection per thread); system mode: the client."""
    if engine.mode == "system":
        return Engines(lambda: engine, "system")
    engine.close()
    from sentinel.local.engine import LocalEngine

    opener: Callable[[], Engine] = LocalEngine
    return Engines(opener, "local")


def launch_for(engine: Engine) -> Launch:
    """System mode: the supervisor issues the token (operators only, by SO_PEERCRED); local mode: this process."""
    if engine.mode == "system":
        issued = engine.web_token()  # type: ignore[attr-defined]
        return Launch.new(str(issued["operator"]), str(issued["token"]))
    from sentinel.local.engine import operator_name

    return Launch.new(operator_name())


def _config(app: Any, **extra: Any) -> Any:
    import uvicorn

    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", ws="none",
                          server_header=False, date_header=False, timeout_graceful_shutdown=1, **extra)


def serve(port: int | None = None) -> None:
    from sentinel import config as config_mod
    from sentinel.connect import open_engine
    from sentinel.muzzle.server import bind

    settings = config_mod.load().web
    engine = open_engine()
    launch = launch_for(engine)
    engines = engines_for(engine)
    sock = bind(settings.host, settings.port if port is None else port, name="web console")
    bound = sock.getsockname()[1]
    app = build_app(engines, launch, bound, settings)
    shown = "127.0.0.1" if settings.host in WILDCARDS else settings.host
    print(launch.url(shown, bound), flush=True)
    print(f"sentinel web ({engines.mode} mode, operator {launch.operator}): open the URL above in a browser on "
          f"this machine; it signs in once. Ctrl-C stops the console.", file=sys.stderr, flush=True)
    if settings.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: web.host is {settings.host}: the console is reachable from the network over plain HTTP",
              file=sys.stderr, flush=True)
    import uvicorn

    uvicorn.Server(_config(app)).run(sockets=[sock])


class InThread:
    """A console on 127.0.0.1:<ephemeral> in a daemon thread of this process (tests and benchmarks).

        console = InThread(engines, WebSettings(poll_s=0.1)).start()
        console.url ... console.stop()"""

    def __init__(self, engines: Engines, settings: WebSettings, operator: str = "tester"):
        from sentinel.muzzle.server import PromptServer, bind

        self.sock = bind("127.0.0.1", 0, name="web console")
        self.port = self.sock.getsockname()[1]
        self.launch = Launch.new(operator)
        self.url = self.launch.url("127.0.0.1", self.port)
        self.server = PromptServer(_config(build_app(engines, self.launch, self.port, settings), log_config=None))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name="console")

    def start(self, timeout_s: float = 10.0) -> "InThread":
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise SentinelError("web console: the in-process server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.stop()
        self.thread.join(10)
