"""How control leaves the agent loop: one exception family, each exit carrying what the run's end records.

    LoopExit                      the loop stops; `status` is the run's status after it
    ├── Stopped(text)             the turn is over: a `status` record is journaled (a chat session: `idle`)
    │   ├── Finished              the model answered, every clause checked and held   -> done
    │   │   └── Unverified        answered, a clause not checked (error: which)       -> done_unverified
    │   ├── Failed                a limit, a safeguard, a model error (text: why)     -> failed
    │   └── Unavailable           the model host or upstream went away: resumable     -> interrupted
    └── Waiting(waits_for)        the run waits; what it waits for is journaled already
        ├── Paused                an operator must answer a call (an approval id)     -> waiting_approval
        └── WaitingChild          a call's child run or a workflow step must end      -> waiting_child

Two more are raised inside a step and never leave the loop: Corrected (the reply was sent back with a
correction: the model is asked again) and CodeChanged (a pinned tool's files changed: the call gets an
error result and never runs).
"""

from __future__ import annotations

from typing import ClassVar

from sentinel.engine.status import RunStatus


class LoopExit(Exception):
    status: ClassVar[RunStatus]


class Stopped(LoopExit):
    answered: ClassVar[bool] = False  # the text is the run's output; otherwise it says why there is none

    def __init__(self, text: str):
        super().__init__(text)
        self.output: str | None = text if self.answered else None
        self.error: str | None = None if self.answered else text


class Finished(Stopped):
    status = RunStatus.DONE
    answered = True


class Unverified(Finished):
    """The model answered, and the harness could not check all of what the task asks for: `why` says what."""

    status = RunStatus.DONE_UNVERIFIED

    def __init__(self, text: str, why: str):
        super().__init__(text)
        self.error = why


class Failed(Stopped):
    status = RunStatus.FAILED


class Unavailable(Stopped):
    status = RunStatus.INTERRUPTED


class Waiting(LoopExit):
    """`waits_for`: the approval id, or the child run's id."""

    def __init__(self, waits_for: str):
        super().__init__(waits_for)
        self.waits_for = waits_for


class Paused(Waiting):
    status = RunStatus.WAITING_APPROVAL


class WaitingChild(Waiting):
    status = RunStatus.WAITING_CHILD


class Corrected(Exception):
    """The model's reply was sent back with a correction (see sentinel/worker/safeguards/answer.py): ask it again."""


class CodeChanged(Exception):
    """A pinned tool's files no longer hash to what the decision (and any approval) saw."""
