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
  passes": `must_pass`, a command the request marks or the workspace grounds), the turn changed files, and no bash
  line run since the last change ran it as a command and exited 0 with its status (`passed`: `echo test_calc.py`
  and `python3 test_calc.py || true` do not);
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

import fnmatch
import json
import os
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection

import yaml

from sentinel.models.toolcalls import invented
from sentinel.policy import shell
from sentinel.worker import deletes

Node = Any  # untyped: a bashlex parse node (bashlex ships no types)

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


# -- a command the task says must pass -------------------------------------------------------------------------
# A command is taken from the request only when the request marks it as one (`backticks`, quotes) or its words name
# something real: `python3 X` / `bash X` / `./X` a file in the workspace (or one the request asks to create),
# `make T` a target of the workspace's Makefile, a test runner on PATH or whose project file is there. And only
# when a word about passing or failing stands next to it ("python3 test_calc.py fails", "make lint should pass"):
# "make sure everything still works" names no command, and "Set `timeout` to 30 ... so the service works" no check.
_MARKED = re.compile(r"`([^`\n]+)`|\"([^\"\n]+)\"|(?<!\w)'([^'\n]+)'(?!\w)")
_SHAPED = re.compile(r"(?<![\w./-])(?:python(?:3(?:\.\d+)?)?\s+(?:-m\s+)?[\w./-]+|(?:bash|sh)\s+[\w./-]+|\./[\w./-]+"
                     r"|py\.?test(?:\s+(?:-[\w-]+|[\w.:-]*(?:/|\.py)[\w./:-]*))*|make(?:\s+[\w.-]+)?"
                     r"|(?:npm|yarn|pnpm)\s+(?:run\s+)?test|go\s+test(?:\s+\./\S*)?|cargo\s+test|tox)(?![\w/-])")
_VERDICT = re.compile(r"\b(?:pass(?:es|ed|ing)?|succeed(?:s|ed|ing)?|work(?:s|ed|ing)?|fail(?:s|ed|ing|ures?)?|"
                      r"break(?:s|ing)?|broken|crash(?:es|ed|ing)?|errors?|green|exits?\s+(?:with\s+)?(?:code\s+|"
                      r"status\s+)?0)\b", re.IGNORECASE)
NEAR = 5  # words between a command and the word that says it must pass (or fails)
# Commands whose success says nothing of the work: never a check, however the task or the draft names them.
TRIVIAL = frozenset({"true", ":", "exit", "echo", "printf", "test", "[", "[[", "ls", "cat", "pwd", "sleep", "which",
                     "type", "command", "yes", "env", "printenv", "whoami", "date", "head", "tail", "wc", "stat",
                     "file", "id", "uname", "hostname"})
# Test runners, and the files that show a workspace is theirs.
RUNNERS: dict[str, tuple[str, ...]] = {
    "pytest": ("test_*.py", "*_test.py", "conftest.py", "pytest.ini"), "unittest": ("test*.py",),
    "tox": ("tox.ini",), "npm": ("package.json",), "yarn": ("package.json",), "pnpm": ("package.json",),
    "go": ("go.mod", "*_test.go"), "cargo": ("Cargo.toml",)}
INTERPRETERS = frozenset({"python", "bash", "sh", "zsh", "dash", "node", "ruby", "perl", "php", "Rscript", "lua"})
_PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?")
# Options that change what a run prints, not what it runs: a run with them still runs the command.
_QUIET: dict[str, frozenset[str]] = {
    "pytest": frozenset({"-q", "-qq", "-v", "-vv", "-vvv", "-s", "-x", "--quiet", "--verbose", "--exitfirst",
                         "--no-header", "-ra", "-rA", "--tb=short", "--tb=long", "--tb=line", "--tb=no",
                         "--color=no", "--color=yes"}),
    "python": frozenset({"-u", "-B"}), "unittest": frozenset({"-v", "-q", "-b", "-f"}),
    "make": frozenset({"-s", "--silent", "--no-print-directory"})}


def must_pass(request: str, workspace: Path) -> str | None:
    """The command the request says must pass: the first one it names that is grounded (above) with a word about
    passing or failing next to it; None when it names none."""
    marked = [(m.start(), m.end(), next(g for g in m.groups() if g is not None), True)
              for m in _MARKED.finditer(request)]
    shaped = [(m.start(), m.end(), m.group(0), False) for m in _SHAPED.finditer(request)
              if not any(a <= m.start() < b for a, b, _, _ in marked)]
    for start, end, text, is_marked in sorted(marked + shaped):
        words = command_words(text)
        if words and _near_verdict(request, start, end) and \
                (grounded(words, workspace, outputs(request)) or is_marked and _on_path(words)):
            return " ".join(text.split())
    return None


def _near_verdict(request: str, start: int, end: int) -> bool:
    before = request[:start].split()[-NEAR:]
    after = request[end:].split()[:NEAR + 1]
    return bool(_VERDICT.search(" ".join(before + after)))


def command_words(text: str) -> list[str]:
    """The words of `text` when it is one simple command with nothing the shell expands; [] otherwise."""
    parsed = shell.parse(text)
    trees = _trees(text) if parsed.sure and parsed.commands else []
    # the parse lists a wrapped command (`timeout 9 x`: x) and a script it reads (`./run.sh`) after the one that runs
    if len(trees) != 1 or getattr(trees[0], "kind", "") != "command" or parsed.commands[0].open_at is not None:
        return []
    command = parsed.commands[0]
    return command.words[:command.nwords]


def _trees(text: str) -> list[Node]:
    try:
        import bashlex  # type: ignore[import-untyped]  # untyped, as in sentinel.policy.shell
        return list(bashlex.parse(text))
    except Exception:  # bashlex raises parse errors, NotImplementedError and worse: all mean "not sure"
        return []


def _on_path(words: list[str]) -> bool:
    head = canon(words)[0]
    return head not in TRIVIAL and "/" not in words[0] and shutil.which(words[0]) is not None


def grounded(words: list[str], workspace: Path, made: Collection[str] = ()) -> bool:
    """Whether a command names something real: a script in the workspace (or one the request asks to create:
    `made`) that an interpreter runs, a target of its Makefile, a test runner whose project file is there (or that
    is on PATH). Never a command whose success says nothing of the work (`true`, `echo ok`, `test -e x`)."""
    if not words:
        return False
    name, base = canon(words), os.path.basename(words[0])
    head, args = name[0], [w for w in name[1:] if not w.startswith("-")]
    if head in TRIVIAL or base in TRIVIAL:
        return False
    if head == "make":
        return not args or args[0] in make_targets(workspace)
    if head in RUNNERS:
        return shutil.which(head) is not None or any(
            fnmatch.fnmatchcase(f.rsplit("/", 1)[-1], p) for f in listing(workspace) for p in RUNNERS[head])
    if base in shell.SHELLS or "/" in words[0]:  # `bash run.sh`, `./run.sh`: canon names the script
        return _real(workspace, head, made)
    if head == "python" or base in INTERPRETERS:  # `python3 x.py`, `node x.js`
        return bool(args) and _real(workspace, args[0], made)
    module = _python_module(words)  # `python3 -m mypkg`
    return bool(module) and (_real(workspace, f"{module}.py", made) or (workspace / module / "__main__.py").is_file())


def _python_module(words: list[str]) -> str:
    return words[2] if len(words) > 2 and _PYTHON.fullmatch(os.path.basename(words[0])) and words[1] == "-m" else ""


def _real(workspace: Path, name: str, made: Collection[str]) -> bool:
    return name in made or (workspace / name).is_file()


VCS_STORES = frozenset({".git", ".hg", ".svn"})  # a version-control tool's own store: no file of the person's


def listing(workspace: Path, most: int = 2000) -> list[str]:
    """The workspace's files, dot-directories included but VCS_STORES, up to about `most` (a large tree is cut,
    not skipped)."""
    found: list[str] = []
    for root, dirs, names in os.walk(workspace):
        dirs[:] = [d for d in dirs if d not in VCS_STORES]
        found += [os.path.relpath(os.path.join(root, n), workspace) for n in names]
        if len(found) > most:
            break
    return found


_TARGET = re.compile(r"^([^\s:#=][^:#=]*?)\s*::?(?!=)", re.MULTILINE)


def make_targets(workspace: Path) -> set[str]:
    """The targets the workspace's Makefile names (a rule's left side)."""
    for name in ("GNUmakefile", "makefile", "Makefile"):
        text = _read(workspace / name)
        if text is not None:
            return {t for m in _TARGET.finditer(text) for t in m.group(1).split()}
    return set()


def canon(words: list[str]) -> tuple[str, ...]:
    """A command as what it runs: `python3 -m pytest` is `pytest`, `bash run.sh` and `./run.sh` are `run.sh`,
    `python`/`python3.11` are `python`, paths normalised (`./x.py` is `x.py`); options kept in place."""
    words = _unwrap(list(words))
    if not words:
        return ("",)
    head, rest = os.path.basename(words[0]), words[1:]
    if _PYTHON.fullmatch(head):
        options = []
        while rest and rest[0].startswith("-") and rest[0] != "-m":
            options.append(rest.pop(0))
        if rest[:1] == ["-m"] and len(rest) > 1:
            return (rest[1], *options, *map(_norm, rest[2:]))
        return ("python", *options, *map(_norm, rest))
    if head in shell.SHELLS and rest and not rest[0].startswith("-"):
        return (_norm(rest[0]), *map(_norm, rest[1:]))
    if head in ("py.test", "pytest"):
        return ("pytest", *map(_norm, rest))
    return (_norm(words[0]) if "/" in words[0] else head, *map(_norm, rest))


def _norm(word: str) -> str:
    return word if word.startswith("-") or not word else os.path.normpath(word)


_PASSES_THROUGH = {"timeout": 1, "nohup": 0, "command": 0, "exec": 0}  # wrappers whose exit status is the command's


def _unwrap(words: list[str]) -> list[str]:
    while words and words[0] in _PASSES_THROUGH:
        rest = words[1:]
        while rest and rest[0].startswith("-"):
            rest = rest[1:]
        words = rest[_PASSES_THROUGH[words[0]]:]
    return words


def same(run: list[str], wanted: list[str]) -> bool:
    """Whether the command `run` runs `wanted`: the same command and arguments, read as `canon` reads them, give or
    take options that change only what it prints."""
    got, want = canon(run), canon(wanted)
    quiet = _QUIET.get(want[0], frozenset())
    return tuple(w for w in got if w not in quiet or w in want) == want


def status_commands(line: str, depth: int = 0) -> list[list[str]]:
    """The commands of a bash line whose success its exit status 0 proves: the last command, and those joined to it
    by `&&` (not one before a `||`, a `;`, a `&`, nor a pipe's left side without `set -o pipefail`, nor a `!`), in
    a subshell or brace group too, or in `bash -c` STRING. A line the parse is not sure of proves nothing, nor
    one that changes directory (its paths are read elsewhere)."""
    parsed = shell.parse(line)
    if not parsed.sure or depth > shell.MAX_DEPTH:
        return []
    if any(c.words[:1] in (["cd"], ["pushd"]) and c.words[1:c.nwords] not in ([], ["."]) for c in parsed.commands):
        return []
    pipefail = any(c.words[:1] == ["set"] and "pipefail" in c.words for c in parsed.commands)
    trees = _trees(line)
    nodes: list[Node] = []
    if trees:
        _certain(trees[-1], pipefail, nodes)
    out: list[list[str]] = []
    for node in nodes:
        if any(getattr(p, "kind", "") == "assignment" for p in node.parts):
            continue  # `PATH=… pytest` may run anything
        words = command_words(line[node.pos[0]:node.pos[1]])
        if len(words) > 2 and words[0] in shell.SHELLS and words[1] == "-c":
            out += status_commands(words[2], depth + 1)
        elif words:
            out.append(words)
    return out


def _certain(node: Node, pipefail: bool, out: list[Node]) -> None:
    kind = getattr(node, "kind", "")
    if kind == "command":
        out.append(node)
    elif kind == "pipeline":
        if node.parts and getattr(node.parts[0], "kind", "") == "reservedword":  # `! cmd`
            return
        commands = [p for p in node.parts if getattr(p, "kind", "") != "pipe"]
        for part in commands if pipefail else commands[-1:]:
            _certain(part, pipefail, out)
    elif kind == "list":
        parts = list(node.parts)
        if parts and getattr(parts[-1], "op", "") == ";":
            parts.pop()  # a terminator, not a separator
        ops = [getattr(p, "op", "") for p in parts[1::2]]
        for i, part in enumerate(parts[::2]):
            before = ops[i - 1] if i else ""
            if before != "||" and all(op == "&&" for op in ops[i:]):
                _certain(part, pipefail, out)
    elif kind == "compound" and node.list and getattr(node.list[0], "word", "") in ("(", "{"):
        inner = [p for p in node.list if getattr(p, "kind", "") != "reservedword"]
        if inner:
            _certain(inner[-1], pipefail, out)


def passed(command: str, since_change: tuple[tuple[str, str], ...]) -> bool:
    """Whether a bash call after the last change ran `command`, as a command, and exited 0 because it did: its
    line's exit status is that command's (see `status_commands`), and it ran the same words (see `same`). A line
    that only mentions the command (`echo running test_calc.py`, `cat test_calc.py`), or hides its status
    (`python3 test_calc.py || true`), does not count."""
    wanted = command_words(command)
    if not wanted:
        return False
    for ran, result in since_change:
        code = _EXIT.match(result)
        if code is not None and code.group(1) == "0" and any(same(w, wanted) for w in status_commands(ran)):
            return True
    return False


def _untested(text: str, turn: Turn) -> Problem | None:
    if not turn.changes or (command := must_pass(turn.request, turn.workspace)) is None:
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
