"""The worker's interpreter: an execute-only copy of this Python, so a worker is non-dumpable from its first
instruction.

At execve the kernel marks a process non-dumpable when its user cannot read the executable. Then no other
process of that uid (the agent's user outside any sandbox) may ptrace it, read its /proc/<pid>/environ,
mem or fd/, or take its descriptors with pidfd_getfd(): the worker's channel and its run token stay its
own. The copy lives in the supervisor's root-only state directory; the spawn child opens it (O_PATH, as
root, before the uid change) and execs it by descriptor with argv[0] naming the real interpreter, so
Python finds its virtualenv as usual.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

MODE = 0o711


def ensure(state_dir: Path) -> Path:
    """state_dir/bin/python: a root-owned 0711 copy of the running interpreter, refreshed when it differs."""
    source = Path(os.path.realpath(sys.executable))
    target = state_dir / "bin" / "python"
    target.parent.mkdir(mode=0o700, exist_ok=True)
    data = source.read_bytes()
    try:
        st = os.lstat(target)
        if st.st_uid == 0 and st.st_mode & 0o7777 == MODE and target.read_bytes() == data:
            return target
    except FileNotFoundError:
        pass
    tmp = target.with_name(f".python.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o700)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        os.fchown(fd, 0, 0)
        os.fchmod(fd, MODE)
        f.flush()
        os.fsync(fd)
    os.rename(tmp, target)
    return target
