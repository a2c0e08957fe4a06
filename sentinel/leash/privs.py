"""Process-level kernel controls through ctypes: prctl, capabilities, securebits, rlimits, seccomp.

Only ever called in the single-threaded launch child (sentinel/leash/child.py). Every call checks
its return value and raises OSError.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import resource
import struct

PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2

# NOROOT, NO_SETUID_FIXUP, KEEP_CAPS and NO_CAP_AMBIENT_RAISE off-or-on and locked: a uid-0 process
# gains no capabilities on execve, keep_caps stays off, ambient capabilities cannot be raised.
SECBIT_NOROOT = 1 << 0
SECBIT_NOROOT_LOCKED = 1 << 1
SECBIT_NO_SETUID_FIXUP_LOCKED = 1 << 3
SECBIT_KEEP_CAPS_LOCKED = 1 << 5
SECBIT_NO_CAP_AMBIENT_RAISE = 1 << 6
SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED = 1 << 7
SECUREBITS = (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED
              | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)


@functools.lru_cache(1)
def libc() -> ctypes.CDLL:
    """The C library, with errno kept for checks (one handle for every ctypes layer in Leash)."""
    return ctypes.CDLL(None, use_errno=True)


def check(res: int, what: str = "") -> int:
    """A libc call's result, or OSError from errno when it failed (`what` prefixes the message)."""
    if res < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}" if what else os.strerror(err))
    return res


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    ctypes.set_errno(0)
    return check(libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3),
                                ctypes.c_ulong(arg4), ctypes.c_ulong(arg5)))


def set_pdeathsig(sig: int) -> None:
    prctl(PR_SET_PDEATHSIG, sig)


def set_child_subreaper() -> None:
    prctl(PR_SET_CHILD_SUBREAPER, 1)


def set_no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)


@functools.lru_cache(1)
def cap_last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except OSError:
        return 40


def lock_securebits() -> None:
    prctl(PR_SET_SECUREBITS, SECUREBITS)


def drop_bounding_set() -> None:
    for cap in range(cap_last_cap() + 1):
        prctl(PR_CAPBSET_DROP, cap)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def clear_capabilities() -> None:
    """Empty the effective, permitted, inheritable and ambient sets of this thread."""
    try:
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass  # kernels without ambient capabilities have none to clear
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    ctypes.set_errno(0)
    check(libc().capset(ctypes.byref(header), ctypes.byref(data)))


def capabilities() -> tuple[int, int, int]:
    """(effective, permitted, inheritable) of this thread, as 64-bit masks."""
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    ctypes.set_errno(0)
    check(libc().capget(ctypes.byref(header), ctypes.byref(data)))
    return tuple(getattr(data[0], f) | (getattr(data[1], f) << 32)
                 for f in ("effective", "permitted", "inheritable"))


def clamped_rlimits(limits: dict[str, int]) -> list[tuple[int, int]]:
    """(resource, value) pairs, each value lowered to the hard limit we hold (never raising one)."""
    out = []
    for name, value in limits.items():
        which = getattr(resource, name)
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        out.append((which, value))
    return out


def set_rlimits(limits: dict[str, int]) -> None:
    """Lower soft and hard limits together."""
    for which, value in clamped_rlimits(limits):
        resource.setrlimit(which, (value, value))


# -- seccomp: deny UDP/raw IP sockets (Landlock cannot) and io_uring (which creates sockets unseen) ----

_ARCH = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425)}  # audit arch, socket, io_uring_setup
# chmod, chown, utime and xattr-set families: Landlock does not cover metadata changes, and a tool
# running as the file owner (uid 0 in local mode as root) could otherwise chmod /etc/shadow.
_METADATA = {"x86_64": (90, 91, 268, 452, 92, 93, 94, 260, 132, 235, 261, 280, 188, 189, 190, 197, 198, 199, 463, 466),
             "aarch64": (52, 53, 452, 54, 55, 88, 5, 6, 7, 14, 15, 16, 463, 466)}
_EPERM = 1
_AF_INET, _AF_INET6, _SOCK_STREAM, _SOCK_TYPE_MASK = 2, 10, 1, 0xF
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_EACCES, _ENOSYS = 13, 38


def seccomp_supported() -> bool:
    return platform.machine() in _ARCH


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


@functools.lru_cache(4)
def seccomp_program(allow_tcp: bool, deny_metadata: bool = False) -> bytes:
    """Classic BPF: socket(AF_INET*, not SOCK_STREAM) -> EACCES (all AF_INET* if not allow_tcp);
    io_uring_setup -> ENOSYS; syscalls of a foreign ABI (i386, x32) -> ENOSYS; with deny_metadata,
    the chmod/chown/utime/setxattr families -> EPERM."""
    arch, nr_socket, nr_uring = _ARCH[platform.machine()]
    ld_w, jeq, jge, ret, alu_and = 0x20, 0x15, 0x35, 0x06, 0x54
    deny_inet = _RET_ERRNO | _EACCES
    prog = [
        _insn(ld_w, 0, 0, 4),                         # 0 arch
        _insn(jeq, 1, 0, arch),                       # 1
        _insn(ret, 0, 0, _RET_ERRNO | _ENOSYS),       # 2 foreign ABI
        _insn(ld_w, 0, 0, 0),                         # 3 nr
        _insn(jge, 0, 1, 0x40000000),                 # 4 x32 syscalls
        _insn(ret, 0, 0, _RET_ERRNO | _ENOSYS),       # 5
        _insn(jeq, 0, 1, nr_uring),                   # 6
        _insn(ret, 0, 0, _RET_ERRNO | _ENOSYS),       # 7
    ]
    for nr in _METADATA[platform.machine()] if deny_metadata else ():
        prog += [_insn(jeq, 0, 1, nr), _insn(ret, 0, 0, _RET_ERRNO | _EPERM)]
    prog += [
        _insn(jeq, 1, 0, nr_socket),                  # 8
        _insn(ret, 0, 0, _RET_ALLOW),                 # 9
        _insn(ld_w, 0, 0, 16),                        # 10 args[0] (domain, low word)
        _insn(jeq, 2, 0, _AF_INET),                   # 11 -> 14
        _insn(jeq, 1, 0, _AF_INET6),                  # 12 -> 14
        _insn(ret, 0, 0, _RET_ALLOW),                 # 13 other families
        _insn(ld_w, 0, 0, 24),                        # 14 args[1] (type, low word)
        _insn(alu_and, 0, 0, _SOCK_TYPE_MASK),        # 15
        _insn(jeq, 0, 1, _SOCK_STREAM),               # 16
        _insn(ret, 0, 0, _RET_ALLOW if allow_tcp else deny_inet),  # 17
        _insn(ret, 0, 0, deny_inet),                  # 18
    ]
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def seccomp_fprog(program: bytes) -> tuple[ctypes.Array, _SockFprog]:
    """The sock_fprog for `program`, with the buffer it points into (keep both alive)."""
    buf = ctypes.create_string_buffer(program, len(program))
    return buf, _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))


def install_seccomp(program: bytes) -> None:
    """Install a filter (needs no_new_privs first)."""
    buf, fprog = seccomp_fprog(program)
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog))
