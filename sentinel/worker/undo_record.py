"""Recording workspace checkpoints: the blob store, the base manifest, and the stat walk that finds what a call changed.

How checkpoints are kept and used is described once, in sentinel/worker/undo.py; entries are made with
undo_entries.py, and putting a workspace back is undo_restore.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Collection, TypedDict

from sentinel import paths
from sentinel.engine.state import WorkspaceStep
from sentinel.jsontypes import JSONObject
from sentinel.tools.fs import OutsideRoot
from sentinel.worker import undo_links, undo_paths
from sentinel.worker.undo_entries import UNSTORED, Entry, _differs, _entry, _stat_entry, _unstored

UNDO = "undo"
BASE = "base.json"
BASE_FILES = 20000               # a workspace with more files is not copied whole
BASE_BYTES = 256 * 1024 * 1024   # nor one with more bytes
FILE_BYTES = 32 * 1024 * 1024    # a larger file is never stored: a step that changed one is incomplete
BASE_MANIFEST_BYTES = 64 * 1024 * 1024  # base.json is read up to this (BASE_FILES entries take far less)
FILE_TOOLS = ("write_file", "edit_file")
READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO where a file was is never waited on

Stat = tuple[int, int, int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, mode, uid, gid (lstat)
Stats = dict[str, Stat]


class Base(TypedDict):
    """The base manifest: each path first touched, as it was before (path -> entry); `complete`: the whole
    workspace was looked at first; `links`: symlinks are recorded (false in a base from before they were: such a
    run is undone as it was then); `dirs`: the workspace's directories then, when it was looked at whole (None in
    an older base: no directory is removed)."""

    complete: bool
    files: JSONObject
    links: bool
    dirs: list[str] | None


class UndoError(Exception):
    """A checkpoint cannot be stored or restored (one line for the operator)."""


class Checkpoints:
    """One run's blob store and base manifest; `before`/`after` bracket each call that may change files."""

    def __init__(self, run_dir: Path, workspace: Path):
        self.dir = run_dir / UNDO
        self.workspace = Path(workspace)
        # the harness's own files, when the workspace holds them (`sentinel run` from ~, home ~/.sentinel): never
        # checkpointed, or each step would store the blobs of the step before
        home = run_dir.parent.parent
        self._skip = {os.path.realpath(p) for p in (home, run_dir.parent, paths.state_dir(home))}
        self._stats: Stats | None = None  # the workspace as the last look saw it (this process only)
        self._path: str | None = None     # the path a file tool names, for an incomplete workspace
        self._big = False                 # that path held a file too large to store before the call
        self._links = True                # symlinks are recorded (not in a run begun before they were)

    # -- the base manifest ----------------------------------------------------------

    def base(self) -> Base:
        return load_base(self.dir)

    def _save_base(self, base: Base) -> None:
        tmp = self.dir / f".{BASE}.tmp"
        tmp.write_text(json.dumps(base, separators=(",", ":")))
        os.replace(tmp, self.dir / BASE)

    # -- around one call ------------------------------------------------------------

    def before(self, tool: str, args: JSONObject, known: set[str]) -> None:
        """Make sure what the call may change can be put back. `known`: paths some earlier step recorded."""
        self.dir.mkdir(mode=0o700, exist_ok=True)
        base = self.base() if (self.dir / BASE).exists() else None
        if base is None:
            base = self._first_base()
        elif self._stats is None and base["complete"]:
            self._stats = _walk(self.workspace, skip=self._skip, links=base["links"])
        self._links = base["links"]
        self._path, self._big = None, False
        if tool in FILE_TOOLS:
            path = undo_paths.key_at(self.workspace, str(args.get("path") or ""))
            self._path = path
            if path is not None and self._stats is None:
                self._big = _size(self.workspace, path) > FILE_BYTES
            if path is not None and path not in base["files"] and path not in known:
                entry = self._store(path)  # its before-image: a path first touched now
                if entry is not None:
                    base["files"][path] = entry
                    self._save_base(base)

    def forget(self) -> None:
        """Another run changed the workspace since the last look (a child run, which keeps its own checkpoints): the
        next `before` looks again, so this run's next step holds only what its own call changed."""
        self._stats = None

    def _first_base(self) -> Base:
        dirs: list[str] = []
        stats = _walk(self.workspace, limit=True, skip=self._skip, dirs=dirs)
        files: JSONObject = {}
        if stats is not None:
            for path, seen in stats.items():
                entry = self._store(path, seen=seen)
                if entry is not None:  # a file too large to store is in, as one that exists (unstored)
                    files[path] = entry
        base: Base = {"complete": stats is not None, "files": files, "links": True,
                      "dirs": dirs if stats is not None else None}
        self._save_base(base)
        self._stats = stats
        return base

    def after(self) -> tuple[JSONObject, bool]:
        """What the call changed: path -> entry or None (removed); and whether that is all of it (false too when
        it changed or removed a file too large to store: what it held before is beyond undo)."""
        if self._stats is None:  # a workspace too large to walk: the path a file tool named, nothing else
            if self._path is None:
                return {}, False
            entry = self._store(self._path)
            return {self._path: entry}, not (self._big or _unstored(entry))
        now = _walk(self.workspace, skip=self._skip, links=self._links)
        if now is None:
            return {}, False
        changes: JSONObject = {}
        complete = True
        for path, seen in now.items():
            old = self._stats.get(path)
            if old == seen:
                continue
            entry = self._store(path, seen=seen)
            if entry is None and old is None:
                continue  # gone again since the walk
            changes[path] = entry
            complete = complete and not _unstored(entry) and (old is None or old[0] <= FILE_BYTES)
        for path, old in self._stats.items():
            if path not in now:
                changes[path] = None
                complete = complete and old[0] <= FILE_BYTES
        self._stats = now
        return changes, complete

    def recover(self, steps: list[WorkspaceStep]) -> tuple[JSONObject, bool]:
        """What a call interrupted mid way (its process killed) changed, as `after` says it: the workspace against
        the state the checkpoints last recorded. The stats its `before` took died with its process, so each file
        is read and compared by content (once, at the resume). Without a whole base only the recorded paths are
        compared, and the answer is incomplete."""
        base = read_base(self.dir)
        if base is None:
            return {}, False  # the call's `before` never finished: nothing to compare with
        last = state_at(base, steps, len(steps))
        self._links = base["links"]
        now = _walk(self.workspace, skip=self._skip, links=self._links) if base["complete"] else None
        changes: JSONObject = {}
        complete = now is not None
        for path in dict.fromkeys([*last, *(now or ())]):
            old = last.get(path)
            if undo_paths.path(self.workspace, path) is None:
                continue  # no workspace path: a journal line this harness never wrote
            gone = now is not None and path not in now
            entry = None if gone else self._store(path, seen=now.get(path) if now is not None else None)
            if not _differs(entry, old):
                continue
            changes[path] = entry
            complete = complete and not _unstored(entry) and not _unstored(old)
        self._stats = now
        return changes, complete

    # -- blobs ------------------------------------------------------------------------

    def _store(self, path: str, seen: Stat | None = None) -> Entry | None:
        """The entry of what is at `path`: a regular file (`_store_file`) or, in a run that records them, a
        symlink; None for anything else (a directory, FIFO, socket or device) or nothing."""
        if seen is None or not stat.S_ISLNK(seen[4]):
            entry = self._store_file(path, seen)
            if entry is not None:
                return entry
        return undo_links.read_at(self.workspace, path) if self._links else None

    def _store_file(self, path: str, seen: Stat | None = None) -> Entry | None:
        """The entry of a workspace file, its content stored as a blob (not when over FILE_BYTES); None when there
        is no regular file at `path`. One `seen` by the walk that cannot be read is known to exist: unstored."""
        try:
            fd = undo_paths.open_at(self.workspace, path, READ)
        except (OSError, OutsideRoot) as exc:
            if seen is None or not isinstance(exc, PermissionError):
                return None
            return _entry(UNSTORED, seen[4], seen[5], seen[6], seen[0], seen[1])
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            data = f.read(FILE_BYTES + 1) if st.st_size <= FILE_BYTES else None
        if data is None or len(data) > FILE_BYTES:
            return _stat_entry(UNSTORED, st)
        sha = hashlib.sha256(data).hexdigest()
        blob = self.dir / "blobs" / sha
        if not blob.exists():
            blob.parent.mkdir(mode=0o700, exist_ok=True)
            tmp = blob.with_name(f".{sha}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, blob)
        return _stat_entry(sha, st)


def load_base(undo_dir: Path) -> Base:
    return read_base(undo_dir) or _no_base()


def _no_base() -> Base:
    """What is known of the workspace as the run found it without a base manifest: no file, not all recorded."""
    return {"complete": False, "files": {}, "links": True, "dirs": None}


def read_base(undo_dir: Path) -> Base | None:
    """The base manifest; None when it is missing or is no manifest (a regular file of JSON with a `files` map).
    One written before symlinks were recorded has no `links`, and none has `dirs` that was not taken whole."""
    try:
        fd = os.open(undo_dir / BASE, READ)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            data = json.loads(f.read(BASE_MANIFEST_BYTES))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return None
    complete, dirs = bool(data.get("complete")), data.get("dirs")
    if not (complete and isinstance(dirs, list) and all(isinstance(d, str) for d in dirs)):
        dirs = None
    return {"complete": complete, "files": files, "links": data.get("links") is True, "dirs": dirs}


def state_at(base: Base, steps: list[WorkspaceStep], to: int) -> JSONObject:
    """path -> entry or None: the workspace as the checkpoints know it after step `to`."""
    files: JSONObject = dict(base["files"])
    for step in steps[:to]:
        for path, entry in (step.get("changes") or {}).items():
            files[path] = entry
    return files


# -- paths ---------------------------------------------------------------------------------


def _size(workspace: Path, key: str) -> int:
    """The size of the regular file `key` names; 0 for anything else."""
    try:
        fd = undo_paths.open_at(workspace, key, os.O_PATH)
    except (OSError, OutsideRoot):
        return 0
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def _walk(workspace: Path, limit: bool = False, skip: Collection[str] = (), links: bool = True,
          dirs: list[str] | None = None) -> Stats | None:
    """Every regular file (and with `links`, every symlink) beneath the workspace, not beneath a `skip` directory,
    by lstat alone; each directory's key added to `dirs`. None (with `limit`) past BASE_FILES or BASE_BYTES, or
    when the workspace cannot be read."""
    seen: Stats = {}
    total = 0
    stack = [workspace]
    try:
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        if dirs is not None:
                            dirs.append(undo_paths.key_of(os.path.relpath(entry.path, workspace)))
                        if not skip or os.path.realpath(entry.path) not in skip:
                            stack.append(Path(entry.path))
                    elif stat.S_ISREG(st.st_mode) or (links and stat.S_ISLNK(st.st_mode)):
                        seen[undo_paths.key_of(os.path.relpath(entry.path, workspace))] = (
                            st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode, st.st_uid, st.st_gid)
                        total += st.st_size
                        if limit and (len(seen) > BASE_FILES or total > BASE_BYTES):
                            return None
    except OSError:
        return None
    return seen
