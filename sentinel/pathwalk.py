"""A path followed one component at a time, each link where the kernel follows it: Leash's grants and the gate's
landings share this walk.

    follow(path, past_missing) -> Walked    .real, .links (each link followed, in order), .missing, .looped, .proc

`..` after a link applies to the link's target, as in the kernel and `os.path.realpath`. A component that is not
there (or cannot be looked at) ends the walk when `past_missing` is false: Leash grants nothing through a path
until it exists, and takes the rest as written. With `past_missing` the walk goes on as realpath does (a missing
directory is a name, and `missing/../here` is `here`), which is where `mkdir -p missing/../here/x` writes.

`.proc` tells that the walk passed through /proc or /dev/fd, whose links (`/proc/self/cwd`, `/dev/fd/3`,
`/proc/PID/root`) name what they name for the process that opens them, not for the one walking.

Imports nothing but `os` and `errno`: the hook, which lands every file write, pays its start for each import.
"""

from __future__ import annotations

import errno
import os

MAX_LINKS = 40  # as the kernel's own limit (ELOOP)
_PER_PROCESS = (("/", "proc"), ("/dev", "fd"))


class Walked:
    __slots__ = ("real", "links", "missing", "looped", "proc")

    def __init__(self, real: str, links: list[str], missing: bool, looped: bool, proc: bool):
        self.real = real        # the path with every link followed (the rest as written after a missing part)
        self.links = links      # each link followed, in order, as the path it was found at
        self.missing = missing  # some component was not there
        self.looped = looped    # more than MAX_LINKS links: the kernel would refuse it (ELOOP)
        self.proc = proc        # the walk passed through /proc or /dev/fd

    def __repr__(self) -> str:
        return f"Walked({self.real!r}, links={self.links!r}, missing={self.missing}, looped={self.looped})"


def follow(path: str, past_missing: bool) -> Walked:
    """`path`, relative to this process's directory unless absolute, followed component by component."""
    pending = (path if path.startswith("/") else os.path.join(os.getcwd(), path)).split("/")
    pending.reverse()  # popped from the end: a link's target is pushed back in front of the rest
    done, links, missing, proc = "/", list[str](), False, False
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            done = os.path.dirname(done)
            continue
        if (done, part) in _PER_PROCESS:
            proc = True
        here = os.path.join(done, part)
        try:
            target = os.readlink(here)
        except OSError as exc:
            if exc.errno != errno.EINVAL:  # not there, or not to be looked at
                missing = True
                if not past_missing:
                    pending.reverse()
                    return Walked(os.path.normpath(os.path.join(here, *pending)), links, True, False, proc)
            done = here  # a file or directory that is not a link, or (past_missing) a name taken as it is
            continue
        links.append(here)
        if len(links) > MAX_LINKS:
            pending.reverse()
            return Walked(os.path.normpath(os.path.join(here, *pending)), links, missing, True, proc)
        done = "/" if target.startswith("/") else done
        pending.extend(reversed(target.split("/")))
    return Walked(done, links, missing, False, proc)
