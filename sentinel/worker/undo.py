"""Workspace checkpoints, one per tool call that changed files, and putting a workspace back: `sentinel undo`.

    points = Checkpoints(run_dir, workspace)
    points.before("bash", args)           # before a call that may change files
    changes, complete = points.after()     # after it: path -> [sha256, mode], or None for a path it removed
    restore(run_dir, workspace, steps, to) # the workspace as it was after step `to` (0: before the run's first change)
    undo_run(run_dir, workspace, to)       # `sentinel undo`: restore, journal the undo as a checkpoint, summarise

Content-addressed: every file content the run may need again is one blob, `<run dir>/undo/blobs/<sha256>`, written
once however many steps hold it. `<run dir>/undo/base.json` maps each workspace file to its blob as the run found
it (taken at the run's first call that may change files); each `workspace_step` journal record holds only the paths
that call changed. How a step's changes are found: before each call that may change files, the size, mtime, inode
and mode of every workspace file are noted (a stat walk, no reading); after it, only the files whose stat moved are
read and stored. A workspace over BASE_FILES files or BASE_BYTES bytes is not copied whole: then only the path a
file tool names is kept (its before-image lazily, its after-image after the call) and a command's steps are
`complete: false` (undo says so). Symlinks and directories are not recorded: undo puts back file contents and
modes, and removes files the run created; directories the run made stay (empty).

Every write and removal goes through openat2(RESOLVE_BENEATH) (sentinel/tools/fs.py): a path in a journal, which
the agent can write, never leaves the workspace. In system mode the worker keeps the checkpoints as the agent's
user, and a restore runs as that user too, never as root in the agent's tree: the supervisor starts
`python -m sentinel.worker --undo RUN_ID` through Leash (sentinel/supervisor/workers.py `start_undo`), which calls
`undo_run` as local mode does.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Collection, TypedDict

from sentinel import paths
from sentinel.engine.state import WorkspaceStep
from sentinel.jsontypes import JSON, JSONObject
from sentinel.tools.fs import Confined, OutsideRoot, openat2, relative

if TYPE_CHECKING:
    from sentinel.engine.events import Listener

UNDO = "undo"
BASE = "base.json"
BASE_FILES = 20000               # a workspace with more files is not copied whole
BASE_BYTES = 256 * 1024 * 1024   # nor one with more bytes
FILE_BYTES = 32 * 1024 * 1024    # a larger file is never stored: a step that changed one is incomplete
BASE_MANIFEST_BYTES = 64 * 1024 * 1024  # base.json is read up to this (BASE_FILES entries take far less)
FILE_TOOLS = ("write_file", "edit_file")
READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # a FIFO planted where a file was is never waited on

Stats = dict[str, tuple[int, int, int, int]]  # path -> (size, mtime_ns, inode, mode)


class Base(TypedDict):
    """The base manifest: each path first touched, as it was before (path -> [sha256, mode]); `complete`: the
    whole workspace was looked at first."""

    complete: bool
    files: JSONObject


class Restored(TypedDict):
    """What `restore` did: the changes as a `workspace_step` holds them, the paths it could not put back, and the
    steps after the target that were incomplete."""

    changes: JSONObject
    missing: list[str]
    incomplete: list[int]


class Summary(TypedDict):
    restored: list[str]
    removed: list[str]
    missing: list[str]
    incomplete: list[int]


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
            self._stats = _walk(self.workspace, skip=self._skip)
        self._path = None
        if tool in FILE_TOOLS:
            path = _key(self.workspace, str(args.get("path") or ""))
            self._path = path
            if path is not None and path not in base["files"] and path not in known:
                entry = self._store_file(path)  # its before-image: a path first touched now
                if entry is not None:
                    base["files"][path] = entry
                    self._save_base(base)

    def _first_base(self) -> Base:
        stats = _walk(self.workspace, limit=True, skip=self._skip)
        files: JSONObject = {}
        complete = stats is not None
        if stats is not None:
            for path in stats:
                entry = self._store_file(path)
                if entry is not None:
                    files[path] = entry
        base: Base = {"complete": complete, "files": files}
        self._save_base(base)
        self._stats = stats
        return base

    def after(self) -> tuple[JSONObject, bool]:
        """What the call changed: path -> [sha256, mode] or None (removed); and whether that is all of it."""
        if self._stats is None:  # a workspace too large to walk: the path a file tool named, nothing else
            if self._path is None:
                return {}, False
            return {self._path: self._store_file(self._path)}, True
        now = _walk(self.workspace, skip=self._skip)
        if now is None:
            return {}, False
        changes: JSONObject = {}
        complete = True
        for path, seen in now.items():
            if self._stats.get(path) != seen:
                entry = self._store_file(path)
                complete = complete and entry is not None
                if entry is not None:
                    changes[path] = entry
        changes.update({path: None for path in self._stats if path not in now})
        self._stats = now
        return changes, complete

    # -- blobs ------------------------------------------------------------------------

    def _store_file(self, path: str) -> list[JSON] | None:
        """[sha256, mode] of a workspace file, its content stored as a blob; None when it is no regular file
        (or is too large to keep)."""
        try:
            fd = Confined(self.workspace).open(path, READ)
        except (OSError, OutsideRoot):
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > FILE_BYTES:
                return None
            data = f.read(FILE_BYTES + 1)
        sha = hashlib.sha256(data).hexdigest()
        blob = self.dir / "blobs" / sha
        if not blob.exists():
            blob.parent.mkdir(mode=0o700, exist_ok=True)
            tmp = blob.with_name(f".{sha}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, blob)
        return [sha, stat.S_IMODE(st.st_mode)]


def load_base(undo_dir: Path) -> Base:
    return read_base(undo_dir) or _no_base()


def _no_base() -> Base:
    """What is known of the workspace as the run found it without a base manifest: no file, not all recorded."""
    return {"complete": False, "files": {}}


def read_base(undo_dir: Path) -> Base | None:
    """The base manifest; None when it is missing or is no manifest (a regular file of JSON with a `files` map)."""
    try:
        fd = os.open(undo_dir / BASE, READ | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            data = json.loads(f.read(BASE_MANIFEST_BYTES))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return None
    return {"complete": bool(data.get("complete")), "files": files}


def _key(workspace: Path, path: str) -> str | None:
    """`path` as the workspace-relative key the manifests use; None when it leaves the workspace."""
    try:
        rel = relative(workspace, path)
    except OutsideRoot:
        return None
    key = os.path.normpath(rel)
    return None if key == "." or key.startswith("../") or key == ".." else key


def _walk(workspace: Path, limit: bool = False, skip: Collection[str] = ()) -> Stats | None:
    """Every regular file beneath the workspace (not beneath a `skip` directory), by stat alone; None (with
    `limit`) past BASE_FILES or BASE_BYTES, or when the workspace cannot be read."""
    seen: Stats = {}
    total = 0
    stack = [workspace]
    try:
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        if not skip or os.path.realpath(entry.path) not in skip:
                            stack.append(Path(entry.path))
                    elif stat.S_ISREG(st.st_mode):
                        seen[os.path.relpath(entry.path, workspace)] = (st.st_size, st.st_mtime_ns, st.st_ino,
                                                                        st.st_mode)
                        total += st.st_size
                        if limit and (len(seen) > BASE_FILES or total > BASE_BYTES):
                            return None
    except OSError:
        return None
    return seen


# -- restoring -----------------------------------------------------------------------------


def state_at(base: Base, steps: list[WorkspaceStep], to: int) -> JSONObject:
    """path -> [sha256, mode] or None: the workspace as the checkpoints know it after step `to`."""
    files: JSONObject = dict(base["files"])
    for step in steps[:to]:
        for path, entry in (step.get("changes") or {}).items():
            files[path] = entry
    return files


def restore(run_dir: Path, workspace: Path, steps: list[WorkspaceStep], to: int) -> Restored:
    """Put every path a step after `to` changed back as it was after step `to` (a file removed when it did not
    exist then). Returns the changes made, as a `workspace_step` holds them, and what could not be restored."""
    if not 0 <= to <= len(steps):
        raise UndoError(f"no step {to}: the run has checkpoints 0 (before its first change) to {len(steps)}")
    undo_dir = run_dir / UNDO
    base = read_base(undo_dir)
    wanted = state_at(base or _no_base(), steps, to)
    touched = list(dict.fromkeys(p for step in steps[to:] for p in (step.get("changes") or {})))
    fs = Confined(workspace)
    changes: JSONObject = {}
    missing: list[str] = []
    for path in touched:
        entry = wanted.get(path)
        if _key(workspace, path) != path:
            missing.append(path)  # not a plain workspace path: a journal line this harness never wrote
        elif entry is None and base is None:
            missing.append(path)  # without the base manifest, whether it was there before the run is unknown
        elif entry is None:
            if _exists(fs, path) and _remove(fs, path):
                changes[path] = None
        elif _current(fs, path) != entry:
            if _put(fs, undo_dir, path, entry):
                changes[path] = entry
            else:
                missing.append(path)
    incomplete = [i + 1 for i, step in enumerate(steps[to:], start=to) if not step.get("complete", True)]
    return {"changes": changes, "missing": missing, "incomplete": incomplete}


def _exists(fs: Confined, path: str) -> bool:
    try:
        os.close(fs.open(path, os.O_PATH | os.O_NOFOLLOW))
        return True
    except (OSError, OutsideRoot):
        return False


def _current(fs: Confined, path: str) -> list[JSON] | None:
    try:
        fd = fs.open(path, READ)
    except (OSError, OutsideRoot):
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None
        return [hashlib.sha256(f.read()).hexdigest(), stat.S_IMODE(st.st_mode)]


def _put(fs: Confined, undo_dir: Path, path: str, entry: JSON) -> bool:
    """Write the blob `entry` names at `path`, with its mode; False when the blob is missing or does not hash to
    its name (the store is the agent's to write: a blob is checked before it is used)."""
    if not (isinstance(entry, list) and len(entry) == 2):
        return False
    sha, mode = entry
    if not isinstance(sha, str) or not isinstance(mode, int) or len(sha) != 64 \
            or not all(c in "0123456789abcdef" for c in sha):
        return False
    data = _blob(undo_dir, sha)
    if data is None or hashlib.sha256(data).hexdigest() != sha:
        return False
    try:
        if _foreign(fs, path):
            _remove(fs, path)  # planted where the file was: replaced by the file, never written through
        fs.write_bytes(path, data, mode & 0o777, exact_mode=True)
    except (OSError, OutsideRoot):
        return False
    return True


def _blob(undo_dir: Path, sha: str) -> bytes | None:
    """A stored content, if its blob is a regular file no larger than any stored one (a FIFO or device planted as a
    blob is never waited on or read)."""
    try:
        fd = os.open(undo_dir / "blobs" / sha, READ | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        data = f.read(FILE_BYTES + 1)
    return data if len(data) <= FILE_BYTES else None


def _foreign(fs: Confined, path: str) -> bool:
    """Something at `path` a restore must remove before it writes: a symlink, a FIFO, socket or device (opening one
    would follow it or wait; `Confined.write_bytes` refuses them). A file with another name elsewhere (a hard link)
    is no concern here: `write_bytes` replaces such a name, never writes through it. A directory is left for the
    write to fail on."""
    parent, _, name = path.rpartition("/")
    try:
        fd = fs.open(parent or ".", os.O_PATH | os.O_DIRECTORY)
    except (OSError, OutsideRoot):
        return False
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    finally:
        os.close(fd)
    return not stat.S_ISDIR(st.st_mode) and not stat.S_ISREG(st.st_mode)


def _remove(fs: Confined, path: str) -> bool:
    parent, _, name = path.rpartition("/")
    try:
        root_fd = os.open(fs.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = openat2(root_fd, parent or ".", os.O_PATH | os.O_DIRECTORY, 0, fs.resolve)
        finally:
            os.close(root_fd)
    except (OSError, OutsideRoot):
        return False
    try:
        os.unlink(name, dir_fd=fd)
        return True
    except FileNotFoundError:
        return False
    except OSError:
        return False
    finally:
        os.close(fd)


def point(steps: list[WorkspaceStep], n: int) -> int:
    """The checkpoint the workspace matched after step `n`: an undo step stands for the checkpoint it went to."""
    while n > 0 and steps[n - 1].get("undo") is not None:
        target = steps[n - 1]["undo"]
        if not isinstance(target, int) or not 0 <= target < n:
            return n
        n = target
    return n


def previous_point(steps: list[WorkspaceStep]) -> int:
    """What a chat's /undo goes back to: the checkpoint before the one the workspace matches now."""
    now = point(steps, len(steps))
    if now == 0:
        raise UndoError("nothing to undo: the workspace is as it was before the run changed anything")
    return point(steps, now - 1)


def undo_run(run_dir: Path, workspace: Path, to: int | None, listener: Listener | None = None) -> JSONObject:
    """Put the run's workspace back as it was after checkpoint `to` (0: before its first change; None: the one before
    the latest), holding the run's lease (Busy while another process executes it); the undo is itself a checkpoint,
    journaled, so it can be undone too (`listener` hears its event). Returns what `sentinel undo` prints: id, to,
    restored, removed, missing, incomplete."""
    from sentinel.engine import records
    from sentinel.engine.run import Run

    with Run.open(run_dir) as run:
        if listener is not None:
            run.listeners.append(listener)
        steps = run.state.workspace_steps
        target = previous_point(steps) if to is None else to
        done = restore(run.dir, workspace, steps, target)
        if done["changes"]:
            run.record(records.WorkspaceStep(call_id="", tool="undo", changes=done["changes"], undo=target))
    s = summary(done)
    return {"id": run_dir.name, "to": target, "restored": [*s["restored"]], "removed": [*s["removed"]],
            "missing": [*s["missing"]], "incomplete": [*s["incomplete"]]}


def summary(done: Restored) -> Summary:
    changes = done["changes"]
    return {"restored": sorted(p for p, e in changes.items() if e is not None),
            "removed": sorted(p for p, e in changes.items() if e is None),
            "missing": done["missing"], "incomplete": done["incomplete"]}
