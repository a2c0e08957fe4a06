"""Putting a workspace back as it was at a checkpoint: `restore`, and writing, linking or removing each path.

What undo puts back, what it keeps and how it stays beneath the workspace is described in sentinel/worker/undo.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path
from typing import Literal, Sequence, TypedDict

from sentinel.engine.state import WorkspaceStep
from sentinel.jsontypes import JSON, JSONObject
from sentinel.tools.fs import OutsideRoot
from sentinel.worker import undo_links, undo_paths
from sentinel.worker.undo_entries import UNSTORED, Entry, _differs, _int, _owner, _same, _stat_entry, _unstored, _valid
from sentinel.worker.undo_record import FILE_BYTES, READ, UndoError
from sentinel.worker.undo_tree import Track, timeline, track

Kind = Literal["absent", "file", "linked", "link", "other", "dir"]  # what a restore finds at a path
Attributes = tuple[bool, os.stat_result]  # whether a restored file's owner and mode are as recorded; its stat


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
