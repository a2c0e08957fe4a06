"""The launcher process: single-threaded, forked before the caller starts threads, reused for every launch.

Each message on its SOCK_SEQPACKET control socket carries one unix stream socket (SCM_RIGHTS) for
one request. The message is taken straight off the shared socket by a ready keeper
(sentinel/leash/launch_keeper.py), a long-lived fork of this process that serves one launch at a time.
The launcher keeps the pool: SPARES keepers from the start (replaced if one leaves), and one more
whenever every keeper is busy, so concurrent launches never wait for each other; those extra
keepers leave after EXTRA_IDLE_S without a request. No interpreter start, fork or cgroup creation
is paid per launch. The launcher exits when the caller closes the control socket or dies
(pdeathsig), and its keepers with it, each killing the tree it runs first (launch_keeper.Orphaned).

The caller starts it once, early, as `python -m sentinel.leash.launcher FD PARENT_PID`: a fresh
small interpreter rather than a copy of the caller, because every fork and execve costs in
proportion to the forking process's address space (a copy of a 100 MB CLI doubles launch time),
and because the caller may already run threads.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
from dataclasses import dataclass

from sentinel.leash import cgroups, launch_keeper, lsm, privs, seccomp

SPARES = 2  # two, so the keeper that just served has time to fork its next launch child
EXTRA_IDLE_S = 60.0


def serve(ctl: socket.socket, parent: int) -> None:
    """Run the launcher loop in this (fresh, single-threaded) process. Never returns."""
    try:
        _setup(ctl, parent)
        Pool(ctl).run()
    finally:
        os._exit(0)


def _setup(ctl: socket.socket, parent: int) -> None:
    try:
        os.setsid()  # terminal signals (Ctrl-C) go to the caller, who then hangs up on its keeper
    except OSError:
        pass  # already a session leader
    privs.set_pdeathsig(signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    keep = ctl.fileno()
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 20)
    lsm.abi_version()  # warm the caches every keeper inherits
    if seccomp.supported():
        for allow_tcp in (False, True):
            for private_ipc in (False, True):
                for unix in (False, True):  # the very call confine.seccomp_program makes (lru_cache keys on it)
                    seccomp.program(allow_tcp, tool=True, private_ipc=private_ipc, unix=unix)
    cgroups.detect()
    cgroups.sweep()  # groups of launchers killed with their callers
    if os.geteuid() == 0:
        launch_keeper.ToolIdentity.prepare(os.getpid())


@dataclass
class _LaunchKeeper:
    pidfd: int
    core: bool        # one of the SPARES: never leaves for idleness, replaced when it leaves
    busy: bool = False  # serving a launch or leaving; a keeper still getting ready counts as free


class Pool:
    """The keepers and what each last said (ready, taken, leaving); pidfds catch any that die."""

    def __init__(self, ctl: socket.socket):
        self.ctl = ctl
        self.notes_r, self.notes_w = os.pipe2(os.O_CLOEXEC)
        self.keepers: dict[int, _LaunchKeeper] = {}
        self.poller = select.poll()
        self.poller.register(self.notes_r, select.POLLIN)
        self.poller.register(ctl.fileno(), 0)  # POLLHUP only: the caller closed the control socket
        self.by_fd: dict[int, int] = {}

    def run(self) -> None:
        for _ in range(SPARES):
            self._fork(core=True)
        while True:
            for fd, _ev in self.poller.poll():
                if fd == self.ctl.fileno():
                    return
                if fd == self.notes_r:
                    if not self._read_notes():
                        return
                else:
                    self._reap(self.by_fd[fd])
            if all(k.busy for k in self.keepers.values()):
                self._fork(core=False)  # every keeper is busy: one more, so the next launch need not wait

    def _read_notes(self) -> bool:
        data = os.read(self.notes_r, launch_keeper.NOTE.size * 256)
        for off in range(0, len(data) - launch_keeper.NOTE.size + 1, launch_keeper.NOTE.size):
            kind, pid = launch_keeper.NOTE.unpack_from(data, off)
            k = self.keepers.get(pid)
            if kind == launch_keeper.HUNG_UP:
                return False
            if k is None:
                continue
            k.busy = kind != launch_keeper.READY  # taken, or leaving: unavailable until its pidfd says it is gone
        return True

    def _reap(self, pid: int) -> None:
        k = self.keepers.pop(pid)
        self.poller.unregister(k.pidfd)
        del self.by_fd[k.pidfd]
        os.close(k.pidfd)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        if k.core:
            self._fork(core=True)

    def _fork(self, core: bool) -> None:
        launcher = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(self.notes_r)
                launch_keeper.keep(self.ctl, self.notes_w, None if core else EXTRA_IDLE_S, launcher)
            finally:
                os._exit(0)
        pidfd = os.pidfd_open(pid)
        self.keepers[pid] = _LaunchKeeper(pidfd, core)
        self.by_fd[pidfd] = pid
        self.poller.register(pidfd, select.POLLIN)


def main(argv: list[str]) -> None:
    fd, parent = int(argv[0]), int(argv[1])
    serve(socket.socket(fileno=fd), parent)


if __name__ == "__main__":
    main(sys.argv[1:])
