"""Running the listener: `sentinel muzzle serve` in the foreground, or in-process on an ephemeral loopback port.

The in-process listener (local mode) is uvicorn in a daemon thread, started on
first use (never at import: the Leash launcher must fork before any thread
exists) and stopped at interpreter exit. One per process; a different config
or home replaces it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import resource
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import uvicorn
import uvicorn.config

from sentinel.errors import SentinelError
from sentinel.muzzle.layout import Layout, local_layout

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.muzzle.guard import ConnectionGuard


def _uvicorn_config(config: "Config", layout: Layout, *, quiet: bool) -> uvicorn.Config:
    """uvicorn serving Muzzle's app, each connection through the guard's limits."""
    from sentinel.muzzle.app import build_app

    if quiet:
        _errors_to_file(layout.state_dir / "muzzle-errors.log")
    app = build_app(config, layout)
    guard: ConnectionGuard = app.state.guard  # set by build_app; starlette's state is untyped
    return uvicorn.Config(app, http=guard.protocol(), log_level="warning", access_log=False, lifespan="on",
                          timeout_keep_alive=30, server_header=False, date_header=False,
                          log_config=None if quiet else uvicorn.config.LOGGING_CONFIG)


class _ErrorLog(logging.FileHandler):
    """In-process, uvicorn's error log (a traceback when a request fails unexpectedly) goes to a file beside
    the call log, not to the terminal the chat or the run draws on. The client still gets its HTTP 500."""


def _errors_to_file(path: Path) -> None:
    log = logging.getLogger("uvicorn.error")
    for old in [h for h in log.handlers if isinstance(h, _ErrorLog)]:
        log.removeHandler(old)
        old.close()
    handler = _ErrorLog(path, delay=True, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.propagate = False


def serve(config: "Config", layout: Layout, host: str, port: int, *,
          on_ready: Callable[[str], object] | None = None) -> None:
    """Serve until interrupted (SIGINT/SIGTERM end it cleanly)."""
    sock = bind(host, port)
    _raise_file_limit()
    server = uvicorn.Server(_uvicorn_config(config, layout, quiet=False))
    if on_ready:
        on_ready(f"http://{host}:{sock.getsockname()[1]}/v1")
    server.run(sockets=[sock])


def _raise_file_limit() -> None:
    """A served Muzzle may hold many clients' connections: use all the descriptors the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def bind(host: str, port: int, name: str = "muzzle") -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto given explicitly: asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP,
    # and without it every response waits out a 40 ms delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SentinelError(f"{name}: cannot listen on {host}:{port} ({exc.strerror})") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class PromptServer(uvicorn.Server):
    """uvicorn's server in a thread, stopped as soon as stop() is called: uvicorn looks at `should_exit` every
    0.1 s and then waits a fixed 0.1 s for the connections it asked to close, which every `sentinel run` paid
    at exit. Signals do not stop it (uvicorn handles them only in the main thread)."""

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets=sockets)

    async def main_loop(self) -> None:
        if not self.should_exit:
            await self._stopped.wait()

    def stop(self) -> None:
        """From any thread."""
        self.should_exit = True
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # its loop already closed
                self._loop.call_soon_threadsafe(self._stopped.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown, polling every 5 ms instead of sleeping 0.1 s: stop listening, ask each connection
        to close once its response is sent, wait for them and their tasks (cancelled after the config's
        timeout_graceful_shutdown), then end the lifespan."""
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        grace = self.config.timeout_graceful_shutdown
        deadline = time.monotonic() + (grace if grace is not None else float("inf"))
        while (self.server_state.connections or self.server_state.tasks) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        for task in self.server_state.tasks:
            task.cancel()
        for server in self.servers:
            await server.wait_closed()
        await self.lifespan.shutdown()


class InProcessMuzzle:
    """Muzzle on 127.0.0.1:<ephemeral> in a daemon thread of this process."""

    def __init__(self, config: "Config", layout: Layout):
        self.config = config
        self.layout = layout
        self._server: PromptServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._server is not None \
            and not self._server.should_exit

    def start(self, timeout_s: float = 10.0) -> "InProcessMuzzle":
        sock = bind("127.0.0.1", 0)
        self.port = sock.getsockname()[1]
        server = self._server = PromptServer(_uvicorn_config(self.config, self.layout, quiet=True))
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="muzzle", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                sock.close()
                raise SentinelError("muzzle: the in-process listener did not start")
            time.sleep(0.002)
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        if self._server is not None:
            self._server.stop()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._thread = None


_LOCK = threading.Lock()
_CURRENT: dict[str, tuple[InProcessMuzzle, str]] = {}  # "muzzle": the running one and what it was started for
_AT_EXIT: list[bool] = []


def ensure_local(config: "Config", home: Path | None = None) -> InProcessMuzzle:
    """The in-process Muzzle for this config and home, started on first use."""
    layout = local_layout(config, home)
    key = f"{layout.config_root.resolve()}\0{config.model_dump_json()}"
    with _LOCK:
        current, started_for = _CURRENT.get("muzzle") or (None, None)
        if current is not None and started_for == key and current.alive:
            return current
        if current is not None:
            current.stop()
        if not _AT_EXIT:
            atexit.register(stop_local)
            _AT_EXIT.append(True)
        muzzle = InProcessMuzzle(config, layout).start()
        _CURRENT["muzzle"] = (muzzle, key)
        return muzzle


def stop_local() -> None:
    with _LOCK:
        current = _CURRENT.pop("muzzle", None)
    if current is not None:
        current[0].stop()
