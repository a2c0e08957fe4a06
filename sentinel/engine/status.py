"""A run's and an approval's status: the values the store's `runs.status` and `approvals.status` columns,
`status` journal records and `--json` output hold.

Both are `str` enums, so a status compares equal to, hashes like and serializes as its plain string: JSON, the
database and old journals see exactly what they saw before.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    RUNNING = "running"
    WAITING_APPROVAL = "waiting_approval"   # a tool call waits for an operator
    WAITING_CHILD = "waiting_child"         # a tool call (or a workflow step) waits for its child run
    IDLE = "idle"                           # a chat session between turns: it waits for the next message
    INTERRUPTED = "interrupted"             # nobody executes it any more (a crash, a stop): resumable
    DONE = "done"                           # answered, and the harness checked every clause of its contract
    DONE_UNVERIFIED = "done_unverified"     # answered, but a clause (or the whole task) was not checked
    FAILED = "failed"
    CANCELLED = "cancelled"


class ApprovalStatus(StrEnum):
    PENDING = "pending"        # waits for a person
    APPROVED = "approved"      # a person approved it; the call has not run yet
    CONSUMED = "consumed"      # approved, and its call ran (an approval is consumed exactly once)
    DENIED = "denied"
    EXPIRED = "expired"        # nobody decided in time, or the hook that asked gave up
    CANCELLED = "cancelled"    # its run was cancelled first


# An approval in one of these let its call run (or will).
APPROVED: frozenset[ApprovalStatus] = frozenset({ApprovalStatus.APPROVED, ApprovalStatus.CONSUMED})

# A run in one of these never runs again.
TERMINAL: frozenset[str] = frozenset({RunStatus.DONE, RunStatus.DONE_UNVERIFIED, RunStatus.FAILED, RunStatus.CANCELLED})
# A run in one of these ended with an answer (its `output`); only `done` was checked by the harness.
ANSWERED: frozenset[str] = frozenset({RunStatus.DONE, RunStatus.DONE_UNVERIFIED})
# A run that stopped for now or for good: nothing runs until someone sends, resumes or starts it.
SETTLED: frozenset[str] = TERMINAL | {RunStatus.IDLE}
