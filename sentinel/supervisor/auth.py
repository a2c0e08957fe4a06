"""Who is on the other end of a unix socket (SO_PEERCRED), and whether they are an operator.

Operators are root and members of the operator group (`sentinel`), by primary or supplementary
membership in the group database, outside any sandbox (sentinel/leash/peer.py): a tool never speaks
for an operator, even one running as an operator's uid. The socket's file mode (0660 root:sentinel)
is the first gate; this check is the second, and the one every request passes.
"""

from __future__ import annotations

import grp
import pwd
import socket
import struct
from dataclasses import dataclass

from sentinel.leash import peer


@dataclass(frozen=True)
class Peer:
    pid: int
    uid: int
    gid: int
    name: str
    operator: bool
    sandboxed: bool = False
    door: str = "operator"    # the socket it came through: "operator", or "agent" (agentdoor.py)
    agent: str | None = None  # on the agent door: the registered agent whose own user this is


def peer_of(sock: socket.socket, group: str) -> Peer:
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    name = user_name(uid)
    sandboxed = peer.sandboxed(sock)
    return Peer(pid, uid, gid, name, not sandboxed and is_operator(uid, name, group), sandboxed)


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid:{uid}"


def is_operator(uid: int, name: str, group: str) -> bool:
    if uid == 0:
        return True
    try:
        entry = grp.getgrnam(group)
        primary = pwd.getpwuid(uid).pw_gid
    except KeyError:
        return False
    return primary == entry.gr_gid or name in entry.gr_mem
