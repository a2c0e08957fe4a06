"""The callback envelope a hook session gets as its first message, and the fallback's concise summary.

    env = envelope(watcher, data, value, dedupe_key, now)    # exactly the envelope fields of docs/watchers.md
    summary(env, why="escalated (warning): needs a person")  # what the fallback relay delivers

`fire.operatorGoalFile` is read at fire time, every time, into `mode.operatorGoalRuntimeContext` (as
sentinel/tools/rootpath.py reads: as root, no link another user could have made is followed).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from sentinel.jsontypes import JSON, JSONObject
from sentinel.watchers.match import render_any
from sentinel.watchers.spec import Watcher

GOAL_FILE_MAX = 20000
SUMMARY_VALUE_MAX = 300


def context(watcher: Watcher, data: JSON, value: JSON, now: float) -> JSONObject:
    """What templates (dedupeKey, payloadTemplate) can name: watcher, data, value, matchedAt."""
    return {"watcher": {"id": watcher.id, "eventName": watcher.eventName, "tags": [*watcher.tags]},
            "data": data, "value": value, "matchedAt": iso(now)}


def envelope(watcher: Watcher, data: JSON, value: JSON, dedupe_key: str, now: float) -> JSONObject:
    fire = watcher.fire
    mode: JSONObject = {"environment": fire.environment, "operatorGoal": fire.operatorGoal, "autonomy": fire.autonomy}
    if fire.operatorGoalFile:
        mode["operatorGoalRuntimeContext"] = _goal_file(Path(fire.operatorGoalFile).expanduser())
    payload = render_any(fire.payloadTemplate, context(watcher, data, value, now)) if fire.payloadTemplate else data
    match: JSONObject | None = watcher.match.model_dump() if watcher.match else None
    return {
        "watcher": {"id": watcher.id, "skillId": watcher.skillId, "eventName": watcher.eventName,
                    "strategy": watcher.strategy.type, "endpoint": watcher.endpoint, "tags": [*watcher.tags]},
        "trigger": {"matchedAt": iso(now), "dedupeKey": dedupe_key, "priority": watcher.priority},
        "mode": mode,
        "context": {"data": data, "value": value, "match": match},
        "payload": payload,
        "delivery": [t.public() for t in watcher.delivery],
    }


def obj(value: JSON) -> JSONObject:
    """An envelope's (or a firing's) part that is an object; anything else reads as an empty one."""
    return value if isinstance(value, dict) else {}


def _goal_file(path: Path) -> str:
    """Its text goes to the hook session: read as rootpath reads (as root, through no link another user could have
    made; a regular file only), at most GOAL_FILE_MAX characters."""
    from sentinel.tools import rootpath

    try:
        return rootpath.read_head(str(path), 4 * GOAL_FILE_MAX).decode(errors="replace")[:GOAL_FILE_MAX]
    except OSError as exc:
        return f"(operatorGoalFile {path} could not be read: {exc.strerror})"


def first_message(env: JSONObject) -> str:
    """The hook session's first message: the envelope itself, as JSON."""
    return json.dumps(env, indent=2, sort_keys=False, default=str)


def summary(env: JSONObject, why: str) -> str:
    w, t = obj(env.get("watcher")), obj(env.get("trigger"))
    value = json.dumps(obj(env.get("context")).get("value"), default=str)[:SUMMARY_VALUE_MAX]
    payload = json.dumps(env.get("payload"), default=str)[:SUMMARY_VALUE_MAX]
    return (f"[{w.get('id')}] {w.get('eventName')} matched at {t.get('matchedAt')} (priority {t.get('priority')}, "
            f"key {t.get('dedupeKey')}): value {value}; payload {payload}. No hook response: {why}.")


def iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")
