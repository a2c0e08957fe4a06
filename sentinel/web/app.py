"""The console as an ASGI app, and `sentinel web` serving it on loopback.

    app = build_app(engines, launch, port, settings)   # starlette: routes, static files, the guard in front
    serve(port=None, host=None)           # `sentinel web [--port P] [--host H]`: print the sign-in URL, serve until ^C
    sign_in_url()                         # `sentinel web --sign-in`: a new one-time sign-in URL for this operator

Local mode: this process runs the engine (a run approved here executes in this process, as `sentinel
approve` would). System mode: every read and decision goes over the supervisor's socket as the operator
who started the console, and sign-in tokens are issued by the supervisor, to operators only. Tokens,
sessions and the console's secret path are kept in the store, so a restart signs nobody out and links in
notifications keep working (remote access behind a TLS proxy: docs/notify.md).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from sentinel.engine.api import Engine
from sentinel.errors import SentinelError
from sentinel.web import links, views
from sentinel.web.guard import Guard, Launch
from sentinel.web.live import Engines, Hub
from sentinel.web.render import Templates
from sentinel.web.settings import WebSettings

if TYPE_CHECKING:
    import uvicorn

STATIC = Path(__file__).resolve().parent / "static"
WILDCARDS = ("0.0.0.0", "::", "")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def build_app(engines: Engines, launch: Launch, port: int, settings: WebSettings) -> ASGIApp:
    """The guarded ASGI app for one launch."""
    console = views.Console(engines, Hub(engines, settings.poll_s), Templates(), launch.prefix, launch.operator)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        console.hub.start()
        try:
            yield
        finally:
            await console.hub.stop()

    inner = [*views.ROUTES, *links.ROUTES, Mount("/static", StaticFiles(directory=STATIC), name="static")]
    app = Starlette(routes=[Mount(launch.prefix, routes=inner)], lifespan=lifespan,
                    exception_handlers={SentinelError: views.sentinel_error})
    app.state.console = console
    hosts = [*settings.allowed_hosts, *([settings.host] if settings.host not in WILDCARDS else [])]
    return Guard(launch, port, hosts, EngineSessions(engines, settings.session_days * 86400),
                 settings.public_url).wrap(app)


class EngineSessions:
    """Sign-in tokens and sessions as the engine keeps them (local: the store; system: the supervisor's)."""

    def __init__(self, engines: Engines, ttl_s: float):
        self.engines = engines
        self.ttl_s = ttl_s

    # untyped: the engine protocol's sign-in row (sentinel/engine/api.py types it so)
    def sign_in(self, token: str) -> dict[str, Any] | None:
        return self.engines.run(lambda e: e.web_sign_in(token, self.ttl_s))

    # untyped: the engine protocol's session row (sentinel/engine/api.py types it so)
    def session(self, secret: str) -> dict[str, Any] | None:
        return self.engines.run(lambda e: e.web_session(secret))


def engines_for(engine: Engine) -> Engines:
    """Local mode: a fresh LocalEngine per call (one SQLite connection per thread); system mode: the client."""
    if engine.mode == "system":
        return Engines(lambda: engine, "system")
    engine.close()
    from sentinel.local.engine import LocalEngine

    opener: Callable[[], Engine] = LocalEngine
    return Engines(opener, "local")


def launch_for(engines: Engines, listening: str | None = None) -> Launch:
    """The console's kept secret path and a one-time sign-in token for the operator starting it (system mode:
    issued by the supervisor, to operators only, by SO_PEERCRED). `listening`: where this console serves, which
    the links of notifications then name."""
    issued = engines.run(lambda e: e.web_token(listening))
    return Launch(str(issued["prefix"]), str(issued["token"]), str(issued["operator"]),
                  str(issued.get("console_url") or "") or None)


def _config(app: ASGIApp, *, quiet: bool = False) -> "uvicorn.Config":
    """uvicorn serving the console; `quiet`: uvicorn's logging left as it is (a console in a thread)."""
    import uvicorn
    import uvicorn.config

    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", ws="none",
                          server_header=False, date_header=False, timeout_graceful_shutdown=1,
                          log_config=None if quiet else uvicorn.config.LOGGING_CONFIG)


def serve(port: int | None = None, host: str | None = None) -> None:
    from sentinel import config as config_mod
    from sentinel.connect import open_engine
    from sentinel.muzzle.server import bind

    settings = config_mod.load().web
    if host is not None:
        settings = settings.model_copy(update={"host": host})
    engines = engines_for(open_engine())
    sock = bind(settings.host, settings.port if port is None else port, name="web console")
    bound = sock.getsockname()[1]
    shown = "127.0.0.1" if settings.host in WILDCARDS else settings.host
    launch = launch_for(engines, _origin(shown, bound))
    app = build_app(engines, launch, bound, settings)
    print(launch.url(shown, bound), flush=True)
    print(f"sentinel web ({engines.mode} mode, operator {launch.operator}): open the URL above in a browser on "
          f"this machine; it signs in once. Ctrl-C stops the console.", file=sys.stderr, flush=True)
    if settings.host not in LOOPBACK_HOSTS:
        print(f"warning: the console listens on {settings.host}: it is reachable from the network over plain "
              f"HTTP, and sign-in links and session cookies cross it unencrypted. Serve it on 127.0.0.1 behind a "
              f"reverse proxy that terminates TLS instead (docs/notify.md).", file=sys.stderr, flush=True)
    import uvicorn

    uvicorn.Server(_config(app)).run(sockets=[sock])


def _origin(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def sign_in_url() -> str:
    """A new one-time sign-in URL for the operator asking, at the console's address (`web.public_url`, else
    where the console last listened, else web.host:web.port)."""
    from sentinel import config as config_mod
    from sentinel.connect import open_engine

    settings = config_mod.load().web
    launch = launch_for(engines_for(open_engine()))
    base = settings.base_url() if settings.public_url else launch.console_url or settings.base_url()
    return f"{base}{launch.prefix}/login?token={launch.token}"


class InThread:
    """A console on 127.0.0.1:<ephemeral> in a daemon thread of this process (tests and benchmarks).

        console = InThread(engines, WebSettings(poll_s=0.1)).start()
        console.url ... console.stop()"""

    def __init__(self, engines: Engines, settings: WebSettings):
        from sentinel.muzzle.server import PromptServer, bind

        self.sock = bind("127.0.0.1", 0, name="web console")
        self.port = self.sock.getsockname()[1]
        self.launch = launch_for(engines, _origin("127.0.0.1", self.port))
        self.url = self.launch.url("127.0.0.1", self.port)
        self.server = PromptServer(_config(build_app(engines, self.launch, self.port, settings), quiet=True))
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
