"""What joins a chat session's conversation before its next turn runs: the user's message, and with it the
skills the user attached and the model they switched to.

    begin_turn(run, home, "next message", skills=["file-discipline"], model="fake/m")

A turn the operator stopped (Ctrl-C) may have left tool calls without a result; each gets one now, saying
it was cancelled, so every call still has exactly one result before the next model call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from sentinel.agents import skills as skill_files
from sentinel.engine import records as rec
from sentinel.engine.run import Run

CANCELLED = "Cancelled: the operator stopped this turn before this call ran."
CANCELLED_RUNNING = ("Cancelled: the operator stopped this turn while this call ran; it was not re-run. "
                     "Check its effects before trying again.")


def skill_records(home: Path, names: Sequence[str]) -> list[rec.Record]:
    """One user message per attached skill (a user message, since some chat templates refuse a late system
    message); a skill that does not exist becomes a warning, never a lost turn."""
    records: list[rec.Record] = []
    for name in dict.fromkeys(names):
        found = skill_files.get(name, home)
        if found is None:
            records.append(rec.Warned(message=f"skill {name!r} not found; not attached"))
            continue
        text = f"[Skill attached by the operator: {found.name}]\n\n{found.body}"
        records.append(rec.Message(message={"role": "user", "content": text}, skill=found.name))
    return records


def begin_turn(run: Run, home: Path, text: str, *, skills: Sequence[str] = (), model: str | None = None) -> None:
    state = run.state
    for call in state.open_calls():
        result = CANCELLED_RUNNING if call.id in state.started else CANCELLED
        run.record(rec.Finished(call_id=call.id, result=result, interrupted=True))
    if model and model != state.model:
        run.record(rec.Model(model=model))
    fresh = [name for name in skills if name not in state.skills]
    run.record(*skill_records(home, fresh), rec.Message(message={"role": "user", "content": text}))
