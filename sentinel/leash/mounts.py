"""A read-only view of the whole filesystem with the writable paths bound back read-write (mount namespace).

Landlock does not govern metadata changes (chmod, chown, utime, xattrs), so a tool could otherwise
change the modes or times of any file its uid owns outside the workspace (in system mode: the
agent's own `~/.sentinel`). A read-only mount refuses every change, content or metadata, with
EROFS. Only a process holding CAP_SYS_ADMIN (the root launch child, before it drops privileges)
can do this, so it applies when the launcher runs as root:

    readonly_root()      unshare(CLONE_NEWNS); make every mount private (nothing propagates back to
                         the host); mount_setattr(/, AT_RECURSIVE, RDONLY). Request-independent: the
                         pre-forked launch child does it while it waits.
    bind_writable(dirs)  per request: for each writable directory, a detached recursive clone of it
                         (open_tree), made read-write (mount_setattr), attached on top of it (move_mount);
                         each opened with no link on the way, as the Landlock rules are.

A tool root starts without an agent user runs as an unprivileged uid of its own (privs.tool_uid),
never as root, yet must work in root's workspace as root would. Its writable trees are then
*idmapped* through a user namespace mapping root to that uid (idmap_userns): files root owns
appear as the tool's, and files the tool creates are stored as root's. Root-only ancestors of the
paths it uses (`/root` above `/root/.sentinel/workspace`) are idmapped the same way, read-only,
so it can reach them; Landlock still decides what it may read there.

The namespace goes away with the last process in it. Needs Linux 5.12 (mount_setattr), and for
idmapping a filesystem that supports it (ext4, xfs, btrfs, tmpfs, ...). Every call checks its
return value.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket
import stat
from collections.abc import Sequence

from sentinel.leash import lsm, privs

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
AT_FDCWD = -100
AT_EMPTY_PATH, AT_RECURSIVE = 0x1000, 0x8000
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
MOVE_MOUNT_F_EMPTY_PATH, MOVE_MOUNT_T_EMPTY_PATH = 0x4, 0x40
MOUNT_ATTR_RDONLY, MOUNT_ATTR_IDMAP = 0x1, 0x00100000
_SYSCALLS = {"x86_64": (428, 429, 442), "aarch64": (428, 429, 442)}  # open_tree, move_mount, mount_setattr


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def supported() -> bool:
    return platform.machine() in _SYSCALLS


def readonly_root() -> None:
    """Enter a private mount namespace in which every mount is read-only."""
    libc = privs.libc()
    privs.unshare(CLONE_NEWNS)
    privs.check(libc.mount(None, b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None), "mount --make-rprivate")
    _setattr(AT_FDCWD, b"/", AT_RECURSIVE, _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0), "mount_setattr /")


def bind_writable(dirs: list[str], idmap_fd: int | None = None, expose: Sequence[str] = ()) -> None:
    """Make each existing directory in `dirs` (and what is mounted beneath it) writable again; with
    `idmap_fd`, idmapped, and each of `expose` reachable (read-only, idmapped). Trees are cloned
    before any ancestor is exposed, so each is a clone of the real mount, never of an idmapped one."""
    trees = []
    try:
        for path in dirs:
            fd = _clone(path, _MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0), idmap_fd, directory=True)
            if fd is not None:  # a file (/dev/null) is written through its device; a missing path grants nothing
                trees.append((path, fd))
        if idmap_fd is not None:
            for path in expose:
                if (fd := _clone(path, _MountAttr(0, 0, 0, 0), idmap_fd)) is not None:
                    try:
                        _move(fd, path)
                    finally:
                        os.close(fd)
        for path, fd in trees:
            _move(fd, path)
    finally:
        for _, fd in trees:
            os.close(fd)


def _exact(path: str) -> int | None:
    """`path` opened with no link on the way (lsm.open_exact): paths here are real (sentinel/leash/links.py), so a
    link put in since, by a process racing the launch, is neither cloned nor mounted on (None: grants nothing,
    as its Landlock rule does)."""
    try:
        return lsm.open_exact(path)
    except OSError:
        return None


def _clone(path: str, attr: _MountAttr, idmap_fd: int | None, directory: bool = False) -> int | None:
    """A detached copy of the mounts at and beneath `path` with `attr` applied; idmapped with `idmap_fd`,
    and then, if a mount beneath it cannot be idmapped, of `path`'s own mount only. None when `path` is
    missing, reached through a link, or (`directory`) no directory."""
    at = _exact(path)
    if at is None:
        return None
    try:
        if directory and not stat.S_ISDIR(os.fstat(at).st_mode):
            return None
        return _clone_at(at, path, attr, idmap_fd)
    finally:
        os.close(at)


def _clone_at(at: int, path: str, attr: _MountAttr, idmap_fd: int | None) -> int:
    if idmap_fd is not None:
        attr.attr_set |= MOUNT_ATTR_IDMAP
        attr.userns_fd = idmap_fd
    for flags in (AT_RECURSIVE, 0) if idmap_fd is not None else (AT_RECURSIVE,):
        fd = _open_tree(at, path, flags)
        try:
            _setattr(fd, b"", AT_EMPTY_PATH | flags, attr, f"mount_setattr {path}")
            return fd
        except OSError as exc:
            os.close(fd)
            if exc.errno != errno.EINVAL or not flags:
                raise
    raise AssertionError("unreachable")


def _open_tree(at: int, path: str, recursive: int) -> int:
    nr_open_tree = _SYSCALLS[platform.machine()][0]
    ctypes.set_errno(0)
    return privs.check(privs.libc().syscall(ctypes.c_long(nr_open_tree), ctypes.c_int(at), b"",
                                            ctypes.c_uint(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH
                                                          | recursive)),
                       f"open_tree {path}")


def _setattr(dirfd: int, path: bytes, flags: int, attr: _MountAttr, what: str) -> None:
    nr_setattr = _SYSCALLS[platform.machine()][2]
    ctypes.set_errno(0)
    privs.check(privs.libc().syscall(ctypes.c_long(nr_setattr), ctypes.c_int(dirfd), path, ctypes.c_uint(flags),
                                     ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))), what)


def _move(fd: int, path: str) -> None:
    """Attach the tree on top of `path`, opened now (a tree moved earlier may cover part of it) with no link."""
    to = _exact(path)
    if to is None:
        return
    nr_move_mount = _SYSCALLS[platform.machine()][1]
    try:
        ctypes.set_errno(0)
        privs.check(privs.libc().syscall(ctypes.c_long(nr_move_mount), ctypes.c_int(fd), b"", ctypes.c_int(to), b"",
                                         ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH)),
                    f"move_mount {path}")
    finally:
        os.close(to)


def idmap_userns(uid: int, gid: int) -> int:
    """An fd (close-on-exec) for a new user namespace mapping root to `uid`/`gid`, for idmapped mounts.
    A helper child unshares it and waits while we write its maps (only a process outside it may), then
    exits; the namespace lives on through the fd. Call from a single-threaded process."""
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            privs.unshare(CLONE_NEWUSER)
            theirs.send(b"u")
            theirs.recv(1)
        finally:
            os._exit(0)
    theirs.close()
    try:
        if ours.recv(1) != b"u":
            raise OSError(errno.EPERM, "unshare(CLONE_NEWUSER) failed")
        for name, ident in (("uid_map", uid), ("gid_map", gid)):
            with open(f"/proc/{pid}/{name}", "w") as f:
                f.write(f"0 {ident} 1\n")
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        ours.close()
        os.waitpid(pid, 0)


def root_only_ancestors(paths: list[str]) -> list[str]:
    """The topmost ancestor of each path that only root's uid or gid may search (`/root`), once each:
    what a tool running as another uid must have exposed to reach those paths."""
    found: list[str] = []
    for path in paths:
        parts = os.path.normpath(path).split(os.sep)[1:-1]
        current = ""
        for part in parts:
            current += os.sep + part
            if any(current == f or current.startswith(f + os.sep) for f in found):
                break
            try:
                st = os.stat(current)
            except OSError:
                break
            if _root_only(st):
                found.append(current)
                break
    return found


def _root_only(st: os.stat_result) -> bool:
    mode = st.st_mode
    return (stat.S_ISDIR(mode) and not mode & stat.S_IXOTH
            and (st.st_uid == 0 and bool(mode & stat.S_IXUSR) or st.st_gid == 0 and bool(mode & stat.S_IXGRP)))
