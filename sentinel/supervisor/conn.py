"""The supervisor's framed connections: an operator client, an agent-door caller or a worker channel, each a
non-blocking socket the loop (server.py) reads when readable and writes as it drains."""

from __future__ import annotations

import socket
from typing import Mapping, Protocol

from sentinel import frames as protocol
from sentinel.engine.store import Store
from sentinel.jsontypes import JSONObject
from sentinel.supervisor import auth, workers

READ_CHUNK = 1 << 16
STRANGER_FRAME = 64 * 1024  # a peer that is no operator is refused; it may not make us read more than this


class Loop(Protocol):
    """What a connection needs of the loop that owns it."""

    @property
    def store(self) -> Store: ...

    def interest(self, conn: "Conn") -> None: ...

    def forget(self, conn: "Conn") -> None: ...


class Conn:
    """A non-blocking framed connection: an operator client or a worker channel."""

    def __init__(self, sup: Loop, sock: socket.socket, peer: auth.Peer | None = None,
                 worker: workers.Worker | None = None):
        self.sup, self.sock, self.peer, self.worker = sup, sock, peer, worker
        stranger = worker is None and (peer is None or not (peer.operator or peer.agent))
        self.decoder = protocol.Decoder(STRANGER_FRAME if stranger else protocol.MAX_FRAME)
        self.out = bytearray()
        self.closing = False
        self.closed = False
        sock.setblocking(False)

    def send(self, message: Mapping[str, object]) -> None:
        if self.closed:
            return
        try:
            self.out += protocol.encode(message)
        except protocol.ProtocolError as exc:  # a reply that cannot be one frame is a failure, not a crash
            self.sup.store.audit("reply_refused", {"error": str(exc), "run_id": _run_of(message)})
            self.out += protocol.encode(protocol.failure("error", f"the supervisor could not send its reply: {exc}"))
        self.flush()

    def finish(self, message: Mapping[str, object]) -> None:
        """Send a final reply and close once it is written."""
        self.closing = True
        self.send(message)

    def flush(self) -> None:
        try:
            while self.out:
                sent = self.sock.send(self.out)
                del self.out[:sent]
        except BlockingIOError:
            pass
        except OSError:
            return self.close()
        if self.closing and not self.out:
            return self.close()
        self.sup.interest(self)

    def read(self) -> list[JSONObject | protocol.BadFrame] | None:
        """Messages available now (a BadFrame for a frame that is not one); None at end of stream or when
        the stream cannot go on."""
        messages: list[JSONObject | protocol.BadFrame] = []
        while True:
            try:
                data = self.sock.recv(READ_CHUNK)
            except BlockingIOError:
                return messages
            except OSError:
                data = b""
            if not data:
                return messages or None
            try:
                messages += self.decoder.feed(data)
            except protocol.ProtocolError:
                return None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.sup.forget(self)
        self.sock.close()


def _run_of(message: Mapping[str, object]) -> str | None:
    result = message.get("result")
    return result.get("id") if isinstance(result, dict) and isinstance(result.get("id"), str) else None
