"""Workspace checkpoints, one per tool call that changed files, and putting a workspace back: `sentinel undo`.

    points = Checkpoints(run_dir, workspace)
    points.before("bash", args, known)        # before a call that may change files
    changes, complete = points.after()        # after it: path -> entry, or None for a path it removed
    changes, complete = points.recover(steps) # after a crash mid call: the workspace against the last record
    restore(run_dir, workspace, steps, to)    # the workspace as it was after step `to` (0: before the first change)
    undo_run(run_dir, workspace, to)          # `sentinel undo`: restore, journal the undo as a checkpoint, summarise

Content-addressed: every file content the run may need again is one blob, `<run dir>/undo/blobs/<sha256>`, written
once however many steps hold it. `<run dir>/undo/base.json` maps each workspace file and symlink to its entry as the
run found it (taken at the run's first call that may change files), and lists the workspace's directories then;
each `workspace_step` journal record holds only the paths that call changed. A file's entry is [sha256, mode, uid,
gid] (the mode with its setuid, setgid and sticky bits; journals from before owners were kept hold [sha256, mode]);
a file over FILE_BYTES is never stored and its entry is ["", mode, uid, gid, size, mtime_ns]: known to exist, its
content beyond undo. A step that changed or removed such a file is `complete: false`, and undo says it cannot bring
that file back; it never removes it. A symlink's entry is ["symlink", target, uid, gid] (sentinel/worker/
undo_links.py). A base from before symlinks were recorded has no `"links": true`: its run goes on recording and
undoing files only, as it did.

How a step's changes are found: before each call that may change files, the size, mtime, ctime, inode, mode, uid
and gid of every workspace file and symlink are noted (an lstat walk, no reading; ctime because a write that puts
its mtime back with utime still moves it); after it, only the paths whose stat moved are read and stored. Those
stats live in the process: after a crash mid call, the next process compares the workspace with the last recorded
state (`recover`, reading every file once) and records the difference as the interrupted call's step. A workspace
over BASE_FILES files or BASE_BYTES bytes is not copied whole: then only the path a file tool names is kept (its
before-image lazily, its after-image after the call) and a command's steps are `complete: false` (undo says so).

Directories are not recorded step by step: undo removes a directory only when it is empty once the files and links
in it are undone and the workspace, looked at whole when the run began, had no directory there.

Paths are named by keys (sentinel/worker/undo_paths.py): workspace-relative, each byte of a name that is not UTF-8
written as NUL and two hex digits (`x\\0ff.txt`), and a link's target likewise.

A run's child runs (delegate, spawn, run_workflow) that work in the same workspace keep their checkpoints in their
own run directories; undo of the run undoes its whole tree there (`undo_run(..., children=...)`): every step of
the tree is put on one timeline by the time each was journaled (each run's steps in their own order), checkpoint N
is the moment right after the run's step N, and a path is put back as the tree left it then (or, never touched
before, as the base of the run that first touched it found it). A blob is looked for in every store of the tree
and checked against its hash; each child's journal and base are read as the run's are. A run's own step never
holds a child's changes: after a child ran, its next `before` looks at the workspace again (`forget`).

Undo never destroys what it did not record: a path holding a file or symlink that differs from what the run's last
step left there (the person's later work, a file or link made again after the run removed it) is kept as it is,
named, and the rest is undone; moved aside, it is put back by undoing again. Replacing a file with other names
(hard links) loses nothing, nor does replacing a FIFO or device (never recorded): those are replaced, never written
through.

Every write and removal is beneath the workspace and through no symlink (openat2(RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS), or one name at a time with O_NOFOLLOW); a link is read with readlinkat, removed with unlinkat
and made with symlinkat, never followed: a path in a journal, which the agent can write, never leaves the
workspace. In system mode the worker keeps the checkpoints as the agent's user, and a restore runs as that user too,
never as root in the agent's tree: the supervisor starts `python -m sentinel.worker --undo RUN_ID` through Leash
(sentinel/supervisor/workers.py `start_undo`), which calls `undo_run` as local mode does.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Collection, Literal, Mapping, NamedTuple, Sequence, TypedDict

from sentinel import paths
from sentinel.engine.state import WorkspaceStep
from sentinel.jsontypes import JSON, JSONObject
from sentinel.tools.fs import OutsideRoot
from sentinel.worker import undo_links, undo_paths

if TYPE_CHECKING:
    from sentinel.engine.events import Listener

UNDO = "undo"
BASE = "base.json"
BASE_FILES = 20000               # a workspace with more files is not copied whole
BASE_BYTES = 256 * 1024 * 1024   # nor one with more bytes
FILE_BYTES = 32 * 1024 * 1024    # a larger file is never stored: a step that changed one is incomplete
BASE_MANIFEST_BYTES = 64 * 1024 * 1024  # base.json is read up to this (BASE_FILES entries take far less)
FILE_TOOLS = ("write_file", "edit_file")
READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO where a file was is never waited on
UNSTORED = ""                    # the sha256 of an entry whose content was never stored

Stat = tuple[int, int, int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, mode, uid, gid (lstat)
Stats = dict[str, Stat]
Entry = list[JSON]
Kind = Literal["absent", "file", "linked", "link", "other", "dir"]  # what a restore finds at a path
Attributes = tuple[bool, os.stat_result]  # whether a restored file's owner and mode are as recorded; its stat


class Base(TypedDict):
    """The base manifest: each path first touched, as it was before (path -> entry); `complete`: the whole
    workspace was looked at first; `links`: symlinks are recorded (false in a base from before they were: such a
    run is undone as it was then); `dirs`: the workspace's directories then, when it was looked at whole (None in
    an older base: no directory is removed)."""

    complete: bool
    files: JSONObject
    links: bool
    dirs: list[str] | None


class Restored(TypedDict):
    """What `restore` did: the changes as a `workspace_step` holds them; `missing`, every path it could not put
    back, among them those `kept` (changed after the run: left as they are), `unstored` (never stored: beyond
    undo) and `attributes` (content back, owner, group or setuid/setgid bits not); the steps after the target that
    were incomplete; `dirs`, the directories the run made that it removed (empty); `children`, each child run in the
    same workspace that changed it after the target, with its steps undone and those of them that were
    incomplete."""

    changes: JSONObject
    missing: list[str]
    kept: list[str]
    unstored: list[str]
    attributes: list[str]
    incomplete: list[int]
    dirs: list[str]
    children: list[ChildSteps]


class ChildSteps(TypedDict):
    id: str
    steps: list[int]
    incomplete: list[int]


class Summary(TypedDict):
    restored: list[str]
    removed: list[str]
    missing: list[str]
    kept: list[str]
    unstored: list[str]
    attributes: list[str]
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


# -- entries --------------------------------------------------------------------------------


def _entry(sha: str, mode: int, uid: int, gid: int, size: int, mtime_ns: int) -> Entry:
    """[sha256, mode, uid, gid]; an unstored one adds [size, mtime_ns], what tells a change of it."""
    head: Entry = [sha, stat.S_IMODE(mode), uid, gid]
    return head if sha != UNSTORED else [*head, size, mtime_ns]


def _stat_entry(sha: str, st: os.stat_result) -> Entry:
    return _entry(sha, st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns)


def _valid(entry: JSON) -> bool:
    """An entry as this module writes it (the journal and base manifest are the agent's to write)."""
    if not isinstance(entry, list) or len(entry) not in (2, 4, 6) or not isinstance(entry[0], str):
        return False
    if undo_links.is_link(entry):
        return undo_links.valid(entry)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in entry[1:]):
        return False
    if entry[0] == UNSTORED:
        return len(entry) == 6
    return len(entry) != 6 and _SHA.fullmatch(entry[0]) is not None


_SHA = re.compile("[0-9a-f]{64}")


def _unstored(entry: JSON) -> bool:
    return isinstance(entry, list) and bool(entry) and entry[0] == UNSTORED


def _same(a: JSON, b: JSON) -> bool:
    """Whether two entries hold the same content and mode (an unstored one: the same size and mtime; a link: the
    same target); an entry without owners (an older journal's) has only the permission bits."""
    if a is None or b is None:
        return a is b
    if not (_valid(a) and _valid(b)) or not isinstance(a, list) or not isinstance(b, list) or a[0] != b[0]:
        return False
    if a[0] == undo_links.LINK:
        return a[1] == b[1]
    mask = 0o7777 if len(a) > 2 and len(b) > 2 else 0o777
    return (_int(a[1]) & mask) == (_int(b[1]) & mask) and a[4:] == b[4:]


def _int(value: JSON) -> int:
    return value if isinstance(value, int) else -1


def _owner(entry: JSON) -> tuple[int, int] | None:
    if isinstance(entry, list) and len(entry) >= 4 and isinstance(entry[2], int) and isinstance(entry[3], int):
        return entry[2], entry[3]
    return None


def _differs(a: JSON, b: JSON) -> bool:
    """Content, mode or owner (when both entries have one)."""
    return not _same(a, b) or (_owner(a) is not None and _owner(b) is not None and _owner(a) != _owner(b))


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


# -- restoring -----------------------------------------------------------------------------


def state_at(base: Base, steps: list[WorkspaceStep], to: int) -> JSONObject:
    """path -> entry or None: the workspace as the checkpoints know it after step `to`."""
    files: JSONObject = dict(base["files"])
    for step in steps[:to]:
        for path, entry in (step.get("changes") or {}).items():
            files[path] = entry
    return files


class Track(NamedTuple):
    """One run of a tree that works in one workspace, as undo reads it: its id, checkpoint store and base (None:
    missing or damaged), and its steps (the journal's, the agent's to write: each entry is checked before use)."""

    id: str
    undo_dir: Path
    base: Base | None
    steps: list[WorkspaceStep]


def track(run_id: str, run_dir: Path, steps: list[WorkspaceStep]) -> Track:
    return Track(run_id, run_dir / UNDO, read_base(run_dir / UNDO), steps)


Mark = tuple[int, int]  # a step on a tree's timeline: the index of its run in the tree, its index in that run


def timeline(tracks: Sequence[Track]) -> list[Mark]:
    """Every step of the tree, oldest first: the head run's alone in its own order, or, when a child run changed the
    workspace too, all of them merged by the time each was journaled (each run's steps stay in their own order)."""
    if not any(tr.steps for tr in tracks[1:]):
        return [(0, i) for i in range(len(tracks[0].steps))]
    for tr in tracks:
        if not all(_time(s) is not None for s in tr.steps):
            raise UndoError(f"run {tr.id} has a checkpoint without its time, so its steps cannot be put in order "
                            "with its parent's and children's: undo the child runs one by one, newest first")
    lines = ([(_time(s) or 0.0, r, i) for i, s in enumerate(tr.steps)] for r, tr in enumerate(tracks))
    return [(r, i) for _, r, i in heapq.merge(*lines, key=lambda line: line[0])]


def _time(step: WorkspaceStep) -> float | None:
    t = step.get("t")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None


def restore(run_dir: Path, workspace: Path, steps: list[WorkspaceStep], to: int,
            children: Sequence[Track] = ()) -> Restored:
    """Put every path a step after `to` changed back as it was after step `to` (a file removed when it did not
    exist then), except one that changed after the run's last step (kept). With `children` (the runs below this
    one that work in the same workspace), their steps are on the timeline too, by time: checkpoint `to` is the
    moment right after this run's step `to` (0: before the first step of any of them), and what any of them
    changed after it is put back. Returns the changes made, as a `workspace_step` holds them, and what could not
    be restored."""
    if not 0 <= to <= len(steps):
        raise UndoError(f"no step {to}: the run has checkpoints 0 (before its first change) to {len(steps)}")
    tracks = [track(run_dir.name, run_dir, steps), *children]
    line = timeline(tracks)
    at = 0 if to == 0 else line.index((0, to - 1)) + 1
    first: dict[str, int] = {}  # path -> the run whose step touched it first: its base holds what was there before
    before: JSONObject = {}     # path -> what the step of `to` or an earlier one left there
    last: JSONObject = {}       # path -> what the last step left there
    for n, (r, i) in enumerate(line):
        for path, entry in _changes(tracks[r].steps[i]).items():
            first.setdefault(path, r)
            last[path] = entry
            if n < at:
                before[path] = entry
    wanted: JSONObject = {}
    for tr in tracks:  # every file the runs found and no step touched: their directories are needed
        for path, entry in (tr.base["files"] if tr.base is not None else {}).items():
            wanted.setdefault(path, entry)
    unknown: set[str] = set()  # no base to say whether it was there before the first step that touched it
    for path, r in first.items():
        base = tracks[r].base
        if path in before:
            wanted[path] = before[path]
        elif base is None:
            wanted[path] = None
            unknown.add(path)
        else:
            wanted[path] = base["files"].get(path)
    touched = list(dict.fromkeys(p for r, i in line[at:] for p in _changes(tracks[r].steps[i])))
    done: Restored = {"changes": {}, "missing": [], "kept": [], "unstored": [], "attributes": [], "incomplete": [],
                      "dirs": [], "children": []}
    stores = [tr.undo_dir for tr in tracks]  # content-addressed: a blob is checked against its name wherever found
    links = all(tr.base["links"] for tr in tracks if tr.base is not None)
    # removals first, the deepest first, then what is put back, the shallowest first: a link the run put where a
    # directory was goes before the files put back beneath it, and a directory's files before what replaces it
    gone = sorted((p for p in touched if wanted.get(p) is None), key=_depth, reverse=True)
    for path in gone:
        if undo_paths.path(workspace, path) is None:
            done["missing"].append(path)  # not a plain workspace path: a journal line this harness never wrote
        elif path in unknown:
            done["missing"].append(path)  # without the base manifest, whether it was there before the run is unknown
        else:
            _put_back(workspace, stores, path, None, last.get(path), done, links)
    earliest = tracks[line[0][0]].base if line else tracks[0].base  # looked at before any step of the tree
    if earliest is not None and earliest["dirs"] is not None:
        _clear_dirs(workspace, touched, set(earliest["dirs"]), wanted, done)
    for path in sorted((p for p in touched if wanted.get(p) is not None), key=_depth):
        if undo_paths.path(workspace, path) is None:
            done["missing"].append(path)
        else:
            _put_back(workspace, stores, path, wanted[path], last.get(path), done, links)
    done["missing"] += [p for p in (*done["kept"], *done["unstored"], *done["attributes"]) if p not in done["missing"]]
    done["incomplete"] = [i + 1 for r, i in line[at:] if r == 0 and not tracks[r].steps[i].get("complete", True)]
    for r, tr in enumerate(tracks[1:], start=1):
        after = [i for q, i in line[at:] if q == r]
        if after:
            done["children"].append({"id": tr.id, "steps": [i + 1 for i in after],
                                     "incomplete": [i + 1 for i in after if not tr.steps[i].get("complete", True)]})
    return done


def _changes(step: WorkspaceStep) -> JSONObject:
    changes = step.get("changes")
    return changes if isinstance(changes, dict) else {}


def _depth(key: str) -> int:
    return key.count("/")


def _put_back(workspace: Path, stores: Sequence[Path], path: str, want: JSON, left: JSON, done: Restored,
              links: bool) -> None:
    """Make `path` hold `want` (None: nothing), unless a file of one name or a symlink is there that is not what
    the run left (`left`): replacing it would lose it. A directory is not written over (`_clear_dirs` removed it
    first if it was empty). Without `links` (a run recorded before symlinks were), a symlink there is replaced, as
    it was then."""
    try:
        kind, now = _look(workspace, path)
    except (OSError, OutsideRoot):
        if want is not None:
            done["missing"].append(path)  # its directory is out of reach (a symlink out of the workspace)
        return
    if kind == "link" and not links:
        kind = "other"
    if kind in ("file", "linked", "link") and not _differs(now, want):
        return  # as wanted already
    if kind in ("file", "link") and not _same(now, left):
        done["kept"].append(path)
    elif want is None:
        if kind != "absent" and undo_paths.remove(workspace, path):
            done["changes"][path] = None
    elif _unstored(want):
        done["unstored"].append(path)
    elif not isinstance(want, list) or not _valid(want):
        done["missing"].append(path)
    elif undo_links.is_link(want):
        _put_link(workspace, path, want, done)
    elif kind == "file" and now is not None and now[0] == want[0]:
        _settle(workspace, path, want, done)  # the content is there: its mode or owner is not
    elif not _write(workspace, stores, path, want, _owner(now) if kind == "file" else None, kind == "file", done):
        done["missing"].append(path)


def _look(workspace: Path, path: str) -> tuple[Kind, Entry | None]:
    """What is at `path` now: absent, a regular file of one name or of several (with its entry, its content hashed
    unless it is too large to store), a symlink (with its entry), a directory, or something else (a FIFO, socket
    or device)."""
    try:
        fd, name = undo_paths.parent(workspace, path)
    except FileNotFoundError:
        return "absent", None  # its directory too (an undo removed it; a restore makes it again)
    try:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return "absent", None
        if stat.S_ISDIR(st.st_mode):
            return "dir", None
        if stat.S_ISLNK(st.st_mode) and (link := undo_links.read(fd, name)) is not None:
            return "link", link
        if not stat.S_ISREG(st.st_mode):
            return "other", None
        kind: Kind = "linked" if st.st_nlink > 1 else "file"
        if st.st_size > FILE_BYTES:
            return kind, _stat_entry(UNSTORED, st)
        with os.fdopen(os.open(name, READ, dir_fd=fd), "rb") as f:
            st = os.fstat(f.fileno())
            return kind, _stat_entry(hashlib.sha256(f.read(FILE_BYTES + 1)).hexdigest(), st)
    finally:
        os.close(fd)


def _write(workspace: Path, stores: Sequence[Path], path: str, want: Entry, owner: tuple[int, int] | None,
           in_place: bool, done: Restored) -> bool:
    """Put the blob `want` names at `path`, with its mode and owner (`owner` for an entry without one): over the file
    there (`in_place`: a file of one name), else as a new file; the change is what the file then is. The blob is
    looked for in each of `stores` (the run's and its children's). False when no store holds it whole and hashing
    to its name (a store is the agent's to write: checked before use)."""
    sha = str(want[0])
    data = next((d for d in (_blob(s, sha) for s in stores) if d is not None and hashlib.sha256(d).hexdigest() == sha),
                None)
    if data is None:
        return False
    try:
        fd, name = undo_paths.parent(workspace, path, create=True)
    except (OSError, OutsideRoot):
        return False
    try:
        write = _overwrite if in_place else _replace
        ok, st = write(fd, name, data, want, owner)
    except OSError:
        return False
    else:
        _record(done, path, sha, st, ok)
        return True
    finally:
        os.close(fd)


def _put_link(workspace: Path, path: str, want: Entry, done: Restored) -> None:
    """Make `path` the link `want` records, with its owner where this user may give it; what was there (a file or
    another link) is replaced, never written through."""
    try:
        ok, now = undo_links.put(workspace, path, want)
    except (OSError, OutsideRoot):
        return done["missing"].append(path)
    done["changes"][path] = now
    if not ok:
        done["attributes"].append(path)


def _clear_dirs(workspace: Path, paths: list[str], had: set[str], wanted: JSONObject, done: Restored) -> None:
    """Remove, once empty, each directory the run made (`had`: the workspace's when the run began) that holds one
    of `paths`, and each directory where a file or link is to be put back (the checkpoint had none there): the
    deepest first. One holding anything stays (rmdir removes only an empty directory), and so does one that a path
    to put back lies beneath."""
    needed = {d for p, entry in wanted.items() if entry is not None for d in _ancestors(p)}
    made = {d for p in paths for d in _ancestors(p)} - had
    in_the_way = {p for p in paths if wanted.get(p) is not None}
    for key in sorted((made | in_the_way) - needed, key=_depth, reverse=True):
        if undo_paths.remove(workspace, key, directory=True):
            done["dirs"].append(key)


def _ancestors(key: str) -> list[str]:
    parts = key.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _record(done: Restored, path: str, sha: str, st: os.stat_result, ok: bool) -> None:
    """A path put back: its entry as it now is (an owner or mode that could not be set is not claimed)."""
    done["changes"][path] = _stat_entry(sha, st)
    if not ok:
        done["attributes"].append(path)


def _overwrite(fd: int, name: str, data: bytes, want: Entry, owner: tuple[int, int] | None) -> Attributes:
    """Write over the file of one name there (it keeps its owner when this user cannot give it back); anything else
    found there is replaced. Returns whether the owner and mode are as wanted."""
    try:
        out = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return _replace(fd, name, data, want, owner)
    with os.fdopen(out, "wb") as f:
        st = os.fstat(out)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:  # another name would see the write: replaced
            return _replace(fd, name, data, want, owner)
        os.set_blocking(out, True)
        os.ftruncate(out, 0)
        f.write(data)
        f.flush()
        return _attributes(out, want, owner)


def _replace(fd: int, name: str, data: bytes, want: Entry, owner: tuple[int, int] | None) -> Attributes:
    """A new file renamed over `name`: a hard link, symlink or FIFO there is replaced, never written through."""
    tmp = f".sentinel-undo-{os.urandom(6).hex()}"
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                               dir_fd=fd), "wb") as f:
            f.write(data)
            f.flush()
            result = _attributes(f.fileno(), want, owner)
        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=fd)
        raise
    return result


def _settle(workspace: Path, path: str, want: JSON, done: Restored) -> None:
    """Put back the owner and mode of a file whose content is already what `want` holds."""
    try:
        fd = undo_paths.open_at(workspace, path, READ)
    except (OSError, OutsideRoot):
        return done["missing"].append(path)
    try:
        ok, st = _attributes(fd, want, None)
    finally:
        os.close(fd)
    _record(done, path, str(want[0]) if isinstance(want, list) else "", st, ok)


def _attributes(fd: int, want: JSON, owner: tuple[int, int] | None) -> Attributes:
    """Give the open file the owner and mode `want` records (an entry without an owner: `owner`, and only its
    permission bits); whether that was permitted (a chown takes root; the kernel drops a setgid bit for a group the
    user is not in), and the file's stat after."""
    assert isinstance(want, list)
    full = len(want) > 2
    mode = _int(want[1]) & (0o7777 if full else 0o777)
    owner = _owner(want) or owner
    st = os.fstat(fd)
    ok = True
    if owner is not None and (st.st_uid, st.st_gid) != owner:
        try:
            os.fchown(fd, *owner)  # before the mode: a chown clears setuid and setgid
        except OSError:
            ok = False
    with contextlib.suppress(OSError):
        os.fchmod(fd, mode)
    st = os.fstat(fd)
    return ok and stat.S_IMODE(st.st_mode) & (0o7777 if full else 0o777) == mode, st


def _blob(undo_dir: Path, sha: str) -> bytes | None:
    """A stored content, if its blob is a regular file no larger than any stored one (a FIFO or device planted as a
    blob is never waited on or read)."""
    try:
        fd = os.open(undo_dir / "blobs" / sha, READ)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        data = f.read(FILE_BYTES + 1)
    return data if len(data) <= FILE_BYTES else None


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


def undo_run(run_dir: Path, workspace: Path, to: int | None, listener: Listener | None = None,
             children: Sequence[Path] = ()) -> JSONObject:
    """Put the run's workspace back as it was after checkpoint `to` (0: before its first change; None: the one before
    the latest), holding the run's lease (Busy while another process executes it); the undo is itself a checkpoint,
    journaled in this run, so it can be undone too (`listener` hears its event). `children`: the run directories of
    the runs below this one that work in the same workspace (their leases are held too): what they changed is on
    the run's timeline, by time, and undone with it. Returns what `sentinel undo` prints: id, to, restored, removed,
    missing (among them kept, unstored and attributes), incomplete, and children (each child run whose changes
    after checkpoint `to` were undone: id, steps, incomplete)."""
    from sentinel.engine import records
    from sentinel.engine.run import Run
    from sentinel.engine.state import RunState

    with Run.open(run_dir) as run, contextlib.ExitStack() as leases:
        if listener is not None:
            run.listeners.append(listener)
        kids = []
        for child in children:
            leases.callback(os.close, Run.lease(child))  # Busy while a child executes: it may be changing files
            kids.append(track(child.name, child, RunState.load(child).workspace_steps))
        steps = run.state.workspace_steps
        target = to if to is not None else _previous(track(run_dir.name, run.dir, steps), kids)
        done = restore(run.dir, workspace, steps, target, kids)
        if done["changes"]:
            run.record(records.WorkspaceStep(call_id="", tool="undo", changes=done["changes"], undo=target))
    s = summary(done)
    return {"id": run_dir.name, "to": target, "restored": [*s["restored"]], "removed": [*s["removed"]],
            "missing": [*s["missing"]], "kept": [*s["kept"]], "unstored": [*s["unstored"]],
            "attributes": [*s["attributes"]], "incomplete": [*s["incomplete"]],
            "children": [{"id": c["id"], "steps": [*c["steps"]], "incomplete": [*c["incomplete"]]}
                         for c in done["children"]]}


def in_workspace(workspace: str, rows: Sequence[Mapping[str, object]]) -> tuple[list[str], list[str]]:
    """The ids of the runs among `rows` (a run's descendants, as the store has them) that work in `workspace`, whose
    changes its undo puts back too, and of those that work elsewhere, which it leaves to their own undo."""
    here: list[str] = []
    elsewhere: list[str] = []
    for row in rows:
        other = str(row.get("workspace") or "")
        same = bool(other) and (other == workspace or os.path.realpath(other) == os.path.realpath(workspace))
        (here if same else elsewhere).append(str(row["id"]))
    return here, elsewhere


def _previous(head: Track, kids: Sequence[Track]) -> int:
    """What a chat's /undo goes back to in a tree: when a child run changed the workspace after this run's last
    step, the checkpoint the workspace matched before that (the delegation is the last change); else as
    `previous_point`."""
    line = timeline([head, *kids])
    if line and line[-1][0] != 0:
        return point(head.steps, len(head.steps))
    return previous_point(head.steps)


def summary(done: Restored) -> Summary:
    changes = done["changes"]
    return {"restored": sorted(p for p, e in changes.items() if e is not None),
            "removed": sorted([*(p for p, e in changes.items() if e is None), *(f"{d}/" for d in done["dirs"])]),
            "missing": done["missing"], "kept": done["kept"], "unstored": done["unstored"],
            "attributes": done["attributes"], "incomplete": done["incomplete"]}
