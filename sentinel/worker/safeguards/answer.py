"""Whether a model reply without tool calls is a final answer: the loop's safeguards for small models.

    problem = check(text, Turn(known, changes, request, workspace))    # None: the reply is a final answer

A reply is not a final answer when it is
- `tool_call_as_text`: a tool call written as text (JSON, bare or fenced) that could not be recovered into a
  real call: a tool that does not exist, or a call that is not valid JSON;
- `empty_answer`: nothing at all;
- `plan_only`: a short reply that only says what to do next ("We need to find the name of the staging
  server.", "Let me check the file."): the default model, asked about something it had remembered, ended so;
- `missing_output`: the request names a file to produce (`Create notes.md ...`, `... save it to out.txt`) and
  that file is not in the workspace;
- `invalid_file`: the request asks for a change and a JSON, YAML or TOML file it names no longer parses (the
  default model replaced settings.json with `debug = false`);
- `untested_fix`: the request says a command must pass ("python3 test_calc.py fails. Fix ... so that the test
  passes"), the turn changed files, and no command run since the last change ran it with exit code 0;
- `unbacked_claim`: it says an action was done ("I created notes.md") while no tool call of this turn changed
  anything;
- `no_change`: the request asks for a change (it opens with an imperative like "Change", "Delete", "In
  config.ini set ...", or names a file to produce) and no tool call of this turn changed anything;
- `unread_input`: the request names a file that is in the workspace and no tool call of this turn named it (read
  it, edited it, ran a command on it): the answer (or the file written) was made up;
- `ungrounded_number`: after tool calls, the answer states a number (two digits or more) that appears nowhere in
  the conversation: not in the request, a call or a result (a sum the model made up instead of reading it);
- `denied_undone`: a call was denied and the task was not done (every call of the turn denied, or a change asked
  for and none made): the run ends `failed` at once, whatever the answer says;
- `unresolved_error`: the request asks for a file, or the reply claims an action, and the last tool call of the
  turn failed (a command's non-zero exit, a write or edit that was refused): nothing after it shows the work
  got done.
The loop feeds back the problem's `correction` and lets the model try again (a bounded number of times), then
ends the run `failed` with the problem's `failure`.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from sentinel.models.toolcalls import invented
from sentinel.worker import deletes

TOOL_AS_TEXT, EMPTY, MISSING_OUTPUT, UNBACKED = "tool_call_as_text", "empty_answer", "missing_output", "unbacked_claim"
UNRESOLVED, NO_CHANGE, UNGROUNDED, UNREAD = "unresolved_error", "no_change", "ungrounded_number", "unread_input"
INVALID, UNTESTED, PLAN = "invalid_file", "untested_fix", "plan_only"
DENIED = "denied_undone"

_CALL_TEXT = re.compile(r'\{\s*"(?:name|tool|tool_name)"\s*:\s*"([\w.-]+)"[^{}]*"(?:arguments|parameters|args)"')
_FILE = r"[\w][\w./-]*\.[A-Za-z0-9]{1,8}\b"
# "Create notes.md", "write a file called out.txt": the file right after a verb that makes one.
_MAKE = re.compile(r"\b(?:create|write|save|generate|produce|make|output|export|touch)\b(?:\s+(?!and\b|then\b)"
                   r"[\w'-]+){0,4}?\s+[`'\"]?(" + _FILE + ")", re.IGNORECASE)
# "save its output to out.txt", "convert data.csv to data.json", "rename a.txt to b.txt".
_INTO = re.compile(r"\b(?:to|into|as)\s+(?:a\s+(?:new\s+)?file\s+(?:called|named)\s+)?[`'\"]?(" + _FILE + ")",
                   re.IGNORECASE)
_INTO_VERBS = re.compile(r"\b(?:save|write|output|convert|rename|move|copy|export|redirect|store|dump|extract)",
                         re.IGNORECASE)
_CLAIM = re.compile(
    r"(?:\bI(?:'ve| have)?\b(?P<gap>[^.\n]{0,30}?)|\b(?:has|have) been\s+|\bwas successfully\s+|^\s*)"
    r"\b(?P<verb>created|wrote|written|saved|updated|edited|modified|deleted|removed|renamed|moved|appended|"
    r"overwrote|overwritten)\b", re.IGNORECASE | re.MULTILINE)
_NEGATION = re.compile(r"\b(?:not|never|cannot|unable)\b|n't\b", re.IGNORECASE)


@dataclass(frozen=True)
class Turn:
    """What the checks know of the turn the reply ends: the tools that exist, how many calls of this turn
    changed something, the request it answers (the task or the latest chat message), the workspace, and the
    last tool call's result when that call failed."""

    known: set[str]
    changes: int
    request: str
    workspace: Path
    last_error: str | None = None
    calls: int = 0       # tool results this turn
    evidence: str = ""   # the conversation's text: request, calls, results (what an answer can be grounded in)
    call_args: str = ""  # the arguments of this turn's tool calls
    denied: bool = False  # a call of this turn was denied (by policy or a person): the answer reports that
    since_change: tuple[tuple[str, str], ...] = ()  # (command, result) of each bash call after the last change
    ran: int = 0          # tool results this turn that were not denials


@dataclass(frozen=True)
class Problem:
    kind: str
    detail: str       # one line for the operator
    correction: str   # what the model reads before it tries again
    failure: str      # the run's error when the model keeps doing it
    final: bool = False  # no correction can mend it: the run ends `failed` at once


def check(text: str, turn: Turn) -> Problem | None:
    """The first rule of CHECKS the reply breaks, in order; None: it is a final answer."""
    return next((problem for rule in CHECKS if (problem := rule(text, turn)) is not None), None)


def _tools(turn: Turn) -> str:
    return ", ".join(sorted(turn.known))


def _tool_as_text(text: str, turn: Turn) -> Problem | None:
    names = invented(text, turn.known)
    if names:
        listed = ", ".join(names)
        return Problem(TOOL_AS_TEXT, f"the reply calls {listed} as text, and no such tool exists",
                       f"[sentinel] Your reply is a tool call written as text for {listed}, which does not exist, so "
                       f"nothing was done. The tools that exist are: {_tools(turn)}. Make a real call to one of "
                       "them (a file is created with write_file), or, if the task is complete, answer in plain words.",
                       f"the model answered with a call to a tool that does not exist ({listed}) instead of an answer")
    found = _CALL_TEXT.search(text)
    if found:
        return Problem(TOOL_AS_TEXT, f"the reply is a tool call ({found.group(1)}) that is not valid JSON",
                       "[sentinel] Your reply looks like a tool call but is not valid JSON, so nothing was done. "
                       f"Send exactly one JSON object, or a native tool call, with one of: {_tools(turn)}.",
                       f"the model answered with a tool call ({found.group(1)}) that is not valid JSON")
    return None


def _empty(text: str, turn: Turn) -> Problem | None:
    if text.strip():
        return None
    return Problem(EMPTY, "the reply was empty",
                   "[sentinel] Your reply was empty. If the task is complete, say in one or two sentences what you "
                   "did or found; otherwise make the next tool call.",
                   "the model gave an empty answer")


def _denied_undone(text: str, turn: Turn) -> Problem | None:
    """A call was denied (by policy or a person) and the task is not done: every call of the turn was denied, or the
    request asks for a change and none was made. The answer may report the denial honestly; the run is still not
    `done`, and no correction is sent (the way on is the operator's, not another try at what was denied)."""
    if not turn.denied or (turn.ran and (turn.changes or not asks_for_change(turn.request))):
        return None
    why = "every tool call was denied" if not turn.ran else "a tool call was denied and no change was made"
    return Problem(DENIED, f"{why}; the answer: {short(text, 100)}", "", f"{why}, so the task was not done "
                   f"(the model said: {short(text, 200)})", final=True)


def outputs(request: str) -> list[str]:
    """Files the request asks to produce, in order."""
    found = [m.group(1) for m in _MAKE.finditer(request)]
    if _INTO_VERBS.search(request):
        found += [m.group(1) for m in _INTO.finditer(request)]
    return list(dict.fromkeys(f.rstrip(".") for f in found))


# A reply that opens by announcing the next step: "We need to ...", "I'll check ...", "Let me look" (not "Let me
# know"), "First, I ...".
_PLAN = re.compile(r"\A\s*(?:(?:we|i)\s+(?:need|have|want|must|should)\s+to|(?:i|we)\s+will|i'll|we'll|"
                   r"i\s*'?a?m\s+going\s+to|let\s+me(?!\s+know)|let's|let\s+us|(?:first|next|now)\s*,?\s+(?:i\s+(?:will|need|must)|i'll|we'll|let))\b",
                   re.IGNORECASE)
PLAN_CHARS = 240  # longer replies usually carry the answer after the preamble


def _plan_only(text: str, turn: Turn) -> Problem | None:
    said = text.strip()
    if len(said) > PLAN_CHARS or not _PLAN.match(said):
        return None
    return Problem(PLAN, f"the reply only says what to do next: {short(said, 80)}",
                   "[sentinel] Your reply says what you would do next, but it is not an answer and nothing was done. "
                   "Do it now with a tool call (to look up something remembered earlier, call recall), then answer "
                   "with what you found.",
                   "the model described its next step instead of doing it or answering")


def _missing_output(text: str, turn: Turn) -> Problem | None:
    missing = [f for f in outputs(turn.request) if not (turn.workspace / f).exists()]
    if not missing:
        return None
    listed = ", ".join(missing)
    return Problem(MISSING_OUTPUT, f"the request asks for {listed}, which is not in the workspace",
                   f"[sentinel] The task asks for {listed}, but it does not exist in the workspace yet. Create it "
                   "with a tool call (write_file), then answer.",
                   f"the task asks for {listed} and it does not exist in the workspace")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")[:1 << 20] if path.is_file() else None
    except OSError:
        return None


def unparsable(workspace: Path, path: str) -> str | None:
    """Why `path` does not parse as the JSON, YAML or TOML its name says it holds; None when it does (or is
    another kind of file, or is not there)."""
    kind = Path(path).suffix.lower()
    if kind not in (".json", ".yaml", ".yml", ".toml") or (text := _read(workspace / path)) is None:
        return None
    try:
        if kind == ".json":
            json.loads(text)
        elif kind == ".toml":
            tomllib.loads(text)
        else:
            yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        return f"{path} is not valid {kind[1:].upper().replace('YML', 'YAML')}: {short(str(exc), 100)}"
    return None


def _invalid(text: str, turn: Turn) -> Problem | None:
    if not asks_for_change(turn.request):
        return None
    why = next((w for f in named_files(turn.request) if (w := unparsable(turn.workspace, f))), None)
    if why is None:
        return None
    return Problem(INVALID, why,
                   f"[sentinel] {why}. Read it with read_file, then write it again whole and valid, with the change "
                   "the task asks for, then answer.",
                   why)


def _unbacked(text: str, turn: Turn) -> Problem | None:
    if turn.changes or (claim := _claim(text)) is None:
        return None
    said = " ".join(text[claim.start():claim.end() + 40].split())
    return Problem(UNBACKED, f"the answer says {said!r} but no tool call changed anything",
                   f"[sentinel] You said you {claim.group('verb')} something, but no tool call in this task "
                   "changed anything, so it was not done. Make the tool call now (a file is created with "
                   "write_file), then answer.",
                   f"the answer claims an action ({claim.group('verb')}) that no tool call made")


def _claim(text: str) -> re.Match[str] | None:
    """The first claim of a change in `text` that is not negated ("I have not created ..." is none)."""
    return next((c for c in _CLAIM.finditer(text) if not _NEGATION.search(c.group("gap") or "")), None)


_EXIT = re.compile(r"\Aexit code: (-?\d+)")


def failed(result: str, changes_things: bool) -> bool:
    """Whether a tool result says the call failed: a command's non-zero exit or time-out, or an error from a tool
    that changes things (a read that found nothing is an answer, not a failure)."""
    code = _EXIT.match(result)
    if code:
        return code.group(1) != "0"
    return result.startswith("Error:") and (changes_things or result.startswith("Error: command timed out"))


def _unresolved(text: str, turn: Turn) -> Problem | None:
    if turn.last_error is None or not (outputs(turn.request) or _claim(text)):
        return None
    said = short(turn.last_error)
    return Problem(UNRESOLVED, f"the last tool call failed ({said}) and the reply ends the task",
                   f"[sentinel] Your last tool call failed: {said}. The task is not done. Fix the cause and "
                   "make the call again (there is `python3`, not `python`), or, if it cannot be done, say so "
                   "plainly.",
                   f"the last tool call failed ({said}) and the model ended without a call that worked")


def short(text: str, limit: int = 160) -> str:
    """`text` on one line, cut to `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


# An imperative that asks for a change, at the start of a sentence or after "In FILE" ("In config.ini change ...").
_CHANGE = re.compile(
    r"(?:\A|[.;:!?]\s+|\n)\s*(?:in\s+[`'\"]?[\w./-]+[`'\"]?,?\s+)?(?:please\s+)?"
    r"(?:change|edit|update|set|add|append|prepend|insert|delete|remove|rename|move|copy|fix|replace|create|write|"
    r"convert|sort|put|save|make|modify|uncomment|comment out|increment|decrement|bump|truncate|clear)\b",
    re.IGNORECASE)


def asks_for_change(request: str) -> bool:
    return bool(_CHANGE.search(request) or outputs(request))


# How a question opens ("Which version ...?", "How many ...?", "Is ...?"); "Can you fix ...?" asks for work.
_QUESTION = re.compile(r"\A\s*(?:what|which|who|whom|whose|where|when|why|how|is|are|was|were|does|do|did|has|"
                       r"have)\b", re.IGNORECASE)


def asks_question(request: str) -> bool:
    """The request only asks something: it opens like a question, ends with `?` and asks for no change."""
    text = request.strip()
    return text.endswith("?") and bool(_QUESTION.match(text)) and not asks_for_change(text)


def _no_change(text: str, turn: Turn) -> Problem | None:
    if turn.changes or turn.denied or not asks_for_change(turn.request):
        return None
    named = re.search(_FILE, turn.request)
    start = (f' Start by reading it: {{"tool": "read_file", "arguments": {{"path": "{named.group(0)}"}}}}'
             if named and (turn.workspace / named.group(0)).is_file() else "")
    return Problem(NO_CHANGE, "the request asks for a change and no tool call changed anything",
                   "[sentinel] The task asks you to change something, and no tool call has changed anything yet, "
                   "so it is not done. Make the change now with a tool (edit_file, write_file or bash: mv, cp, "
                   f"rm, sed), then answer.{start}",
                   "the task asks for a change and no tool call made one")


# A command the request says must pass: `python3 test_calc.py`, `pytest tests/x.py`, `make test`.
_CHECK = re.compile(r"\b(python3?\s+(?:-m\s+)?[\w./-]+"
                    r"|pytest(?:\s+(?:-[\w-]+|[\w.:-]*(?:/|\.py)[\w./:-]*))*"
                    r"|make(?:\s+[\w-]+)?|npm\s+test|go\s+test|cargo\s+test)")
_PASS = re.compile(r"\bpass(?:es|ing)?\b|\bsucceeds?\b|\bworks?\b", re.IGNORECASE)


def must_pass(request: str) -> str | None:
    """The command the request says must pass, when it says so."""
    found = _CHECK.search(request)
    return found.group(1).strip() if found and _PASS.search(request) else None


def passed(command: str, since_change: tuple[tuple[str, str], ...]) -> bool:
    """Whether a command run after the last change ran `command` (its script, for `python3 X.py`) and exited 0."""
    key = command.split()[-1] if command.startswith("python") else command  # the script, however it is run
    return any(key in ran and result.startswith("exit code: 0") for ran, result in since_change)


def _untested(text: str, turn: Turn) -> Problem | None:
    if not turn.changes or (command := must_pass(turn.request)) is None:
        return None
    if passed(command, turn.since_change):
        return None
    return Problem(UNTESTED, f"the request says `{command}` must pass and it has not passed since the last change",
                   f"[sentinel] The task says `{command}` must pass, and it has not been run since your last change. "
                   f"Run it now with bash (`{command}`) and read its output; if it fails, fix the cause and run it "
                   "again, then answer.",
                   f"the task says `{command}` must pass and the model did not show it passing")


# A number standing on its own: not part of an identifier (`CHILDANSWER-4242`, `r-93505405cd`, `f01`, `v2-rc`,
# `build_17`), whose digits claim no quantity.
_NUMBER = re.compile(r"(?<![\w.])(?<!\w-)-?\d[\d,]*(?:\.\d+)?(?![\w])(?!-\w)")


def _digits(token: str) -> str:
    return token.replace(",", "").lstrip("-").rstrip(".")


def ungrounded(text: str, evidence: str) -> list[str]:
    """Numbers of two digits or more in `text` that `evidence` never shows (ignoring thousands separators)."""
    seen = {_digits(m.group(0)) for m in _NUMBER.finditer(evidence)}
    plain = evidence.replace(",", "")
    found = []
    for m in _NUMBER.finditer(text):
        number = _digits(m.group(0))
        if len(number.replace(".", "")) >= 2 and number not in seen and number not in plain:
            found.append(m.group(0))
    return list(dict.fromkeys(found))


def _ungrounded(text: str, turn: Turn) -> Problem | None:
    if not turn.calls or not turn.evidence:
        return None
    numbers = ungrounded(text, turn.evidence)
    if not numbers:
        return None
    listed = ", ".join(numbers[:3])
    return Problem(UNGROUNDED, f"the answer states {listed}, which no request, call or result shows",
                   f"[sentinel] Your answer states {listed}, but no tool result shows that number. Do not guess: "
                   "compute or read it with a tool (bash: awk, wc, python3 -c ...), check its output, and answer "
                   "from that output.",
                   f"the answer states {listed}, which no tool result showed")


def named_files(request: str) -> list[str]:
    """Every file name the request mentions, in order."""
    return list(dict.fromkeys(m.group(0).rstrip(".") for m in re.finditer(_FILE, request)))


def inputs(request: str, workspace: Path) -> list[str]:
    """Files the request names that are in the workspace, in order; not the ones it names only to say they are kept
    ("Delete the .log files except current.log": current.log is no input to read or change)."""
    only_kept = set(named_files(deletes.kept(request))) - set(named_files(deletes.outside_kept(request)))
    return [f for f in named_files(request) if (workspace / f).is_file() and f not in only_kept]


def _unread(text: str, turn: Turn) -> Problem | None:
    made = outputs(turn.request)  # a file the request asks to produce is no input, even once it exists
    unread = [f for f in inputs(turn.request, turn.workspace) if f not in turn.call_args and f not in made]
    if not unread:
        return None
    listed = ", ".join(unread)
    return Problem(UNREAD, f"the request names {listed} and no tool call of this task opened it",
                   f"[sentinel] The task names {listed}, and you have not looked at it yet, so your answer is a "
                   f'guess. Read it first: {{"tool": "read_file", "arguments": {{"path": "{unread[0]}"}}}}, then '
                   "do the task from what it really contains.",
                   f"the task names {listed} and the model never opened it")


Rule = Callable[[str, Turn], "Problem | None"]
# The final-answer checks, in the order they are asked: the first that finds a problem is the one sent back.
CHECKS: tuple[Rule, ...] = (_tool_as_text, _empty, _denied_undone, _plan_only, _missing_output, _invalid, _unread,
                            _unbacked, _no_change, _unresolved, _untested, _ungrounded)
