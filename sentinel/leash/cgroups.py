"""Per-launch cgroups: detection (v2, v1, hybrid), creation with memory/pids limits, join, kill, removal.

A launch gets its own group beneath the launcher's own cgroup in every usable hierarchy:

    v2 (cgroup2 mount)   always usable to find every member for cleanup; limits only when the
                         own cgroup's subtree_control already enables memory / pids
    v1 memory, pids      limits when no v2 controller provides them (hybrid hosts)

Nothing usable (e.g. an unprivileged user without delegation) means no group: cleanup then relies
on the keeper being a child subreaper, and limits on rlimits. `describe()` says which applies.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Hierarchies:
    v2: Path | None = None
    v2_controllers: frozenset[str] = frozenset()
    v1: dict[str, Path] = field(default_factory=dict)

    def writable(self) -> "Hierarchies":
        v2 = self.v2 if self.v2 and os.access(self.v2, os.W_OK) else None
        v1 = {c: p for c, p in self.v1.items() if os.access(p, os.W_OK)}
        return Hierarchies(v2, self.v2_controllers if v2 else frozenset(), v1)


def _mounts() -> tuple[tuple[str, Path] | None, dict[str, tuple[str, Path]]]:
    """(root, mountpoint) of the cgroup2 mount, and per v1 controller."""
    v2: tuple[str, Path] | None = None
    v1: dict[str, tuple[str, Path]] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None, {}
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3:
            continue
        root, point, fstype = fields[3], Path(fields[4]), rfields[0]
        if fstype == "cgroup2" and v2 is None:
            v2 = (root, point)
        elif fstype == "cgroup":
            for opt in rfields[2].split(","):
                if opt in ("memory", "pids", "freezer"):
                    v1.setdefault(opt, (root, point))
    return v2, v1


def _own_paths() -> dict[str, str]:
    """controller ('' for v2) -> this process's cgroup path."""
    out = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                out[c] = path
    except (OSError, ValueError):
        pass
    return out


def _join(mount: tuple[str, Path], path: str) -> Path | None:
    root, point = mount
    rel = os.path.relpath(path, root) if path.startswith(root) else None
    if rel is None:
        return None
    full = point if rel == "." else point / rel
    return full if full.is_dir() else None


@functools.lru_cache(1)
def detect() -> Hierarchies:
    v2_mount, v1_mounts = _mounts()
    own = _own_paths()
    v2 = _join(v2_mount, own[""]) if v2_mount and "" in own else None
    controllers: frozenset[str] = frozenset()
    if v2 is not None:
        try:
            controllers = frozenset((v2 / "cgroup.subtree_control").read_text().split())
        except OSError:
            pass
    v1 = {}
    for ctrl, mount in v1_mounts.items():
        if ctrl in own and (path := _join(mount, own[ctrl])) is not None:
            v1[ctrl] = path
    return Hierarchies(v2, controllers, v1)


def describe(h: Hierarchies | None = None) -> str:
    h = h or detect()
    parts = []
    if h.v2:
        ctrls = sorted(h.v2_controllers & {"memory", "pids"})
        parts.append(f"v2 (membership{', ' + ', '.join(ctrls) if ctrls else ''})")
    v1 = sorted(set(h.v1) & {"memory", "pids"} - set(h.v2_controllers))
    if v1:
        parts.append(f"v1 ({', '.join(v1)})")
    return " + ".join(parts) if parts else "none"


_UNLIMITED = {"memory.max": "max", "memory.limit_in_bytes": "-1", "pids.max": "max"}


@dataclass
class Group:
    """A keeper's cgroups, holding one launch at a time. The keeper creates and joins them before any
    request arrives (joining costs an RCU grace period, ~10 ms, kept off the launch path) and keeps
    them for every launch it serves, each launch child inheriting them; between launches they hold
    the keeper alone."""

    dirs: list[Path]
    knobs: dict[str, Path]
    applied: list[str]
    written: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, name: str, h: Hierarchies | None = None) -> "Group | None":
        h = (h or detect()).writable()
        dirs, knobs, applied = [], {}, []
        if h.v2 is not None and (v2 := _mkdir(h.v2 / name)):
            dirs.append(v2)
            applied.append("cgroup-v2")
            for ctrl, knob in (("memory", "memory.max"), ("pids", "pids.max")):
                if ctrl in h.v2_controllers:
                    knobs[ctrl] = v2 / knob
        for ctrl, knob in (("memory", "memory.limit_in_bytes"), ("pids", "pids.max")):
            if ctrl not in knobs and ctrl in h.v1 and (d := _mkdir(h.v1[ctrl] / name)):
                dirs.append(d)
                knobs[ctrl] = d / knob
                applied.append(f"cgroup-v1-{ctrl}")
        return cls(dirs, knobs, applied) if dirs else None

    def join(self) -> None:
        for d in self.dirs:
            (d / "cgroup.procs").write_text("0")

    def set_limits(self, memory_bytes: int | None, pids_max: int | None) -> list[str]:
        """Write the limits (None lifts a limit an earlier launch in this group set); returns the ones in
        force (`cgroup-memory`, `cgroup-pids`). A value already written is not written again."""
        applied = []
        for ctrl, value in (("memory", memory_bytes), ("pids", pids_max)):
            if ctrl not in self.knobs:
                continue
            text = str(value) if value is not None else _UNLIMITED[self.knobs[ctrl].name]
            try:
                if self.written.get(ctrl) != text:
                    self.written.pop(ctrl, None)
                    self.knobs[ctrl].write_text(text)
                    self.written[ctrl] = text
                if value is not None:
                    applied.append(f"cgroup-{ctrl}")
            except OSError:
                pass
        return applied

    def members(self) -> set[int]:
        return {pid for d in self.dirs for pid in _pids(d)}

    def kill_others(self, rounds: int = 200) -> None:
        """SIGKILL every member but this process until none is left (bounded by pids.max). Each round stops every
        member before it kills any: killed one by one, a shell whose child died first ran its next command
        (`cat >/dev/null; echo ran` printed `ran` after its idle bound) before its own SIGKILL came."""
        me = os.getpid()
        for _ in range(rounds):
            others = self.members() - {me}
            if not others:
                return
            for pid in others:
                _kill(pid, signal.SIGSTOP)
            for pid in others:
                _kill(pid)
            time.sleep(0.0005)

    def leave_and_remove(self) -> None:
        """Move this process back to the parent groups, then remove the (empty) groups."""
        for d in self.dirs:
            try:
                (d.parent / "cgroup.procs").write_text("0")
            except OSError:
                pass
        for d in self.dirs:
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        break
                    time.sleep(0.005)


def sweep(h: Hierarchies | None = None, min_age_s: float = 30.0, prefix: str = "sentinel-") -> int:
    """Remove `sentinel-*` groups (or those named `prefix`*) left behind by keepers or workers that were killed
    before cleaning up (a launcher dies with its caller, and its spare keeper with it). Only empty groups older
    than `min_age_s` go, so a group being created and joined right now is never touched. Returns the count."""
    h = (h or detect()).writable()
    parents = ([h.v2] if h.v2 else []) + list(h.v1.values())
    now, removed = time.time(), 0
    for parent in dict.fromkeys(parents):
        try:
            entries = [d for d in parent.iterdir() if d.name.startswith(prefix) and d.is_dir()]
        except OSError:
            continue
        for d in entries:
            try:
                if _pids(d) or now - d.stat().st_mtime < min_age_s:
                    continue
                d.rmdir()  # fails (EBUSY/ENOTEMPTY) if anything joined or nested meanwhile
                removed += 1
            except OSError:
                pass
    return removed


def _mkdir(path: Path) -> Path | None:
    try:
        path.mkdir()
        return path
    except FileExistsError:
        return path
    except OSError:
        return None


def _pids(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _kill(pid: int, sig: signal.Signals = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
