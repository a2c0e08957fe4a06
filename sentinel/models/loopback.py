"""A test double's HTTP server: a ThreadingHTTPServer on a loopback port, served from a daemon thread.

    class MyDouble(Loopback):
        def __init__(self):
            self.listen(handler_class)          # host and port default to 127.0.0.1 and any free port
    with MyDouble() as double:                  # or .start() / .stop()
        double.url, double.base_url, double.port
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A client that went away mid-reply (a test killed the run it served) is not the double's error: no
        traceback on the test run's terminal. Anything else is printed as the standard server does."""
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class Loopback:
    THREAD = "loopback"
    POLL_S = 0.02  # how soon stop() is noticed by serve_forever: every test stops its doubles

    _httpd: _Server

    def listen(self, handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1", port: int = 0,
               queue: int | None = None) -> None:
        self._httpd = _Server((host, port), handler)
        self._httpd.daemon_threads = True
        if queue is not None:
            self._httpd.request_queue_size = queue

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible root."""
        return self.url + "/v1"

    def start(self) -> Self:
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": self.POLL_S}, name=self.THREAD,
                         daemon=True).start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
