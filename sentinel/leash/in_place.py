"""A child forked in its caller's place: the warm server's one launch (sentinel/cli/warm_server.py).

    pid = fork_in_place(place, close=server.close_all)   # the parent: the child's pid; the child: 0, set up

The warm server has imported what `sentinel run` uses; each call it serves is a forked child that never execs
and runs the command as the caller would have, so the child must stand where the caller stands. Before it
returns 0 in the child, this:

1. starts a session of its own (the server's is detached; the caller's terminal, if any, stays the caller's);
2. runs `close`, which closes every descriptor the server's own objects hold (listener, selector, other
   callers' connections, its lock), so no object closes a reused number later;
3. puts the caller's descriptors at 0, 1, 2 (one the caller lacks is closed), takes its working directory
   from the descriptor it passed, then closes every other descriptor but `keep`;
4. takes the caller's umask, its ignored signals (everything else default, then what Python sets itself at
   start: SIGINT raises, SIGPIPE and SIGXFSZ ignored) and its blocked signals.

It changes no credential and applies no layer: the server only serves a caller whose uid, groups,
capabilities, limits, cgroup and namespaces are its own, outside any sandbox (sentinel/cli/warm.py), so the
child has exactly what the caller would have had. A failure in the child before the command starts is one
line on the caller's stderr and exit 1.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Place:
    cwd: int  # a descriptor on the caller's working directory
    stdio: list[int | None] = field(default_factory=list)  # the caller's 0, 1, 2 (None: it has none)
    umask: int = 0o022
    ignored: int = 0  # bit n-1: signal n
    blocked: int = 0
    keep: int | None = None  # one more descriptor the child keeps (the warm server's go-ahead pipe)


def fork_in_place(place: Place, close: Callable[[], None]) -> int:
    pid = os.fork()
    if pid != 0:
        return pid
    try:
        os.setsid()
        close()
        for target, fd in enumerate(place.stdio):
            if fd is None:
                with contextlib.suppress(OSError):
                    os.close(target)
            else:
                os.dup2(fd, target)
        os.fchdir(place.cwd)
        top = os.sysconf("SC_OPEN_MAX")
        if place.keep is None:
            os.closerange(3, top)
        else:
            os.closerange(3, place.keep)
            os.closerange(place.keep + 1, top)
        os.umask(place.umask)
        _signals(place)
    except BaseException as exc:  # noqa: BLE001 — nothing of the command has run; the caller sees one line
        with contextlib.suppress(OSError):
            os.write(2, f"sentinel: the warm start failed ({exc}); run it with SENTINEL_WARM=0\n".encode())
        os._exit(1)
    return 0


def _signals(place: Place) -> None:
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP) or signum >= signal.SIGRTMIN:
            continue
        ignored = bool(place.ignored >> (signum - 1) & 1)
        signal.signal(signum, signal.SIG_IGN if ignored else signal.SIG_DFL)
    if not place.ignored >> (signal.SIGINT - 1) & 1:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, {s for s in signal.valid_signals()
                                                if s < 64 and place.blocked >> (s - 1) & 1})
