"""What the caller prepares once and reuses across launches: Landlock ruleset fds, private TMPDIRs and,
as root, the root-only directories a tool's own uid must have exposed.

A ruleset fd is built in the caller (paths are opened by the caller, before any uid change), cached
by its exact rules plus the identity (device, inode) of every writable path, so a recreated
workspace gets a fresh ruleset, and handed to the keeper with each request over SCM_RIGHTS.
A private TMPDIR is made per (uid, first writable path) and removed when the caller exits.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import threading
from collections import OrderedDict

from sentinel.leash import lsm, mounts, seccomp

MAX_RULESETS = 32
OPTIONAL_LAYERS = ("cgroup",)

_lock = threading.Lock()
_rulesets: OrderedDict[tuple[object, ...], lsm.Built | None] = OrderedDict()
_tmpdirs: dict[tuple[object, ...], str] = {}
_tmp_owner = 0


def _identity(paths: list[str]) -> tuple[tuple[str, int | None, int | None], ...]:
    out: list[tuple[str, int | None, int | None]] = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((path, st.st_dev, st.st_ino))
        except OSError:
            out.append((path, None, None))
    return tuple(out)


def ruleset(read: list[str], write: list[str], tcp_connect: list[int]) -> lsm.Built | None:
    """A ruleset fd for these rules (None when Landlock is unavailable); owned by the cache, do not close."""
    key = (tuple(read), _identity(write), tuple(tcp_connect))
    with _lock:
        if key in _rulesets:
            _rulesets.move_to_end(key)
            return _rulesets[key]
        try:
            built = lsm.build(lsm.RulesetSpec(read=list(read), write=list(write), tcp_connect=list(tcp_connect)))
        except OSError:
            built = None
        _rulesets[key] = built
        while len(_rulesets) > MAX_RULESETS:
            _, old = _rulesets.popitem(last=False)
            if old is not None:
                os.close(old.fd)
        return built


def plan_missing(built: lsm.Built | None) -> list[str]:
    """Layers known to be missing before launching (kernel support)."""
    missing = ["landlock-fs", "landlock-tcp", "landlock-scope"] if built is None else list(built.missing)
    if not seccomp.supported():
        missing.append("seccomp")
    return missing


@functools.lru_cache(MAX_RULESETS)
def exposed(paths: tuple[str, ...]) -> list[str]:
    """The root-only ancestors of `paths` (mounts.root_only_ancestors), looked up once per set of paths."""
    return mounts.root_only_ancestors(list(paths))


def refusal(missing: list[str]) -> str:
    return (f"sandbox layers unavailable on this kernel (Landlock ABI {lsm.abi_version()}): {', '.join(missing)}; "
            "set `sandbox: best_effort` in config.yaml to run without them")


def tmpdir(uid: int | None, gid: int | None, owner_key: str) -> str:
    """A private TMPDIR for this (uid, workspace), created once, owned by the uid the tools run as."""
    key = (uid, owner_key)
    with _lock:
        path = _tmpdirs.get(key)
        if path and os.path.isdir(path):
            return path
        path = os.path.realpath(tempfile.mkdtemp(prefix="sentinel-tmp-"))  # rules open paths with no link in them
        if uid is not None:
            os.chown(path, uid, gid if gid is not None else -1)
        global _tmp_owner
        if _tmp_owner != os.getpid():
            _tmpdirs.clear()  # inherited through fork: the parent removes its own
            _tmp_owner = os.getpid()
            atexit.register(_cleanup)
        _tmpdirs[key] = path
        return path


def _cleanup() -> None:
    # shutil.rmtree walks by fd without following symlinks, so a tree a tool controlled is safe to remove
    if _tmp_owner != os.getpid():
        return
    for path in _tmpdirs.values():
        shutil.rmtree(path, ignore_errors=True)
    _tmpdirs.clear()
