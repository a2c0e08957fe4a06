"""The seccomp filters: what a sandboxed process may ask of the kernel beyond what Landlock governs.

Classic BPF, built from a handful of rules by a small assembler (forward jumps to named labels).
Both profiles refuse foreign ABIs (i386, x32) and io_uring (which creates sockets unseen), and
allow sockets by family and protocol number only:

    AF_UNIX                  socketpair(SOCK_STREAM or SOCK_SEQPACKET) only: a pair is connected at
                             birth and can never connect again (EISCONN), so it reaches no one
                             outside. socket(AF_UNIX) and datagram pairs (which can connect or
                             sendto any path) are EACCES: a confined process reaches no pathname
                             or abstract socket, docker.sock, D-Bus, X11, ssh-agent, tmux. A tool
                             profile with an allowlist of sockets (`unix_sockets`) may create
                             stream and seqpacket sockets, and each connect() is then decided by
                             its keeper (SECCOMP_RET_USER_NOTIF: sentinel/leash/unix_allow.py)
    AF_INET, AF_INET6        SOCK_STREAM with protocol 0 or IPPROTO_TCP, and only with network
                             (Landlock's TCP rules do not cover MPTCP or SCTP: EPROTONOSUPPORT,
                             so programs fall back to TCP); nothing else (UDP, raw): EACCES
    AF_NETLINK               NETLINK_ROUTE only (getaddrinfo, `ip`), read-only without capabilities
    every other family       EAFNOSUPPORT (vsock to the host, SMC, TIPC, packet, alg, ...)

The tool profile adds:

    listen                   EACCES when the tool has network: Landlock refuses TCP bind, but
                             listen() on an unbound socket binds an ephemeral port without asking.
                             BPF cannot see an fd's family, so with network no socket listens;
                             without network no TCP socket can exist and unix servers work.
    keyctl, add_key,         EPERM: the kernel keyring is per uid, not per sandbox (each launch
    request_key              also runs in its own session keyring)
    SysV IPC, POSIX mqueues  EPERM, unless the launch has its own IPC namespace (as root)
    pid-taking syscalls      only the caller itself: a filter cannot know the caller's pid, so it
                             allows only the pid argument 0, which these syscalls read as "self":
                             prlimit64, sched_set{param,scheduler,affinity,attr}, migrate_pages,
                             move_pages -> EPERM otherwise; setpriority and ioprio_set only for
                             (process or process group, 0). Syscalls that act on another process
                             and have no "self" pid (kcmp, process_vm_*, pidfd_getfd,
                             process_madvise, process_mrelease) -> ENOSYS, read by programs as an
                             older kernel. pidfd_open stays: a pidfd only names a process, and what
                             can act through one is refused here or by Landlock (signals, ptrace);
                             launchers, asyncio and Go wait on their own children with it.

Only the syscalls named here load an argument, so the kernel's per-syscall cache keeps every
other syscall free of filter cost.
"""

from __future__ import annotations

import functools
import platform
import struct

NR = {
    "x86_64": {"socket": 41, "socketpair": 53, "listen": 50, "connect": 42, "seccomp": 317, "io_uring_setup": 425,
               "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66, "semtimedop": 220,
               "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "mq_open": 240, "mq_unlink": 241,
               "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
               "add_key": 248, "request_key": 249, "keyctl": 250,
               "prlimit64": 302, "sched_setparam": 142, "sched_setscheduler": 144, "sched_setaffinity": 203,
               "sched_setattr": 314, "migrate_pages": 256, "move_pages": 279, "setpriority": 141, "ioprio_set": 251,
               "kcmp": 312, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
               "process_madvise": 440, "process_mrelease": 448},
    "aarch64": {"socket": 198, "socketpair": 199, "listen": 201, "connect": 203, "seccomp": 277, "io_uring_setup": 425,
                "shmget": 194, "shmat": 196, "shmctl": 195, "semget": 190, "semop": 193, "semctl": 191,
                "semtimedop": 192, "msgget": 186, "msgsnd": 189, "msgrcv": 188, "msgctl": 187, "mq_open": 180,
                "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184, "mq_getsetattr": 185,
                "add_key": 217, "request_key": 218, "keyctl": 219,
                "prlimit64": 261, "sched_setparam": 118, "sched_setscheduler": 119, "sched_setaffinity": 122,
                "sched_setattr": 274, "migrate_pages": 238, "move_pages": 239, "setpriority": 140, "ioprio_set": 30,
                "kcmp": 272, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438,
                "process_madvise": 440, "process_mrelease": 448},
}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

IPC = ("shmget", "shmat", "shmctl", "semget", "semop", "semctl", "semtimedop", "msgget", "msgsnd", "msgrcv", "msgctl",
       "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr")
KEYRING = ("add_key", "request_key", "keyctl")
SELF_PID = ("prlimit64", "sched_setparam", "sched_setscheduler", "sched_setaffinity", "sched_setattr",
            "migrate_pages", "move_pages")
NO_SELF = ("kcmp", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "process_mrelease")

AF_UNIX, AF_INET, AF_NETLINK, AF_INET6 = 1, 2, 16, 10
SOCK_STREAM, SOCK_TYPE_MASK = 1, 0xF
IPPROTO_TCP, NETLINK_ROUTE = 6, 0
PRIO_PROCESS, PRIO_PGRP = 0, 1
IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP = 1, 2
EPERM, EACCES, ENOSYS, EPROTONOSUPPORT, EAFNOSUPPORT = 1, 13, 38, 93, 97

SOCK_SEQPACKET = 5
_RET_ALLOW, _RET_ERRNO, _RET_USER_NOTIF = 0x7FFF0000, 0x00050000, 0x7FC00000
_LD_W, _JEQ, _JGE, _AND, _RET = 0x20, 0x15, 0x35, 0x54, 0x06
_NR, _ARCH = 0, 4


def _arg(n: int) -> int:
    """Offset of the low 32 bits of argument n in struct seccomp_data (every argument checked here is an int)."""
    return 16 + 8 * n


def supported() -> bool:
    return platform.machine() in NR


def syscall_nr(name: str) -> int:
    return NR[platform.machine()][name]


class _Asm:
    """Classic BPF with named forward-jump targets; `code()` resolves them."""

    def __init__(self) -> None:
        self.insns: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def op(self, code: int, k: int = 0, jt: int | str = 0, jf: int | str = 0) -> None:
        self.insns.append((code, jt, jf, k))

    def load(self, offset: int) -> None:
        self.op(_LD_W, offset)

    def jump_if(self, value: int, target: str) -> None:
        self.op(_JEQ, value, jt=target)

    def ret(self, action: int) -> None:
        self.op(_RET, action)

    def label(self, name: str) -> None:
        self.labels[name] = len(self.insns)

    def code(self) -> bytes:
        out = []
        for pos, (code, jt, jf, k) in enumerate(self.insns):
            out.append(struct.pack("=HBBI", code, self._offset(pos, jt), self._offset(pos, jf), k & 0xFFFFFFFF))
        return b"".join(out)

    def _offset(self, pos: int, target: int | str) -> int:
        if isinstance(target, int):
            return target
        offset = self.labels[target] - pos - 1
        if not 0 <= offset <= 255:
            raise ValueError(f"seccomp: jump to {target} out of range")
        return offset


def _errno(err: int) -> int:
    return _RET_ERRNO | err


@functools.lru_cache(8)
def program(allow_tcp: bool, tool: bool = False, private_ipc: bool = False, unix: bool = False) -> bytes:
    """The filter for a worker (tool=False) or a tool command; see the module docstring. `unix`: the
    process may create unix stream sockets; a tool's every connect() then goes to its keeper to be
    decided (a worker's tools need the worker's filter to let them create one: filters stack)."""
    machine = platform.machine()
    nr = NR[machine]
    a = _Asm()
    a.load(_ARCH)
    a.op(_JEQ, AUDIT_ARCH[machine], jt=1)
    a.ret(_errno(ENOSYS))                       # a foreign ABI (i386 on x86_64)
    a.load(_NR)
    a.op(_JGE, 0x40000000, jt="enosys")         # x32
    a.jump_if(nr["io_uring_setup"], "enosys")
    a.jump_if(nr["socket"], "socket")
    a.jump_if(nr["socketpair"], "socketpair")
    if unix and tool:
        a.jump_if(nr["connect"], "notify")
    if tool:
        if allow_tcp:
            a.jump_if(nr["listen"], "eacces")
        for name in KEYRING + (() if private_ipc else IPC):
            a.jump_if(nr[name], "eperm")
        for name in SELF_PID:
            a.jump_if(nr[name], "self_pid")
        for name in NO_SELF:
            a.jump_if(nr[name], "enosys")
        a.jump_if(nr["setpriority"], "setpriority")
        a.jump_if(nr["ioprio_set"], "ioprio_set")
    a.ret(_RET_ALLOW)
    _socket_rules(a, allow_tcp, unix)
    if tool:
        _self_rules(a)
    for name, action in (("allow", _RET_ALLOW), ("eperm", _errno(EPERM)), ("eacces", _errno(EACCES)),
                         ("enosys", _errno(ENOSYS)), ("eprotonosupport", _errno(EPROTONOSUPPORT)),
                         ("notify", _RET_USER_NOTIF)):
        a.label(name)
        a.ret(action)
    return a.code()


def _socket_rules(a: _Asm, allow_tcp: bool, unix: bool) -> None:
    a.label("socketpair")                       # socketpair(domain, type, protocol, sv)
    a.load(_arg(0))
    a.op(_JEQ, AF_UNIX, jt="unix_stream", jf="family")
    a.label("socket")                           # socket(domain, type, protocol)
    a.load(_arg(0))
    a.jump_if(AF_UNIX, "unix_stream" if unix else "eacces")
    a.label("family")
    a.jump_if(AF_INET, "inet")
    a.jump_if(AF_INET6, "inet")
    a.jump_if(AF_NETLINK, "netlink")
    a.ret(_errno(EAFNOSUPPORT))
    a.label("inet")
    if allow_tcp:
        a.load(_arg(1))
        a.op(_AND, SOCK_TYPE_MASK)
        a.op(_JEQ, SOCK_STREAM, jf="eacces")
        a.load(_arg(2))
        a.jump_if(0, "allow")
        a.jump_if(IPPROTO_TCP, "allow")
        a.ret(_errno(EPROTONOSUPPORT))
    else:
        a.ret(_errno(EACCES))
    a.label("netlink")
    a.load(_arg(2))
    a.op(_JEQ, NETLINK_ROUTE, jt="allow", jf="eprotonosupport")
    a.label("unix_stream")                      # a type that never sends to an address: stream, seqpacket
    a.load(_arg(1))
    a.op(_AND, SOCK_TYPE_MASK)
    a.jump_if(SOCK_STREAM, "allow")
    a.op(_JEQ, SOCK_SEQPACKET, jt="allow", jf="eacces")


def _self_rules(a: _Asm) -> None:
    a.label("self_pid")                         # pid (argument 0) must be 0: the caller itself
    a.load(_arg(0))
    a.op(_JEQ, 0, jt="allow", jf="eperm")
    a.label("setpriority")                      # setpriority(which, who, prio)
    a.load(_arg(0))
    a.jump_if(PRIO_PROCESS, "who_is_self")
    a.jump_if(PRIO_PGRP, "who_is_self")
    a.ret(_errno(EPERM))                        # PRIO_USER: every process of the uid
    a.label("ioprio_set")                       # ioprio_set(which, who, ioprio)
    a.load(_arg(0))
    a.jump_if(IOPRIO_WHO_PROCESS, "who_is_self")
    a.jump_if(IOPRIO_WHO_PGRP, "who_is_self")
    a.ret(_errno(EPERM))                        # IOPRIO_WHO_USER
    a.label("who_is_self")
    a.load(_arg(1))
    a.op(_JEQ, 0, jt="allow", jf="eperm")
