"""The launcher's wire: the frames of sentinel/frames.py (a 4-byte big-endian length, then one JSON
object, depth-bounded) over a unix stream socket, with fds riding on the header; and the
launch child's status pipe (JSON lines)."""

from __future__ import annotations

import array
import json
import os
import socket
from typing import Any, Sequence

from sentinel import frames

MAX_MESSAGE = 64 * 1024 * 1024


# untyped: a Leash wire message (launch spec, keeper answer): JSON whose fields each end checks on read
def send(sock: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    try:
        data = frames.encode(message, MAX_MESSAGE)
    except frames.ProtocolError as exc:
        raise ConnectionError(f"launcher message: {exc}") from None
    if fds:
        sent = socket.send_fds(sock, [data[:frames.HEADER.size]], list(fds))
        if sent != frames.HEADER.size:
            raise ConnectionError("short write on launcher socket")
        data = data[frames.HEADER.size:]
    sock.sendall(data)


def recv_fds(sock: socket.socket, bufsize: int, maxfds: int, flags: int = 0) -> tuple[bytes, list[int]]:
    """Like socket.recv_fds (which ignores its flags argument), with every received fd close-on-exec
    from the start (MSG_CMSG_CLOEXEC): a launched command must never inherit a status pipe or a
    shared Landlock ruleset."""
    fds = array.array("i")
    msg, ancdata, _, _ = sock.recvmsg(bufsize, socket.CMSG_LEN(maxfds * fds.itemsize), flags | socket.MSG_CMSG_CLOEXEC)
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    return msg, list(fds)


# untyped: a Leash wire message from the peer, JSON as frames.parse returns it, checked field by field by its reader
def recv(sock: socket.socket, maxfds: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
    """One message and any fds sent with it; (None, []) on a clean EOF. ConnectionError for anything else
    that is not a whole acceptable frame."""
    if maxfds:
        head, fds = recv_fds(sock, frames.HEADER.size, maxfds)
        if not head:
            return None, fds
        head += frames.exact(sock, frames.HEADER.size - len(head)) or b""
    else:
        head, fds = frames.exact(sock, frames.HEADER.size, allow_eof=True) or b"", []
        if not head:
            return None, fds
    (size,) = frames.HEADER.unpack(head)
    if size > MAX_MESSAGE:
        raise ConnectionError("launcher message too large")
    try:
        return frames.parse(frames.exact(sock, size) or b""), fds
    except frames.BadFrame as exc:
        raise ConnectionError(f"launcher message: {exc}") from None


# untyped: a launch child's status lines, JSON from another process, read field by field by the caller
def read_status(fd: int) -> dict[str, Any]:
    """Read a launch child's status pipe to EOF (JSON lines, merged) and close it."""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    # untyped: as read_status: JSON merged from the child's status lines
    status: dict[str, Any] = {}
    for line in b"".join(chunks).splitlines():
        try:
            status.update(json.loads(line))
        except ValueError:
            pass
    return status
