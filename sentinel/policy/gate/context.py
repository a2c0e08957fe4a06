"""The session context accumulator (docs/gate.md): a rolling summary of the agent's session, updated on Stop.

Reads the transcript entries added since the last checkpoint, compacts them, and when
at least `context.min_events` new events exist asks the model to merge them into the
previous summary (at most `context.summary_max_words` words). The result,
`<state>/sessions/<id>/summary.json`, feeds `{{session_context}}` of `post: true`
info rules. Priority P2 on the GPU lock: waits up to `context.lock_timeout_s`, then
skips and catches up at the next Stop.
"""

from __future__ import annotations

import json
import os

from sentinel.jsontypes import JSONObject
from sentinel.policy.gate import transcript as tx
from sentinel.policy.gate.config import GateConfig, GatePaths
from sentinel.policy.gate.engine import read_summary
from sentinel.policy.gate.judges import JudgeError, JudgeSource, Request
from sentinel.policy.gate.lock import LockTimeout, priority_lock
from sentinel.policy.gate.prompts import SUMMARY, SUMMARY_SYSTEM, check
from sentinel.policy.gate.rules import GPU_BACKENDS

CALL_TIMEOUT_S = 30.0


def _load(path: str) -> JSONObject:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _count(data: JSONObject, key: str) -> int:
    value = data.get(key)
    return int(value) if isinstance(value, (int, float)) else 0  # our own file: a count, or nothing yet


def _save(path: str, data: JSONObject, beneath: str | None) -> None:
    from sentinel.pathwalk import replace_beneath

    replace_beneath(beneath, path, json.dumps(data).encode())  # no link followed in the repository


def prompt(previous: str, events: list[str], max_words: int) -> str:
    return (f"PREVIOUS SUMMARY:\n{previous or '(none yet)'}\n\nNEW EVENTS:\n{tx.budget(events, 6000)}\n\n"
            f"Write the updated summary in at most {max_words} words.")


def accumulate(cfg: GateConfig, paths: GatePaths, session_id: str, transcript_path: str | None,
               judges: JudgeSource) -> str:
    """Update the session summary; returns what happened: disabled | waiting | skipped | failed | updated."""
    ctx = cfg.context
    if not ctx["enabled"]:
        return "disabled"
    sdir = paths.session_dir(session_id)
    checkpoint = _load(os.path.join(sdir, "checkpoint.json"))
    entries, next_index = tx.read_entries(transcript_path, _count(checkpoint, "entries"))
    events = tx.compact(entries)
    if len(events) < ctx["min_events"]:
        return "waiting"
    backend = ctx["backend"] or cfg.backend
    model = ctx["model"]
    lock = paths.lock_file(session_id) if backend in GPU_BACKENDS else None
    request = Request(SUMMARY_SYSTEM, prompt(read_summary(sdir), events, ctx["summary_max_words"]), SUMMARY, model,
                      timeout_s=CALL_TIMEOUT_S, temperature=0.1, max_tokens=ctx["summary_max_words"] * 3)
    try:
        with priority_lock(lock, "accumulator", float(ctx["lock_timeout_s"]), beneath=paths.root):
            answer = check(SUMMARY, judges.get(backend).complete(request))
    except LockTimeout:
        return "skipped"
    except (JudgeError, ValueError):
        return "failed"
    total = _count(_load(os.path.join(sdir, "summary.json")), "events") + len(events)
    try:
        _save(os.path.join(sdir, "summary.json"), {"summary": str(answer["summary"]).strip(), "events": total,
                                                   "session_id": session_id}, paths.root)
        _save(os.path.join(sdir, "checkpoint.json"), {"entries": next_index}, paths.root)
    except OSError:  # a link put in the session directory's way, a full disk: nothing written through it
        return "failed"
    return "updated"
