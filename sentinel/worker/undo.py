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

Where the code is, each module importing only those named before it: sentinel/worker/undo_paths.py keys paths and
reaches them beneath the workspace; undo_links.py keeps symlinks; undo_entries.py makes, checks and compares
entries; undo_record.py records the checkpoints (`Checkpoints`: the base manifest, the stat walk, the blobs);
undo_tree.py puts a run tree's steps on one timeline; undo_restore.py puts a workspace back (`restore`); and this
module undoes a run (`undo_run`), says which checkpoint an undo goes back to (`point`, `previous_point`), and is
where the rest of Sentinel imports undo from.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, TypedDict

from sentinel.engine.state import WorkspaceStep
from sentinel.jsontypes import JSONObject
from sentinel.worker.undo_record import Checkpoints, UndoError
from sentinel.worker.undo_restore import Restored, restore
from sentinel.worker.undo_tree import Track, in_workspace, timeline, track

if TYPE_CHECKING:
    from sentinel.engine.events import Listener

__all__ = ["Checkpoints", "Summary", "UndoError", "in_workspace", "point", "previous_point", "restore", "summary",
           "undo_run"]


class Summary(TypedDict):
    restored: list[str]
    removed: list[str]
    missing: list[str]
    kept: list[str]
    unstored: list[str]
    attributes: list[str]
    incomplete: list[int]


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
