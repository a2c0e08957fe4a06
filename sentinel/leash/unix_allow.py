"""The keeper's decision on each connect() of a tool whose profile allowlists unix sockets (seccomp user notification).

A tool profile refuses every unix socket but a connected pair (sentinel/leash/seccomp.py). When the
agent's Leash policy lists `unix_sockets`, the command may create unix stream sockets, and its
filter sends every connect() to the keeper that launched it, which answers:

    a socket that is not AF_UNIX      continue: the kernel decides (Landlock's TCP port rules). The
                                      family is read from the socket itself (pidfd_getfd, SO_DOMAIN),
                                      never from the command's memory, so it cannot change under us
    a path that resolves to an entry  a child of the keeper, made what the command is (its uid and
                                      gid, no_new_privs, its mount namespace), connects the command's
                                      socket itself, to the *allowlist's* path, and the keeper returns
                                      the result: what the command's memory says after the check
                                      changes nothing (no time-of-check/time-of-use gap)
    anything else                     EACCES: other paths, abstract names, unnamed addresses

The caller is a thread (the notification names its tid): its fd table, memory, working directory
and mount namespace are the ones read. The connect is made without blocking: a server whose
backlog is full answers EAGAIN.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
from collections.abc import Sequence

from sentinel.leash import lsm, privs

NOTIF = struct.Struct("=QIIiIQ6Q")          # struct seccomp_notif: id, pid, flags, seccomp_data
RESP = struct.Struct("=QqiI")               # struct seccomp_notif_resp: id, val, error, flags
IOCTL_RECV, IOCTL_SEND, IOCTL_ID_VALID = 0xC0502100, 0xC0182101, 0x40082102
FLAG_CONTINUE = 1
SYS_PIDFD_GETFD = 438
SUN_PATH_MAX = 108
CLONE_NEWNS = 0x00020000
PR_GET_NO_NEW_PRIVS = 39
PIDFD_THREAD = os.O_EXCL  # Linux 6.9; before it a thread other than the first is refused (EINVAL -> EACCES)


def allowlist(entries: Sequence[str]) -> dict[str, str]:
    """{resolved path: the entry as listed}: a connect is matched on what it resolves to."""
    return {os.path.realpath(entry): entry for entry in entries}


def answer(listener: int, allowed: dict[str, str], uid: int | None, gid: int | None) -> None:
    """Receive one notification from `listener` and answer it. uid/gid: the command's, when the
    keeper runs as another user (root); None: the keeper's own."""
    buf = bytearray(NOTIF.size)
    try:
        fcntl.ioctl(listener, IOCTL_RECV, buf, True)
    except OSError:
        return  # the caller went away (ENOENT) or was interrupted: nothing to answer
    notif_id, pid, _flags, _nr, _arch, _ip, *args = NOTIF.unpack(buf)
    val, err, flags = 0, 0, 0
    try:
        verdict = _decide(listener, notif_id, pid, args, allowed, uid, gid)
        if verdict is None:
            flags = FLAG_CONTINUE
        else:
            err = -verdict if verdict else 0
    except OSError:
        err = -errno.EACCES
    try:
        fcntl.ioctl(listener, IOCTL_SEND, bytearray(RESP.pack(notif_id, val, err, flags)), True)
    except OSError:
        pass  # the caller died or was interrupted meanwhile


def _decide(listener: int, notif_id: int, pid: int, args: list[int], allowed: dict[str, str],
            uid: int | None, gid: int | None) -> int | None:
    """None: let the kernel continue; 0: connected here; an errno otherwise."""
    pidfd = _pidfd(pid)
    try:
        fd = _getfd(pidfd, args[0])
        try:
            _still_valid(listener, notif_id)  # the pid was the caller's when the pidfd was made
            if fd.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN) != socket.AF_UNIX:
                return None
            path = _path(pid, args[1], args[2])
            entry = allowed.get(os.path.realpath(path)) if path else None
            if entry is None:
                return errno.EACCES
            _still_valid(listener, notif_id)
            return _connect(fd, entry, pid, uid, gid)
        finally:
            fd.close()
    finally:
        os.close(pidfd)


def _pidfd(tid: int) -> int:
    """A pidfd of the calling thread (its fd table may be its own). Before Linux 6.9 (no PIDFD_THREAD)
    only a thread-group leader has one: a connect from any other thread is then refused."""
    try:
        return os.pidfd_open(tid, PIDFD_THREAD)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        return os.pidfd_open(tid)


def _getfd(pidfd: int, target_fd: int) -> socket.socket:
    ctypes.set_errno(0)
    fd = privs.check(privs.libc().syscall(ctypes.c_long(SYS_PIDFD_GETFD), ctypes.c_int(pidfd),
                                          ctypes.c_int(target_fd & 0xFFFFFFFF), ctypes.c_uint(0)), "pidfd_getfd")
    os.set_inheritable(fd, False)
    try:
        return socket.socket(fileno=fd)
    except OSError:
        os.close(fd)
        raise OSError(errno.ENOTSOCK, "not a socket") from None


def _still_valid(listener: int, notif_id: int) -> None:
    fcntl.ioctl(listener, IOCTL_ID_VALID, bytearray(struct.pack("=Q", notif_id)), True)


def _path(pid: int, addr: int, length: int) -> str | None:
    """The pathname in the caller's sockaddr_un, absolute (a relative one is taken from its working
    directory); None for an abstract or unnamed address."""
    length = min(length, 2 + SUN_PATH_MAX)
    if length <= 2:
        return None
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
    try:
        raw = os.pread(fd, length, addr)
    finally:
        os.close(fd)
    if len(raw) <= 2 or struct.unpack("=H", raw[:2])[0] != socket.AF_UNIX or raw[2] == 0:
        return None
    name = os.fsdecode(raw[2:].split(b"\0", 1)[0])
    return name if os.path.isabs(name) else os.path.join(os.readlink(f"/proc/{pid}/cwd"), name)


def _connect(sock: socket.socket, entry: str, pid: int, uid: int | None, gid: int | None) -> int:
    """Connect the caller's socket (our duplicate of it) to `entry` from a throwaway child of ours that
    is what the caller is: its uid and gid (the socket file's mode is checked against them, and the
    server's SO_PEERCRED names them), no groups, no_new_privs (the supervisor refuses sandboxed
    peers: the keeper must never be the peer it sees), in its mount namespace (a root launch has its
    own, its writable paths idmapped to its uid). The child's exit status is the errno."""
    flags = fcntl.fcntl(sock.fileno(), fcntl.F_GETFL)
    fcntl.fcntl(sock.fileno(), fcntl.F_SETFL, flags | os.O_NONBLOCK)
    try:
        if _already_the_caller(pid, uid):  # a system-mode worker's keeper: no fork needed
            return _connect_exact(sock, entry)
        child = os.fork()
        if child == 0:
            code = errno.EACCES
            try:
                code = _as_caller(sock, entry, pid, uid, gid)
            finally:
                os._exit(code)
        code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
        return code if code >= 0 else errno.EACCES
    finally:
        fcntl.fcntl(sock.fileno(), fcntl.F_SETFL, flags)


def _already_the_caller(pid: int, uid: int | None) -> bool:
    """Is the keeper itself what the caller is: its uid, no groups, no_new_privs, its mount namespace?"""
    return ((uid is None or uid == os.geteuid()) and not os.getgroups()
            and privs.prctl(PR_GET_NO_NEW_PRIVS) == 1
            and os.stat(f"/proc/{pid}/ns/mnt").st_ino == os.stat("/proc/self/ns/mnt").st_ino)


def _as_caller(sock: socket.socket, entry: str, pid: int, uid: int | None, gid: int | None) -> int:
    theirs = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    if os.fstat(theirs).st_ino != os.stat("/proc/self/ns/mnt").st_ino:
        ctypes.set_errno(0)
        privs.check(privs.libc().setns(ctypes.c_int(theirs), ctypes.c_int(CLONE_NEWNS)), "setns")
    if uid is not None and uid != os.geteuid():
        os.setgroups([])
        os.setresgid(gid if gid is not None else uid, gid if gid is not None else uid, gid if gid is not None else uid)
        os.setresuid(uid, uid, uid)
    privs.set_no_new_privs()
    return _connect_exact(sock, entry)


def _connect_exact(sock: socket.socket, entry: str) -> int:
    """Connect to the socket file `entry` names with no link on the way (lsm.open_exact), through its O_PATH fd:
    entries are real paths (sentinel/leash/links.py `resolve`), so a link put in after the decision, say a
    directory of the agent's replaced by a link to /run, reaches nothing."""
    try:
        fd = lsm.open_exact(entry)
    except OSError as exc:
        return exc.errno or errno.EACCES
    try:
        return sock.connect_ex(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)
