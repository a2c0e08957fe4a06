"""Process-level kernel controls through ctypes: prctl, capabilities, securebits, rlimits, namespaces,
the session keyring, installing a seccomp filter.

Only ever called in a single-threaded process made for a launch (sentinel/leash/confine.py). Every call checks
its return value and raises OSError.
"""

from __future__ import annotations

import ctypes
import functools
import os
import resource

from sentinel.leash import seccomp

PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 1, 8  # the seccomp() syscall's
CLONE_NEWIPC = 0x08000000
KEYCTL_JOIN_SESSION_KEYRING = 1
EPERM, ENOSYS = 1, 38

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

# A tool root starts without an agent user runs as TOOL_UID_BASE + its launcher's pid (uid and gid):
# a range no distribution or systemd hands out (above the nspawn container range, below 2^31), with
# no passwd entry, so the tool holds no operator's identity (sentinel/leash/mounts.py keeps root's
# workspace working for it).
TOOL_UID_BASE = 0x7C000000
TOOL_UID_SPAN = 1 << 22  # PID_MAX_LIMIT


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


def tool_uid(launcher_pid: int) -> int:
    return TOOL_UID_BASE + launcher_pid


def is_tool_uid(uid: int | None) -> bool:
    return uid is not None and TOOL_UID_BASE <= uid < TOOL_UID_BASE + TOOL_UID_SPAN


def set_pdeathsig(sig: int) -> None:
    prctl(PR_SET_PDEATHSIG, sig)


def set_undumpable() -> bool:
    """No other process of this uid may trace this one or read its memory; whether that now holds."""
    prctl(PR_SET_DUMPABLE, 0)
    return prctl(PR_GET_DUMPABLE) == 0


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


def unshare(flags: int) -> None:
    ctypes.set_errno(0)
    check(libc().unshare(ctypes.c_int(flags)), "unshare")


def join_new_session_keyring() -> None:
    """Join a new, empty, anonymous session keyring (a name would join an existing keyring of that name).
    Without keyrings in the kernel (ENOSYS), or with the keyring syscalls already refused to this process
    and all it starts (EPERM: an outer sandbox's seccomp filter, Docker's or a nested Sentinel's), there
    is nothing to share: that is not an error."""
    ctypes.set_errno(0)
    res = libc().syscall(ctypes.c_long(seccomp.syscall_nr("keyctl")), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING),
                         ctypes.c_void_p(None))
    if res < 0 and ctypes.get_errno() not in (ENOSYS, EPERM):
        check(res, "keyctl(JOIN_SESSION_KEYRING)")


def set_rlimits(limits: dict[str, int]) -> None:
    """Lower soft and hard limits together."""
    for which, value in clamped_rlimits(limits):
        resource.setrlimit(which, (value, value))


# -- seccomp (the filters themselves are in sentinel/leash/seccomp.py) ----------------------------------

class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def seccomp_fprog(program: bytes) -> tuple[ctypes.Array[ctypes.c_char], _SockFprog]:
    """The sock_fprog for `program`, with the buffer it points into (keep both alive)."""
    buf = ctypes.create_string_buffer(program, len(program))
    return buf, _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))


def install_seccomp(program: bytes) -> None:
    """Install a filter (needs no_new_privs first)."""
    buf, fprog = seccomp_fprog(program)
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog))


def install_seccomp_listener(program: bytes) -> int:
    """Install a filter that returns SECCOMP_RET_USER_NOTIF somewhere; the listener fd (close-on-exec)
    through which another process answers those syscalls."""
    buf, fprog = seccomp_fprog(program)
    ctypes.set_errno(0)
    return check(libc().syscall(ctypes.c_long(seccomp.syscall_nr("seccomp")), ctypes.c_uint(SECCOMP_SET_MODE_FILTER),
                                ctypes.c_uint(SECCOMP_FILTER_FLAG_NEW_LISTENER), ctypes.byref(fprog)),
                 "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)")
