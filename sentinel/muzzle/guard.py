"""Connection limits of the listener: who a client is, how many connections it holds, how long its head may take.

uvicorn's httptools protocol with the bounds it lacks, so a client that opens connections and
never finishes a request cannot hold Muzzle's file descriptors:

    per client     at most `max_connections_per_client` open connections (429 beyond, at once);
                   a client is the uid owning the other end of a loopback connection (asked of
                   the kernel by sock_diag, so a leashed agent is its uid whatever port it uses),
                   else its address
    head time      a request's line and headers must arrive within `header_timeout_s` (408); on a
                   kept-alive connection the timer starts when a read leaves a head unfinished
    head size      at most MAX_HEAD bytes of them (431)
    body time      its body within `body_timeout_s` after them (408); a timer is armed only when
                   a read leaves a body unfinished, so the usual request costs none
    drain time     a body left unread by a refusal (413, 408) is discarded for `header_timeout_s`
                   at most, then the connection is closed

The body's size is the app's to bound (sentinel.muzzle.app), where the caller's token is known; a
body cut off here reaches the app as a disconnect marked with BODY_LATE in its scope.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import struct
from collections import Counter
from functools import partial
from typing import TYPE_CHECKING, Any, Callable

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from sentinel.muzzle.errors import MuzzleError

if TYPE_CHECKING:
    from sentinel.muzzle.settings import MuzzleSettings

MAX_HEAD = 64 * 1024
BODY_LATE = "sentinel.body_late"
_REASONS = {408: "Request Timeout", 429: "Too Many Requests", 431: "Request Header Fields Too Large"}

# A TCP socket's address as asyncio's `peername`/`sockname` give it: (host, port) or, for IPv6, with flow and scope
Address = tuple[str, int] | tuple[str, int, int, int]
Owner = Callable[[Address, Address], "int | None"]


class ConnectionGuard:
    """Open connections per client, for one listener (used on its event loop only)."""

    def __init__(self, settings: "MuzzleSettings", owner: Owner | None = None):
        self.settings = settings
        self.open: Counter[str] = Counter()
        self._owner = owner or SocketOwner()

    def client(self, peer: Address | None, local: Address | None) -> str:
        uid = self._owner(peer, local) if peer and local else None
        if uid is not None:
            return f"uid {uid}"
        return f"address {peer[0] if peer else 'unknown'}"

    def admit(self, client: str) -> bool:
        if self.open[client] >= self.settings.max_connections_per_client:
            return False
        self.open[client] += 1
        return True

    def leave(self, client: str) -> None:
        self.open[client] -= 1
        if self.open[client] <= 0:
            del self.open[client]

    def protocol(self) -> "type[GuardedProtocol]":
        """The protocol factory uvicorn's `http=` takes (a partial: uvicorn only calls it)."""
        return partial(GuardedProtocol, guard=self)  # type: ignore[return-value]  # called like the class

    def close(self) -> None:
        close = getattr(self._owner, "close", None)
        if close is not None:
            close()


class GuardedProtocol(HttpToolsProtocol):
    """One connection: admitted by its client's count, its heads and bodies read against the clock."""

    # untyped: uvicorn's own arguments (config, server state, app state), passed on to HttpToolsProtocol unchanged
    def __init__(self, *args: Any, guard: ConnectionGuard, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.guard = guard
        self.client_key: str | None = None
        self.head_timer: asyncio.TimerHandle | None = None
        self.drain_timer: asyncio.TimerHandle | None = None
        self.body_timer: asyncio.TimerHandle | None = None
        self.head_bytes = 0
        self.in_head = False  # a request has begun and its head is not complete

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn hands a Transport
        super().connection_made(transport)
        client = self.guard.client(transport.get_extra_info("peername"), transport.get_extra_info("sockname"))
        if not self.guard.admit(client):
            limit = self.guard.settings.max_connections_per_client
            self.refuse(MuzzleError(429, "too_many_connections",
                                    f"{client} already holds {limit} connections to Muzzle", retry=True))
            return
        self.client_key = client
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_done()
        self._body_done()
        if self.client_key is not None:
            self.guard.leave(self.client_key)
            self.client_key = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        reading_head = self.head_timer is not None
        super().data_received(data)
        if reading_head and self.head_timer is not None:  # the head is still unfinished after this read
            self.head_bytes += len(data)
            if self.head_bytes > MAX_HEAD:
                self.refuse(MuzzleError(431, "headers_too_large", f"request headers over {MAX_HEAD} bytes"))
        elif self.in_head and self.head_timer is None and not self.transport.is_closing():
            self._await_head()  # a kept-alive connection's next head, unfinished after its first read
        elif self.body_timer is None and self.drain_timer is None and self.cycle is not None \
                and self.cycle.more_body and not self.transport.is_closing():
            self.body_timer = self.loop.call_later(self.guard.settings.body_timeout_s, self._body_late)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.in_head = True

    def on_headers_complete(self) -> None:
        self.in_head = False
        self._head_done()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        """Refused before its body was read (413, 408): the rest is discarded, for a bounded time only."""
        super().on_response_complete()
        if self.cycle is not None and self.cycle.more_body and self.drain_timer is None:
            self._body_done()
            self.drain_timer = self.loop.call_later(self.guard.settings.header_timeout_s, self.transport.close)

    def on_message_complete(self) -> None:
        self._body_done()
        super().on_message_complete()

    def _body_done(self) -> None:
        for timer in (self.body_timer, self.drain_timer):
            if timer is not None:
                timer.cancel()
        self.body_timer = self.drain_timer = None

    def _body_late(self) -> None:
        self.body_timer = None
        if self.cycle is not None:
            # our own key in the ASGI scope, which uvicorn's types close to its own keys
            self.cycle.scope[BODY_LATE] = True  # type: ignore[literal-required]
            if self.cycle.response_started:
                self.transport.close()
                return
        self.refuse(MuzzleError(408, "request_timeout", f"the request body did not arrive within "
                                                        f"{self.guard.settings.body_timeout_s:g}s"))

    def _await_head(self) -> None:
        self.head_bytes = 0
        self.head_timer = self.loop.call_later(self.guard.settings.header_timeout_s, self._head_late)

    def _head_done(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_late(self) -> None:
        self.head_timer = None
        self.refuse(MuzzleError(408, "request_timeout", f"the request's headers did not arrive within "
                                                        f"{self.guard.settings.header_timeout_s:g}s"))

    def refuse(self, exc: MuzzleError) -> None:
        """Answer with `exc` and close, whatever the request has sent so far."""
        self._head_done()
        if self.transport.is_closing():
            return
        body = json.dumps(exc.body()).encode()
        headers = {**exc.headers(), "content-type": "application/json", "content-length": str(len(body)),
                   "connection": "close", **({"retry-after": "1"} if exc.status == 429 else {})}
        head = f"HTTP/1.1 {exc.status} {_REASONS.get(exc.status, 'Error')}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        self.transport.write(head.encode() + b"\r\n" + body)
        self.transport.close()


# -- who owns the other end of a loopback TCP connection ------------------------------------------

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NO_COOKIE = 0xFFFFFFFF


class SocketOwner:
    """The uid owning a TCP socket on this host, found by its address pair with one sock_diag query
    (constant time, unlike a scan of /proc/net/tcp); None when it is not local or cannot be asked."""

    def __init__(self) -> None:
        self._sock: socket.socket | None = None
        self._seq = 0

    def __call__(self, peer: Address, local: Address) -> int | None:
        try:
            candidates = _queries(peer, local)
        except ValueError:
            return None
        for family, client, server in candidates:
            uid = self._ask(family, struct.pack("!HH", peer[1], local[1]) + client.ljust(16, b"\0")
                            + server.ljust(16, b"\0") + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE))
            if uid is not None:
                return uid
        return None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _ask(self, family: int, sockid: bytes) -> int | None:
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, _NO_COOKIE) + sockid
        header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, self._seq, 0)
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC,
                                           _NETLINK_SOCK_DIAG)
                self._sock.settimeout(1.0)
            self._sock.send(header + request)
            while True:  # skip a late answer to an earlier question
                reply = self._sock.recv(8192)
                if len(reply) >= 16 and struct.unpack_from("=I", reply, 8)[0] == self._seq:
                    break
        except OSError:
            return None
        if len(reply) < 16 + 72 or struct.unpack_from("=H", reply, 4)[0] != _SOCK_DIAG_BY_FAMILY:
            return None  # NLMSG_ERROR: no such socket on this host
        uid: int = struct.unpack_from("=I", reply, 16 + 4 + 48 + 12)[0]  # inet_diag_msg.idiag_uid
        return uid


def _queries(peer: Address, local: Address) -> list[tuple[int, bytes, bytes]]:
    """(family, client address, server address) to ask about, most likely first."""
    a, b = ipaddress.ip_address(peer[0].split("%")[0]), ipaddress.ip_address(local[0].split("%")[0])
    if a.version != b.version:
        raise ValueError("mixed address families")
    out: list[tuple[int, bytes, bytes]] = []
    if isinstance(a, ipaddress.IPv6Address) and isinstance(b, ipaddress.IPv6Address) and a.ipv4_mapped \
            and b.ipv4_mapped:  # a v4 client of a dual-stack listener usually owns an AF_INET socket
        out.append((socket.AF_INET, a.ipv4_mapped.packed, b.ipv4_mapped.packed))
    out.append((socket.AF_INET if a.version == 4 else socket.AF_INET6, a.packed, b.packed))
    return out
