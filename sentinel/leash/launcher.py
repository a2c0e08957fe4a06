"""The launcher process: single-threaded, forked before the caller starts threads, reused for every launch.

Each message on its SOCK_SEQPACKET control socket carries one unix stream socket (SCM_RIGHTS) for
one request. The message is taken straight off the shared socket by a spare keeper forked ahead of
time (sentinel/leash/keeper.py), which then tells the launcher to fork the next spare. Launches
run concurrently and no interpreter start is paid per launch. The launcher exits when the caller
closes the control socket or dies (pdeathsig).

The caller starts it once, early, as `python -m sentinel.leash.launcher FD PARENT_PID`: a fresh
small interpreter rather than a copy of the caller, because every per-launch fork and execve costs
in proportion to the forking process's address space (a copy of a 100 MB CLI doubles launch time),
and because the caller may already run threads.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

from sentinel.leash import cgroups, keeper, lsm, privs


def serve(ctl: socket.socket, parent: int) -> None:
    """Run the launcher loop in this (fresh, single-threaded) process. Never returns."""
    try:
        _setup(ctl, parent)
        _loop(ctl)
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
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    keep = ctl.fileno()
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 20)
    lsm.abi_version()  # warm the caches every keeper inherits
    cgroups.detect()
    cgroups.sweep()  # groups of launchers killed with their callers


SPARES = 2  # a spare takes ~10 ms to get ready (joining cgroups waits for an RCU grace period)


def _loop(ctl: socket.socket) -> None:
    """Keep SPARES keepers waiting on the control socket; fork the next whenever one takes a request,
    so launches in quick succession never wait for a spare to get ready."""
    notify_r, notify_w = os.pipe()
    for _ in range(SPARES):
        if not _fork_spare(ctl, notify_w):
            return
    while True:
        try:
            note = os.read(notify_r, 1)
        except InterruptedError:
            continue
        if note != b"T" or not _fork_spare(ctl, notify_w):
            return  # the caller closed the control socket


def _fork_spare(ctl: socket.socket, notify_w: int) -> bool:
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:
        try:
            keeper.spare(ctl, notify_w)
        finally:
            os._exit(0)
    return True


def main(argv: list[str]) -> None:
    fd, parent = int(argv[0]), int(argv[1])
    serve(socket.socket(fileno=fd), parent)


if __name__ == "__main__":
    main(sys.argv[1:])
