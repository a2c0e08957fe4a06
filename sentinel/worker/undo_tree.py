"""A run tree's checkpoints on one timeline: each run of the tree as undo reads it, and its steps merged by time.

How undo of a run with child runs in the same workspace works is described in sentinel/worker/undo.py.
"""

from __future__ import annotations

import heapq
import os
from pathlib import Path
from typing import Mapping, NamedTuple, Sequence

from sentinel.engine.state import WorkspaceStep
from sentinel.worker.undo_record import UNDO, Base, UndoError, read_base


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
