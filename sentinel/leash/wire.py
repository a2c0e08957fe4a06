"""The launcher's wire format: length-prefixed JSON over a unix stream socket, fds riding on the first byte."""

from __future__ import annotations

import array
import json
import os
import socket
import struct
from typing import Any, Sequence

MAX_MESSAGE = 64 * 1024 * 1024


def send(sock: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    payload = json.dumps(message).encode()
    data = struct.pack("!I", len(payload)) + payload
    if fds:
        sent = socket.send_fds(sock, [data[:4]], list(fds))
        if sent != 4:
            raise ConnectionError("short write on launcher socket")
        data = data[4:]
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


def recv(sock: socket.socket, maxfds: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
    """One message and any fds sent with it; (None, []) on a clean EOF."""
    if maxfds:
        head, fds = recv_fds(sock, 4, maxfds)
    else:
        head, fds = sock.recv(4), []
    if not head:
        return None, fds
    head += _exact(sock, 4 - len(head))
    (size,) = struct.unpack("!I", head)
    if size > MAX_MESSAGE:
        raise ConnectionError("launcher message too large")
    return json.loads(_exact(sock, size)), fds


def _exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("launcher socket closed mid-message")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_status(fd: int) -> dict[str, Any]:
    """Read a launch child's status pipe to EOF (JSON lines, merged) and close it."""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    status: dict[str, Any] = {}
    for line in b"".join(chunks).splitlines():
        try:
            status.update(json.loads(line))
        except ValueError:
            pass
    return status
