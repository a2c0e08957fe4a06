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
                         (open_tree), made read-write (mount_setattr), attached on top of it (move_mount).

The namespace goes away with the last process in it. Needs Linux 5.12 (mount_setattr). Every call
checks its return value.
"""

from __future__ import annotations

import ctypes
import os
import platform

from sentinel.leash import privs

CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
AT_FDCWD = -100
AT_EMPTY_PATH, AT_RECURSIVE = 0x1000, 0x8000
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY = 0x1
_SYSCALLS = {"x86_64": (428, 429, 442), "aarch64": (428, 429, 442)}  # open_tree, move_mount, mount_setattr


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def supported() -> bool:
    return platform.machine() in _SYSCALLS


def readonly_root() -> None:
    """Enter a private mount namespace in which every mount is read-only."""
    _, _, nr_setattr = _SYSCALLS[platform.machine()]
    libc = privs.libc()
    ctypes.set_errno(0)
    privs.check(libc.unshare(ctypes.c_int(CLONE_NEWNS)), "unshare")
    privs.check(libc.mount(None, b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None), "mount --make-rprivate")
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    privs.check(libc.syscall(ctypes.c_long(nr_setattr), ctypes.c_int(AT_FDCWD), b"/", ctypes.c_uint(AT_RECURSIVE),
                        ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))), "mount_setattr")


def bind_writable(dirs: list[str]) -> None:
    """Make each existing directory in `dirs` (and what is mounted beneath it) writable again."""
    nr_open_tree, nr_move_mount, nr_setattr = _SYSCALLS[platform.machine()]
    libc = privs.libc()
    attr = _MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0)
    for path in dirs:
        if not os.path.isdir(path):
            continue  # a file (/dev/null) is written through its device, not its mount; a missing path grants nothing
        raw = os.fsencode(path)
        ctypes.set_errno(0)
        fd = privs.check(libc.syscall(ctypes.c_long(nr_open_tree), ctypes.c_int(AT_FDCWD), raw,
                                 ctypes.c_uint(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)), f"open_tree {path}")
        try:
            privs.check(libc.syscall(ctypes.c_long(nr_setattr), ctypes.c_int(fd), b"",
                                ctypes.c_uint(AT_EMPTY_PATH | AT_RECURSIVE), ctypes.byref(attr),
                                ctypes.c_size_t(ctypes.sizeof(attr))), f"mount_setattr {path}")
            privs.check(libc.syscall(ctypes.c_long(nr_move_mount), ctypes.c_int(fd), b"", ctypes.c_int(AT_FDCWD), raw,
                                ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH)), f"move_mount {path}")
        finally:
            os.close(fd)
