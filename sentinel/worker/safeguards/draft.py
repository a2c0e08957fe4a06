"""The contract drafted by the model: one structured call before the task's first step, merged with the derived one.

    drafted, why = draft.ask(model, request, workspace)    # the model's clauses (None, and why, when it gave none)
    merged = draft.merge(derived, drafted, workspace)      # adds checks, never removes one the task's words made

The call asks for the same clause types the derivation makes (create, change, delete, keep, pass, answer) under a
JSON schema: `response_format` `json_schema`, which the model host turns into a llama.cpp grammar for a local model
and an OpenAI-compatible upstream enforces itself, so the reply is the schema's object or the call failed. What the
model says is a proposal of what to check, never a verdict: every clause it adds is checked by the harness against
the workspace and the journal like the derived ones. The merge is conservative:

- a path is taken only when it names a place inside the workspace (resolved, not read as text: `../x`, `/etc/x`
  and empty names are dropped);
- `create` of a file that exists already becomes `change` (it must differ from what the run found), so naming a file
  that is there proves nothing;
- `change` of a file that does not exist is dropped (there is nothing to compare with);
- `delete` adds patterns only when the task's words made none (the derived `keep` list is never shrunk), and a
  pattern matching a file the task keeps is dropped; `keep` adds files that exist and no delete pattern matches;
- `pass` is taken when the task's words named no command and it is grounded in the workspace (it runs a script
  that is there, a target its Makefile has, a test runner whose project file is there: `answer.grounded`), never a
  command whose success says nothing of the work (`true`, `:`, `exit 0`, `echo …`, `test -e …`); the harness never
  runs it: it looks for the model's own run of it, after the last change, exiting 0 (`answer.passed`);
- `answer` adds an answer clause, which is never checked (the run then ends `done_unverified`), only when nothing
  else in the contract is checkable: beside a file or command the harness checks it would mark every run of a model
  that drafts one unverified, for nothing the harness could do; a question the task itself asks is derived from
  its words.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from sentinel.jsontypes import JSONObject

from sentinel.models import ModelClient, ModelError
from sentinel.worker.safeguards import answer as answers
from sentinel.worker.safeguards.contract import Contract, _checks, _digest, _files, _matches

ITEMS, CHARS = 6, 120  # at most this many paths per clause, this many characters per string
_PATHS: JSONObject = {"type": "array", "items": {"type": "string", "maxLength": CHARS}, "maxItems": ITEMS}
_TEXT: JSONObject = {"type": "string", "maxLength": CHARS}
FIELDS = ("create", "change", "delete", "keep", "pass", "answer")
SCHEMA: JSONObject = {
    "type": "object", "additionalProperties": False, "required": list(FIELDS),
    "properties": {"create": _PATHS, "change": _PATHS, "delete": _PATHS, "keep": _PATHS, "pass": _TEXT,
                   "answer": _TEXT},
}
FORMAT: JSONObject = {"type": "json_schema", "json_schema": {"name": "contract", "schema": SCHEMA}}
# The longest reply the schema allows, a token per character at worst, and the JSON around it: the budget fits the
# schema, so a reply is never cut off inside it.
MAX_TOKENS = 4 * ITEMS * (CHARS + 4) + 2 * (CHARS + 4) + 64
LISTED = 40  # workspace files shown to the model

PROMPT = """Before doing a task, state what it asks for, as JSON with these keys:
- "create": files the task asks to produce (new files),
- "change": existing files the task asks to modify,
- "delete": files or patterns (like *.tmp) the task asks to delete,
- "keep": existing files the task says must stay,
- "pass": a command the task says must succeed afterwards ("" if none),
- "answer": what the task asks you to tell ("" if it asks for no answer).
Use only names from the task and the workspace listing; leave a list empty when the task does not ask for it.
Do not do the task: only describe it."""


@dataclass(frozen=True)
class Draft:
    """The model's clauses, as the schema's object (checked, not trusted: merge() decides what counts)."""

    create: list[str] = field(default_factory=list)
    change: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)
    command: str = ""  # the schema's `pass`
    answer: str = ""


def ask(model: ModelClient, request: str, workspace: Path) -> tuple[Draft | None, str | None]:
    """The model's clauses for `request`, as the schema's object; (None, why) when the call or its reply failed."""
    listing = _files(workspace)[:LISTED]
    files = "\n".join(f"- {name}" for name in listing) or "(empty)"
    messages: list[JSONObject] = [{"role": "system", "content": PROMPT},
                {"role": "user", "content": f"Task:\n{request}\n\nWorkspace files:\n{files}"}]
    try:
        # the ModelClient protocol names no request options; the clients a run gets (openai_compat, through Muzzle)
        # take them, and one that does not is a TypeError: the derived contract stands
        reply = model.complete(messages, [], response_format=FORMAT, max_tokens=MAX_TOKENS)  # type: ignore[call-arg]
    except (ModelError, TypeError) as exc:
        return None, f"the draft call failed: {answers.short(str(exc), 120)}"
    return parse(reply.content)


def parse(text: str) -> tuple[Draft | None, str | None]:
    """The draft as the schema's object, or (None, why): a reply that is not it is not used at all."""
    try:
        value = json.loads(text)
    except ValueError:
        return None, f"the draft is not JSON: {answers.short(text, 80)}"
    if not isinstance(value, dict) or set(value) - set(FIELDS):
        return None, "the draft is not the contract's object"
    lists = {k: value.get(k) or [] for k in FIELDS[:4]}
    if not all(isinstance(v, list) and all(isinstance(i, str) for i in v) for v in lists.values()):
        return None, "the draft's lists are not lists of names"
    texts = {k: value.get(k) or "" for k in FIELDS[4:]}
    if not all(isinstance(v, str) for v in texts.values()):
        return None, "the draft's pass and answer are not text"
    names = {k: [i.strip() for i in v if i.strip()][:ITEMS] for k, v in lists.items()}
    return Draft(names["create"], names["change"], names["delete"], names["keep"], texts["pass"].strip()[:CHARS],
                 texts["answer"].strip()[:CHARS]), None


def inside(workspace: Path, name: str) -> str | None:
    """`name` as a path relative to the workspace when it names a place inside it; None otherwise."""
    if not name or "\0" in name or os.path.isabs(name):
        return None
    rel = os.path.normpath(name)
    return None if rel == "." or rel == ".." or rel.startswith("../") else rel


def merge(derived: Contract, drafted: Draft, workspace: Path) -> Contract:
    """`derived` with the model's clauses added, conservatively (the module's docstring says how)."""
    create, change, added = list(derived.create), dict(derived.change), []
    for name in filter(None, (inside(workspace, n) for n in drafted.create)):
        if name in create or name in change:
            continue
        if (found := _digest(workspace / name)) is not None:
            change[name] = found
            added.append(f"change {name}")
        elif not os.path.lexists(workspace / name):
            create.append(name)
            added.append(f"create {name}")
    for name in filter(None, (inside(workspace, n) for n in drafted.change)):
        if name not in change and name not in create and (found := _digest(workspace / name)) is not None:
            change[name] = found
            added.append(f"change {name}")
    delete, keep = list(derived.delete), list(derived.keep)
    if not delete:
        patterns = [p for p in (d.strip().removeprefix("./") for d in drafted.delete)
                    if p and "/" not in p and p not in ("*", "*.*")]
        delete = patterns
        added += [f"delete {p}" for p in patterns]
    present = set(_files(workspace))
    for name in filter(None, (inside(workspace, n) for n in drafted.keep)):
        if name in present and name not in keep and not _matches(name, delete):
            keep.append(name)
            added.append(f"keep {name}")
    command, checks = derived.command, derived.checks
    if command is None and (said := drafted.command) and answers.grounded(answers.command_words(said), workspace):
        command, checks = said, _checks(said, workspace)
        added.append(f"pass `{said}`")
    asked = derived.answer
    checkable = create or change or delete or command
    if asked is None and (said := drafted.answer) and not checkable:
        # an answer is no check: drafted beside a deliverable the harness checks, it would only make the run
        # unverifiable (a small model adds one to "Create hello.txt containing hi"); the task's own question is
        # derived from its text, never from the draft
        asked = said
        added.append(f"answer: {said}")
    return replace(derived, create=create, change=change, delete=delete, keep=keep, command=command, answer=asked,
                   drafted=[*derived.drafted, *added], checks=checks)
