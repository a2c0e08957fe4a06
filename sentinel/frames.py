"""Frames on the operator socket and worker channels: a 4-byte big-endian length, then one JSON object.

Requests are `{"op": NAME, ...}`. A reply is `{"ok": true, "result": ...}` or
`{"ok": false, "error": "one line", "kind": "usage" | "not_found" | "denied" | "busy" | "error"}`.
Streaming operations send `{"event": {...}}` frames (and `{"started": RUN_ID}`) before their reply;
`show` sends its long lists as `{"part": NAME, "items": [...]}` frames.

Parsing is bounded: a frame is at most MAX_FRAME bytes and nested at most MAX_DEPTH deep, so nothing a
peer sends makes a reader (or a later json.dumps of it) recurse without end. `loads` applies the same
bound to any JSON an untrusted party wrote (an agent's journal lines).
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any, Mapping

from sentinel.errors import SentinelError
from sentinel.jsontypes import JSON, JSONObject

HEADER = struct.Struct("!I")
MAX_FRAME = 16 * 1024 * 1024
MAX_DEPTH = 64

class ProtocolError(Exception):
    """A peer sent something that is not a frame we accept."""


class BadFrame(ProtocolError):
    """A whole frame that is not an acceptable message; the stream itself is still in step."""


# untyped: the journal's readers (engine/records.py, state.py) build dataclasses from it; parse() narrows frames
def loads(text: bytes | str, limit: int = MAX_DEPTH) -> Any:
    """json.loads with a nesting bound; ValueError for anything it refuses. The C decoder stops deep nesting
    by itself (RecursionError); what it builds is then walked without recursion, stopping past `limit`."""
    try:
        value: JSON = json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    opens = text.count(b"[") + text.count(b"{") if isinstance(text, bytes) else text.count("[") + text.count("{")
    if opens > limit and too_deep(value, limit):  # nesting deeper than `limit` takes more brackets than that
        raise ValueError(f"JSON nested deeper than {limit} levels")
    return value


def too_deep(value: JSON, limit: int = MAX_DEPTH) -> bool:
    """True when lists and objects in `value` nest deeper than `limit`."""
    stack: list[tuple[dict[str, JSON] | list[JSON], int]] = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def encode(message: Mapping[str, object], max_frame: int = MAX_FRAME) -> bytes:
    """Anything json.dumps writes, and the rest as its str() (a Path, a status enum)."""
    payload = json.dumps(message, ensure_ascii=False, default=str, separators=(",", ":")).encode()
    if len(payload) > max_frame:
        raise ProtocolError(f"frame too large ({len(payload)} bytes; at most {max_frame})")
    return HEADER.pack(len(payload)) + payload


class Decoder:
    """Incremental decoder for a non-blocking socket: feed bytes, get whole messages (a BadFrame in place of
    a frame that is not an acceptable message). ProtocolError: the stream cannot go on (a frame too large)."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self.buf = bytearray()
        self.max_frame = max_frame

    def feed(self, data: bytes) -> list[JSONObject | BadFrame]:
        self.buf += data
        out: list[JSONObject | BadFrame] = []
        while len(self.buf) >= HEADER.size:
            (size,) = HEADER.unpack_from(self.buf)
            if size > self.max_frame:
                raise ProtocolError(f"frame too large ({size} bytes; at most {self.max_frame})")
            if len(self.buf) < HEADER.size + size:
                break
            payload = bytes(self.buf[HEADER.size:HEADER.size + size])
            del self.buf[:HEADER.size + size]
            try:
                out.append(parse(payload))
            except BadFrame as exc:
                out.append(exc)
        return out


def parse(payload: bytes) -> JSONObject:
    """One frame's payload as a message; BadFrame when it is not a JSON object within the bounds."""
    try:
        message: JSON = loads(payload)
    except ValueError as exc:
        raise BadFrame(f"frame is not acceptable JSON ({exc})") from None
    if not isinstance(message, dict):
        raise BadFrame("frame is not a JSON object")
    return message


def send(sock: socket.socket, message: Mapping[str, object]) -> None:
    sock.sendall(encode(message))


def recv(sock: socket.socket) -> JSONObject | None:
    """One message from a blocking socket; None on a clean end of stream."""
    head = exact(sock, HEADER.size, allow_eof=True)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    if size > MAX_FRAME:
        raise ProtocolError("frame too large")
    return parse(exact(sock, size) or b"")


def exact(sock: socket.socket, n: int, allow_eof: bool = False) -> bytes | None:
    """Exactly `n` bytes from a blocking socket; None on a clean end of stream when `allow_eof`."""
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


def reply(result: object = None) -> dict[str, object]:
    """A handler's answer: `result` is anything `encode` writes."""
    return {"ok": True, "result": result}


# untyped: the worker channel's readers (worker/remote.py) build their dataclasses from these, field by field
def result_object(result: object) -> dict[str, Any]:
    """A reply's result that must be a JSON object: anything else is a broken peer, never a result."""
    if not isinstance(result, dict):
        raise SentinelError(f"the other end answered {type(result).__name__} where an object was due")
    return result


def result_optional(result: object) -> dict[str, Any] | None:  # untyped: as result_object
    return None if result is None else result_object(result)


def result_objects(result: object) -> list[dict[str, Any]]:  # untyped: as result_object
    if not isinstance(result, list):
        raise SentinelError(f"the other end answered {type(result).__name__} where a list was due")
    return [result_object(item) for item in result]


def failure(kind: str, error: str) -> JSONObject:
    return {"ok": False, "kind": kind, "error": error}
