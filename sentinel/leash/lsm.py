"""Landlock through a small ctypes layer: ABI probe, rulesets with filesystem, TCP port and scope rules.

Filesystem access flags come from the `landlock` package (`FSAccess`); the syscalls are ours because
the package's ruleset attribute lacks the network and scope fields (ABI 4 and 6) and its error check
reads errno instead of the return value. Every call here checks the return value itself.

    ABI 1  filesystem          ABI 4  TCP bind/connect port rules
    ABI 2  REFER (link/rename)  ABI 5  IOCTL_DEV
    ABI 3  TRUNCATE            ABI 6  scope: abstract unix sockets, signals
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import stat
from dataclasses import dataclass, field

from landlock import FSAccess  # type: ignore[import-untyped]

from sentinel.leash import privs

SYS_OPENAT2 = 437
SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2
NET_BIND_TCP = 1
NET_CONNECT_TCP = 2
SCOPE_ABSTRACT_UNIX_SOCKET = 1
SCOPE_SIGNAL = 2

FILE_ONLY = FSAccess.EXECUTE | FSAccess.WRITE_FILE | FSAccess.READ_FILE | FSAccess.TRUNCATE | FSAccess.IOCTL_DEV
READ = FSAccess.READ_FILE | FSAccess.READ_DIR | FSAccess.EXECUTE


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPort(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


AT_FDCWD = -100
RESOLVE_NO_SYMLINKS = 0x04


class LandlockError(OSError):
    pass


def _syscall(nr: int, *args: object) -> int:  # ctypes converts each argument itself
    ctypes.set_errno(0)
    res: int = privs.libc().syscall(ctypes.c_long(nr), *args)
    if res < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, os.strerror(err))
    return res


@functools.lru_cache(1)
def abi_version() -> int:
    """The running kernel's Landlock ABI; 0 when Landlock is absent or disabled."""
    if platform.system() != "Linux":
        return 0
    try:
        return _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError:
        return 0


def fs_rights(abi: int) -> int:
    rights = int(FSAccess.EXECUTE | FSAccess.WRITE_FILE | FSAccess.READ_FILE | FSAccess.READ_DIR
                 | FSAccess.REMOVE_DIR | FSAccess.REMOVE_FILE | FSAccess.MAKE_CHAR | FSAccess.MAKE_DIR
                 | FSAccess.MAKE_REG | FSAccess.MAKE_SOCK | FSAccess.MAKE_FIFO | FSAccess.MAKE_BLOCK | FSAccess.MAKE_SYM)
    if abi >= 2:
        rights |= FSAccess.REFER
    if abi >= 3:
        rights |= FSAccess.TRUNCATE
    if abi >= 5:
        rights |= FSAccess.IOCTL_DEV
    return rights


@dataclass
class RulesetSpec:
    """What a Landlock domain allows. Paths not listed (and not beneath one listed) are denied."""

    read: list[str] = field(default_factory=list)
    write: list[str] = field(default_factory=list)
    tcp_connect: list[int] = field(default_factory=list)
    restrict_tcp: bool = True
    scope: bool = True


@dataclass
class Built:
    fd: int
    applied: list[str]
    missing: list[str]


def build(spec: RulesetSpec, abi: int | None = None) -> Built:
    """Create the ruleset fd (paths are opened now, by the caller's uid, and must be real: `open_exact`). Missing
    layers are listed."""
    abi = abi_version() if abi is None else abi
    if abi < 1:
        raise LandlockError(0, "Landlock is not available in this kernel")
    handled_fs = fs_rights(abi)
    applied, missing = ["landlock-fs"], []
    attr = _RulesetAttr(handled_fs, 0, 0)
    size = 8
    if spec.restrict_tcp:
        if abi >= 4:
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
            size = 16
            applied.append("landlock-tcp")
        else:
            missing.append("landlock-tcp")
    if spec.scope:
        if abi >= 6:
            attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
            size = 24
            applied.append("landlock-scope")
        else:
            missing.append("landlock-scope")
    fd = _syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        _add_paths(fd, spec.read, READ, handled_fs)
        _add_paths(fd, spec.write, handled_fs, handled_fs)
        if attr.handled_access_net:
            for port in spec.tcp_connect:
                rule = _NetPort(NET_CONNECT_TCP, port)
                _syscall(SYS_ADD_RULE, ctypes.c_int(fd), ctypes.c_int(RULE_NET_PORT), ctypes.byref(rule),
                         ctypes.c_uint32(0))
    except BaseException:
        os.close(fd)
        raise
    return Built(fd, applied, missing)


def open_exact(path: str) -> int:
    """An O_PATH fd for `path` if no component of it is a link (openat2 RESOLVE_NO_SYMLINKS); OSError otherwise.
    Profiles resolve their paths first (sentinel/leash/links.py `resolve`), so a link found here was put in
    after: by an agent racing the launch, for instance. It grants nothing."""
    how = _OpenHow(os.O_PATH | os.O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS)
    return _syscall(SYS_OPENAT2, ctypes.c_int(AT_FDCWD), os.fsencode(path), ctypes.byref(how),
                    ctypes.c_size_t(ctypes.sizeof(how)))


def _add_paths(ruleset_fd: int, paths: list[str], rights: int, handled: int) -> None:
    for path in paths:
        try:
            fd = open_exact(path)
        except OSError:
            continue  # a path that does not exist, or is reached through a link, grants nothing
        try:
            allowed = rights & handled
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                allowed &= FILE_ONLY
            rule = _PathBeneath(allowed, fd)
            _syscall(SYS_ADD_RULE, ctypes.c_int(ruleset_fd), ctypes.c_int(RULE_PATH_BENEATH),
                     ctypes.byref(rule), ctypes.c_uint32(0))
        finally:
            os.close(fd)


def restrict_self(ruleset_fd: int) -> None:
    """Enforce the ruleset on this thread (and everything it executes). Needs no_new_privs or CAP_SYS_ADMIN."""
    _syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0))
