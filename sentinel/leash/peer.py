"""Whether the process on the other end of a unix socket runs inside a sandbox (the supervisor asks).

Every Sentinel sandbox, a tool command or a worker, sets no_new_privs before anything else runs
in it: no process can clear it, and every descendant inherits it. A process holding it is refused
as an operator even when its uid is one (a local-mode run by a member of the operator group runs
its tools as that member): whatever runs inside a sandbox never speaks for a person.

The flag is read from /proc/PID/status while a pidfd (SO_PEERPIDFD, Linux 6.5) holds the peer's
pid, so it cannot be recycled by another process in between; a peer already gone counts as
sandboxed. This refuses processes under any no_new_privs sandbox, not only Sentinel's (a systemd
unit with NoNewPrivileges=yes, bwrap, flatpak): operators talk to the supervisor from outside them.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import struct

SO_PEERPIDFD = 77


def sandboxed(sock: socket.socket) -> bool:
    """True when the peer of `sock` has no_new_privs set, has exited, or cannot be checked."""
    pid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]
    try:
        pidfd = sock.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
    except OSError as exc:
        if exc.errno != errno.ENOPROTOOPT:
            return True  # the peer is gone
        pidfd = None  # before Linux 6.5: the pid alone
    try:
        flag = no_new_privs(pid)
        return flag is not False or (pidfd is not None and not alive(pidfd))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def no_new_privs(pid: int) -> bool | None:
    """The process's no_new_privs flag; None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"NoNewPrivs:"):
                    return line.split()[1] != b"0"
    except OSError:
        pass
    return None


def alive(pidfd: int) -> bool:
    try:
        signal.pidfd_send_signal(pidfd, 0)
        return True
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, and not ours to signal
