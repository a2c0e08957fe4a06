"""The pre-call guards: small rules the loop asks before a tool call is decided, each refusing one kind of harm.

    refusal = before(Seen(messages, known, request, kind, workspace), call)   # None: decide and run the call
    why = repeating(messages)                                                 # None: the run is not going in circles

A rule returns a Refusal (the safeguard's kind and detail, and the result the call gets instead of running) or None.
Each is a general rule, not a phrase: the same call twice (`duplicate_call`), replacing a file the run never read
whole (`unread_overwrite`), changing a file while the request is a question (`unasked_change`), deleting beyond what
the request's delete-and-keep allows (`wide_delete`). A refused call is never decided: no one is asked to approve it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection

from sentinel.jsontypes import JSON, JSONObject
from sentinel.models.base import ToolCall, tool_calls
from sentinel.tools import decode_arguments
from sentinel.worker import deletes
from sentinel.worker.safeguards import answer

DUPLICATE = ("[sentinel note] This is the same call with the same arguments as the call just before it, so it was "
             "not run again: the result above is that call's. Do something different: the next step, or your "
             "final answer.")
UNREAD = ("Error: not written: {path} exists and you have not read it whole in this task, and this call replaces "
          "the whole file, so its current content would be lost. To add to its end, call write_file with "
          '"append": true. To change part of it, read it with read_file, then use edit_file (or write_file with '
          "the whole new content).")
UNASKED = ("Error: not changed: {path} was kept, because the task is a question and asks for no change. Answer "
           "it from what you read.")
WIDE = ("Error: not run: `{part}` could delete files the task says to keep; it allows deleting only {allowed}. "
        "Delete exactly those, for example `rm -- {example}` or `find . -name '{example}' -delete`.")
WIDE_SPARED = ("Error: not run: `{part}` could delete files the task says to keep; it allows deleting only {allowed}, "
               "and never {spared}. List the files first, then delete each by its name: `rm -- NAME1 NAME2`.")
FILE_TOOLS = ("write_file", "edit_file")
LOOP_REPEATS = 4  # the same tool calls this many turns in a row stop the run
# A command's `> FILE` (not `>>`, `2>`, `&>` or `>&2`): it replaces FILE whole.
REDIRECT = re.compile(r"(?<![>&\d])>\s*['\"]?([\w][\w./-]*)")


@dataclass(frozen=True)
class Seen:
    """What the guards know of the run: its conversation, the workspace paths it read or wrote whole (from the
    journal), the request it works on, its kind, and its workspace."""

    messages: list[JSONObject]
    known: Collection[str]
    request: str
    kind: str
    workspace: Path


@dataclass(frozen=True)
class Refusal:
    kind: str
    action: str                 # the safeguard's action: `refused`, or `deduplicated`
    detail: str                 # one line for the operator
    result: str                 # what the call gets instead of running
    duplicate: bool = False     # its `finished` record marks it a duplicate


def duplicate(seen: Seen, call: ToolCall) -> Refusal | None:
    """The same call with the same arguments as the call just before it gets that call's result, with a note (not
    when that result was an interruption, which asks to check and try again)."""
    before = call_before(seen.messages, call.id)
    if before is None or signature([before]) != signature([call]):
        return None
    earlier = next((m.get("content") for m in reversed(seen.messages)
                    if m.get("role") == "tool" and m.get("tool_call_id") == before.id), None)
    if not isinstance(earlier, str) or earlier.startswith(("Error: this call was interrupted", "Cancelled:")):
        return None
    earlier = earlier.split(f"\n\n{DUPLICATE}")[0]
    return Refusal("duplicate_call", "deduplicated", f"{call.name} with the same arguments as the call just before "
                   "it: not run again", f"{earlier}\n\n{DUPLICATE}", duplicate=True)


def unread_overwrite(seen: Seen, call: ToolCall) -> Refusal | None:
    """A write_file (not an append), or a command's `> FILE`, that would replace a workspace file the run has not
    read whole nor written whole itself: a small model writes what it imagines a file holds, or replaces a
    three-line file with the one line it was asked to add. `known` comes from the journal, so a compaction that
    dropped the read from the conversation does not make the file unread."""
    name = call.name
    if name not in ("write_file", "bash"):
        return None
    args = arguments(call)
    if name == "write_file" and args.get("append") is True:
        return None  # adds to the file: nothing is lost
    paths = [str(args.get("path") or "")] if name == "write_file" else REDIRECT.findall(str(args.get("command") or ""))
    for path in paths:
        key = workspace_path(seen.workspace, path)
        try:
            if key is None or not (seen.workspace / key).is_file():
                continue
        except OSError:
            continue
        if key not in seen.known:
            return Refusal("unread_overwrite", "refused", f"{name} {path}: it exists and the run has not read it",
                           UNREAD.format(path=path))
    return None


def unasked_change(seen: Seen, call: ToolCall) -> Refusal | None:
    """A write_file or edit_file while the request is a question: the default model, asked which version a file
    sets, changed the version and answered with the new one."""
    name = call.name
    if name not in FILE_TOOLS or seen.kind == "hook" or not answer.asks_question(seen.request):
        return None
    path = str(arguments(call).get("path") or "") or "the file"
    return Refusal("unasked_change", "refused", f"{name} {path}: the request is a question and asks for no change",
                   UNASKED.format(path=path))


def wide_delete(seen: Seen, call: ToolCall) -> Refusal | None:
    """A command that could delete files the request says to keep ("Delete every .tmp file. Keep all the other
    files." answered with `find . -type f -delete`)."""
    if call.name != "bash" or seen.kind == "hook":
        return None
    allowed = deletes.targets(seen.request)
    if not allowed:
        return None
    spared = answer.named_files(deletes.kept(seen.request))
    part = deletes.overreach(str(arguments(call).get("command") or ""), allowed, spared)
    if part is None:
        return None
    shown = ", ".join(allowed)
    # wide only because it reaches a file the keep words name: say which
    hit = [f for f in spared if deletes.overreach(part, allowed, [f])] if deletes.overreach(part, allowed) is None else []
    if hit:
        return Refusal("wide_delete", "refused", f"{answer.short(part, 120)}: the request deletes {shown} "
                       f"but keeps {', '.join(hit)}", WIDE_SPARED.format(part=part, allowed=shown, spared=", ".join(hit)))
    return Refusal("wide_delete", "refused", f"{answer.short(part, 120)}: the request deletes only "
                   f"{shown} and keeps the rest", WIDE.format(part=part, allowed=shown, example=allowed[0]))


GUARDS: tuple[Callable[[Seen, ToolCall], Refusal | None], ...] = (
    duplicate, unread_overwrite, unasked_change, wide_delete)


def before(seen: Seen, call: ToolCall) -> Refusal | None:
    """The first guard that refuses the call, in GUARDS' order; None when every one lets it through."""
    return next((refusal for guard in GUARDS if (refusal := guard(seen, call)) is not None), None)


def repeating(messages: list[JSONObject]) -> str | None:
    """Why the run goes in circles: the same tool calls LOOP_REPEATS turns in a row, or two sets of calls taking
    turns three times each; None otherwise."""
    turns = [signature(tool_calls(m)) for m in last_turns(messages, 2 * LOOP_REPEATS)]
    last = turns[-LOOP_REPEATS:]
    if len(last) == LOOP_REPEATS and len(set(last)) == 1:
        return f"the same tool call(s) {LOOP_REPEATS} turns in a row: {answer.short(last[0], 120)}"
    if len(turns) >= 6 and len(set(turns[-6:])) == 2 and turns[-6:] == turns[-2:] * 3:
        return (f"the same two turns taking turns three times: {answer.short(turns[-1], 120)} / "
                f"{answer.short(turns[-2], 120)}")
    return None


# -- reading calls ------------------------------------------------------------------------------------------------


def workspace_path(workspace: Path, path: str) -> str | None:
    """`path` as one spelling relative to the workspace (`./a.txt`, `a.txt` and `/ws/a.txt` are `a.txt`); None when
    it leaves the workspace or is empty."""
    if not path:
        return None
    full = Path(os.path.normpath(workspace / path))
    try:
        return str(full.relative_to(os.path.normpath(workspace)))
    except ValueError:
        return None


def canonical(raw: str) -> str:
    """A call's arguments in one spelling, so the same arguments compare equal however they were written."""
    try:
        value = decode_arguments(raw)
    except ValueError:
        return str(raw)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def call_before(messages: list[JSONObject], call_id: str) -> ToolCall | None:
    """The tool call the model asked for just before call `call_id`, searched from the end (where it is)."""
    found = False
    for message in reversed(messages):
        if message.get("role") != "assistant":
            continue
        for call in tool_calls(message)[::-1]:
            if found:
                return call
            found = call.id == call_id
    return None


def last_turns(messages: list[JSONObject], count: int) -> list[JSONObject]:
    """The last `count` model turns, oldest first, found from the end: a long run pays for these, not for all."""
    found: list[JSONObject] = []
    for message in reversed(messages):
        if message.get("role") == "assistant":
            found.append(message)
            if len(found) == count:
                break
    return found[::-1]


def signature(calls: list[ToolCall]) -> str:
    return "; ".join(f"{c.name} {canonical(c.arguments)}" for c in calls) or "(text)"


def arguments(call: ToolCall) -> JSONObject:
    """A call's arguments as an object ({} when they are not one): what the checks before a call read, decoded
    as the tool will decode them (twice-encoded included), so no spelling runs what a check did not see."""
    try:
        args: JSON = decode_arguments(call.arguments or "{}")
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}
