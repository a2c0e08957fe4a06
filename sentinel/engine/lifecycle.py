"""The rules of a run's life that hold however it executes: local mode (`sentinel/local/engine.py`, in process)
and system mode (`sentinel/supervisor/ops/` and `children.py`, in a spawned worker) both apply these.

    outcome = promoted(store, outcome)          # a run waiting on a child that waits on an operator waits on it too
    parent = waiting_parent(store, run_id)      # the parent an ended run wakes
    check_cancellable(row); cancelled(store, run_id, "cancelled by alice")
    row = session_row(store, run_id); check_message(text); check_stoppable(row); stopped(store, run_id, why)

Only what hosts the run (a lease in this process, or the supervisor's worker) is left to each side.
"""

from __future__ import annotations

from dataclasses import replace

from sentinel.engine.api import Outcome
from sentinel.engine.status import TERMINAL, RunStatus
from sentinel.engine.rows import StoredRun
from sentinel.engine.store import Store
from sentinel.errors import UsageError


def promoted(store: Store, outcome: Outcome) -> Outcome:
    """A run waiting on a child whose descendants wait for an operator's approval is, to its operator, waiting
    for that approval: `approve` of it is the next step either way."""
    if outcome.status == RunStatus.WAITING_CHILD and (waited := store.waited_approvals(outcome.id)):
        return replace(outcome, status=RunStatus.WAITING_APPROVAL, approval_id=waited[0].id)
    return outcome


def waiting_parent(store: Store, run_id: str) -> str | None:
    """The parent that waits on a child, if this run has one: an end of this run wakes it."""
    parent = store.get_run(run_id).get("parent_id")
    if parent and store.get_run(parent)["status"] == RunStatus.WAITING_CHILD:
        return str(parent)
    return None


def check_cancellable(row: StoredRun) -> None:
    if row["status"] in TERMINAL:
        raise UsageError(f"run {row['id']} is already {row['status']}")


def cancelled(store: Store, run_id: str, error: str) -> None:
    """The run is cancelled for good: its approvals can never be used."""
    store.set_status(run_id, RunStatus.CANCELLED, error=error)
    store.cancel_approvals(run_id)


def session_row(store: Store, run_id: str) -> StoredRun:
    """The run, which must be a chat session (`send` and `interrupt` act on sessions only)."""
    row = store.get_run(run_id)
    if row.get("kind") != "chat":
        raise UsageError(f"run {row['id']} is not a chat session (`sentinel chats` lists them)")
    return row


def check_message(text: str) -> None:
    if not text.strip():
        raise UsageError("message: must not be empty")


def check_stoppable(row: StoredRun) -> None:
    if row["status"] in TERMINAL:
        raise UsageError(f"session {row['id']} is already {row['status']}")


def stopped(store: Store, run_id: str, error: str) -> None:
    """A session's turn was stopped: its approvals can never be used, and it waits for the next message."""
    store.cancel_approvals(run_id)
    store.set_status(run_id, RunStatus.IDLE, error=error)
