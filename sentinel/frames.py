"""Frames on the operator socket and worker channels: a 4-byte big-endian length, then one JSON object.

Requests are `{"op": NAME, ...}`. A reply is `{"ok": true, "result": ...}` or
`{"ok": false, "error": "one line", "kind": "usage" | "not_found" | "denied" | "busy" | "error"}`.
Streaming operations send `{"event": {...}}` frames (and `{"started": RUN_ID}`) before their reply.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

HEADER = struct.Struct("!I")
MAX_FRAME = 16 * 1024 * 1024


class ProtocolError(Exception):
    """A peer sent something that is not a frame we accept."""


def encode(message: dict[str, Any]) -> bytes:
    payload = json.dumps(message, ensure_ascii=False, default=str, separators=(",", ":")).encode()
    if len(payload) > MAX_FRAME:
        raise ProtocolError("frame too large")
    return HEADER.pack(len(payload)) + payload


class Decoder:
    """Incremental decoder for a non-blocking socket: feed bytes, get whole messages."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self.buf += data
        out = []
        while len(self.buf) >= HEADER.size:
            (size,) = HEADER.unpack_from(self.buf)
            if size > MAX_FRAME:
                raise ProtocolError("frame too large")
            if len(self.buf) < HEADER.size + size:
                break
            payload = bytes(self.buf[HEADER.size:HEADER.size + size])
            del self.buf[:HEADER.size + size]
            out.append(_parse(payload))
        return out


def _parse(payload: bytes) -> dict[str, Any]:
    try:
        message = json.loads(payload)
    except ValueError:
        raise ProtocolError("frame is not JSON") from None
    if not isinstance(message, dict):
        raise ProtocolError("frame is not a JSON object")
    return message


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(encode(message))


def recv(sock: socket.socket) -> dict[str, Any] | None:
    """One message from a blocking socket; None on a clean end of stream."""
    head = _exact(sock, HEADER.size, allow_eof=True)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    if size > MAX_FRAME:
        raise ProtocolError("frame too large")
    return _parse(_exact(sock, size) or b"")


def _exact(sock: socket.socket, n: int, allow_eof: bool = False) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            if allow_eof and got == 0:
                return None
            raise ConnectionError("connection closed mid-frame")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def reply(result: Any = None) -> dict[str, Any]:
    return {"ok": True, "result": result}


def failure(kind: str, error: str) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "error": error}
