"""The contract of a task run: what the task asks for, made once from the task and the workspace as the run found
it, then checked by the harness against the workspace and the journal, never by the model's word.

    contract = derive(request, workspace)          # at the run's start: a `contract` journal record
    unmet = check(contract, workspace, passed)     # at its answer: the clauses the workspace does not meet

A clause is one of
- `create FILE`: the task asks to produce FILE (`Create notes.md`, `save its output to out.txt`): it must exist and
  not be empty (an empty answer file is no answer), and when it holds just a number, a tool must have printed that
  number (or the request holds it): a count written as 0 after the tool printed 7 is made up. A link counts only
  when it resolves inside the workspace to a regular file the run made (`ln -s /etc/os-release notes.md` does not);
- `change FILE`: a part of the task asks to modify something and names exactly one file that exists (`In config.ini
  set debug to false`, the `Fix the bug in calc.py` of "... and write a summary to summary.txt"), or the task asks
  for a change and names exactly one file that exists and no file to produce: FILE must differ from what the run
  found (a link, under the rule of `create`);
- `delete PATTERN` and `keep`: the task deletes some files and keeps the rest (`Delete every .tmp file. Keep the
  others.`): no file matching PATTERN remains, and every other file the run found is still there (whatever deleted
  them: `rm`, a script, `mv`) and holds what it held (`mv old.log current.log` deletes old.log and loses
  current.log), unless the request names the file outside its delete and keep words (`... and append a line to
  notes.txt`: `may_change`);
- `pass COMMAND`: the task says COMMAND must pass (a command it marks or the workspace grounds: answer.must_pass):
  a bash line run after the last change ran it as a command and exited 0 with its status (answer.passed); and
  when the run changed the files that decide whether it passes (its test file, its Makefile: `verifying`), the
  pass proves nothing (`rewritten`);
- `answer`: the task asks a question, or asks for nothing else the harness can check: its answer is the
  deliverable, and no check can say an answer is right, so this clause is never checked.
`unchecked(contract)` lists what the harness will not check (an `answer` clause; a `keep` clause over a workspace
too large to list; a part of the task that asks for something no clause checks: `deliverables`; a task with no
clause at all), and `unproven(contract, workspace)` what the workspace shows it did not (a copy, a rewritten
check): a run with any ends `done_unverified`, never `done`. `keep` covers every file, dot-directories included.
What the clauses cannot see: whether a file holds the right content (only that it exists, is not empty,
changed, or, kept, did not), and whether an answer is correct.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Collection

from sentinel.jsontypes import JSON, JSONObject
from sentinel.worker import deletes
from sentinel.worker.safeguards import answer

KEEP_MAX = 500  # files listed for a `keep` clause; a larger workspace leaves it unchecked
FOUND_MAX, FOUND_BYTES, FOUND_TOTAL = 200, 1 << 20, 8 << 20  # the files found at the start (non-empty, each at
# most FOUND_BYTES, FOUND_TOTAL in all) whose digests tell a copy


@dataclass(frozen=True)
class Contract:
    create: list[str] = field(default_factory=list)
    change: dict[str, str] = field(default_factory=dict)   # file -> sha256 of what the run found
    delete: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)          # files found that no delete pattern matches, or named kept
    command: str | None = None
    answer: str | None = None   # what the task asks to be told (never checked: an answer's truth is not seen)
    unlisted: str | None = None  # why a `keep` clause could not be made (the workspace too large to list)
    drafted: list[str] = field(default_factory=list)  # the clauses the model's draft added (safeguards/draft.py)
    found: dict[str, str] = field(default_factory=dict)  # file -> sha256 of the files the run found (up to FOUND_MAX)
    may_change: list[str] = field(default_factory=list)  # kept files the request names outside its delete/keep words
    unnamed: list[str] = field(default_factory=list)  # deliverables the task names that no clause checks, in words
    checks: dict[str, str] | None = None  # the files that decide whether `command` passes -> sha256 ("" absent)

    def clauses(self) -> list[str]:
        """Each clause in words, as `show` and the progress print them."""
        return ([f"create {f}" for f in self.create] + [f"change {f}" for f in self.change]
                + [f"delete {p}" for p in self.delete] + ([f"keep the other {len(self.keep)} file(s)"] if self.keep
                                                          else []) + ([f"pass `{self.command}`"] if self.command else [])
                + ([f"answer: {self.answer}"] if self.answer else []))

    def words(self) -> list[str]:
        """The clauses in words, those the model's draft added marked so."""
        drafted = set(self.drafted)
        return [f"{c} (drafted)" if c in drafted else c for c in self.clauses()]

    def part(self, drafted: bool) -> "Contract":
        """The clauses the model's draft added (`drafted`), or those the task's words made: the harness fails a run
        only on the second kind, and never sends the model back to satisfy its own reading of the task."""
        words = set(self.drafted)

        def pick(word: str) -> bool:
            return (word in words) == drafted

        return replace(self, create=[f for f in self.create if pick(f"create {f}")],
                       change={f: d for f, d in self.change.items() if pick(f"change {f}")},
                       delete=[p for p in self.delete if pick(f"delete {p}")],
                       keep=[f for f in self.keep if pick(f"keep {f}")],
                       command=self.command if self.command and pick(f"pass `{self.command}`") else None,
                       answer=self.answer if self.answer and pick(f"answer: {self.answer}") else None,
                       unlisted=None if drafted else self.unlisted)

    def to_dict(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> "Contract":
        def strings(value: JSON) -> list[str]:
            return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

        change = data.get("change")
        command = data.get("command")
        said, unlisted = data.get("answer"), data.get("unlisted")
        return cls(strings(data.get("create")),
                   {k: v for k, v in change.items() if isinstance(k, str) and isinstance(v, str)}
                   if isinstance(change, dict) else {},
                   strings(data.get("delete")), strings(data.get("keep")), command if isinstance(command, str) else None,
                   said if isinstance(said, str) else None, unlisted if isinstance(unlisted, str) else None,
                   strings(data.get("drafted")), _hashes(data.get("found")), strings(data.get("may_change")),
                   strings(data.get("unnamed")),
                   _hashes(checks) if isinstance(checks := data.get("checks"), dict) else None)


def _hashes(value: JSON) -> dict[str, str]:
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(value, dict) \
        else {}


def unproven(contract: Contract, workspace: Path) -> list[str]:
    """What the workspace shows the harness did not check, each as one line: a deliverable that is a copy
    (`copied`), a command that passed only after the run changed what decides whether it passes (`rewritten`), and
    files the run removed that the task does not ask to remove (`removed`)."""
    return copied(contract, workspace) + rewritten(contract, workspace) + removed(contract, workspace)


def removed(contract: Contract, workspace: Path) -> list[str]:
    """Files the run found that are gone and that no clause lets go: not matched by a delete pattern, not a file to
    change or create. "Fix the typo in notes.md" answered with the fix and `rm README.md` did what was asked and
    destroyed what was not: the work is not verified, whatever else held (the person reads which file, and `sentinel
    undo` brings it back). Seen for the files `found` holds (FOUND_MAX files of at most FOUND_BYTES, visible
    ones first); a move counts as a removal from where the task left the file."""
    gone = [name for name in contract.found if not os.path.lexists(workspace / name)
            and not _matches(name, contract.delete) and name not in contract.change and name not in contract.create
            and name not in contract.keep]  # a kept file that is gone already fails the run (`check`)
    if not gone:
        return []
    listed = ", ".join(gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
    return [f"the run removed {listed}, which the task does not ask to remove (`sentinel undo` puts "
            f"{'it' if len(gone) == 1 else 'them'} back)"]


def copies(contract: Contract, workspace: Path) -> list[str]:
    """`unproven`, under the name loop.py asks it by (it predates the rewritten-check lines)."""
    return unproven(contract, workspace)


def rewritten(contract: Contract, workspace: Path) -> list[str]:
    """The `pass` clause's files (the script or tests it runs, its Makefile, its runner's config: `verifying`) that
    the run changed, added or removed: a check the agent rewrote (`print('ok')` as test_calc.py) proves nothing of
    the work. A file the task asks to create is the work, not a check of it."""
    if contract.command is None or contract.checks is None:
        return []
    now = verifying(contract.command, workspace)
    moved = [f for f in dict.fromkeys([*contract.checks, *now]) if f not in contract.create
             and (_digest(workspace / f) or "") != contract.checks.get(f, "")]
    if not moved:
        return []
    listed = ", ".join(moved[:5])
    decides = "decides" if len(moved) == 1 else "decide"
    return [f"`{contract.command}` passed after the run changed {listed}, which {decides} whether it passes: the "
            "harness cannot tell the work from a rewritten check"]


def verifying(command: str, workspace: Path) -> list[str]:
    """The workspace files that decide whether `command` passes: the files it names (the script it runs, the test
    files it is given), its Makefile for `make`, and for a test runner its tests (under the paths it names, or
    anywhere) and config files; at most FOUND_MAX."""
    words = answer.command_words(command)
    if not words:
        return []
    name = answer.canon(words)
    head, args = name[0], [a for a in name[1:] if not a.startswith("-")]
    named = [a for a in ([head] if head not in answer.RUNNERS and head not in ("make", "python") else []) + args
             if _inside(a)]
    out = [a.split("::", 1)[0] for a in named if not (workspace / a).is_dir()]
    if head == "make":
        out += [m for m in ("GNUmakefile", "makefile", "Makefile") if (workspace / m).is_file()] or ["Makefile"]
    if head in answer.RUNNERS:
        under = [a.rstrip("/") + "/" for a in named if (workspace / a).is_dir()]
        patterns = answer.RUNNERS[head] + _CONFIG.get(head, ())
        for f in sorted(answer.listing(workspace)):
            base = f.rsplit("/", 1)[-1]
            if any(fnmatch.fnmatchcase(base, p) for p in patterns) and \
                    (not named or any(f.startswith(u) for u in under) or base in _CONFIG.get(head, ())):
                out.append(f)
    return list(dict.fromkeys(out))[:FOUND_MAX]


_CONFIG: dict[str, tuple[str, ...]] = {  # a runner's config files: they decide what it runs
    "pytest": ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"), "tox": ("tox.ini",),
    "npm": ("package.json",), "cargo": ("Cargo.toml",), "go": ("go.mod",)}


def _inside(name: str) -> bool:
    return bool(name) and not os.path.isabs(name) and name not in (".", "..") and not name.startswith("../")


def _checks(command: str | None, workspace: Path) -> dict[str, str] | None:
    return None if command is None else {f: _digest(workspace / f) or "" for f in verifying(command, workspace)}


def copied(contract: Contract, workspace: Path) -> list[str]:
    """The files the task asks to produce or change whose bytes are those of a file the run found: a copy (or the
    file left as another one was) shows nothing of the work asked for, so the harness has not checked it. "Write
    the largest number of numbers.txt to max.txt" answered by `cp numbers.txt max.txt` held every other clause."""
    if not contract.found:
        return []
    sources: dict[str, str] = {}
    for name, digest in contract.found.items():
        sources.setdefault(digest, name)
    out = []
    for name in [*contract.create, *contract.change]:
        now = _digest(workspace / name, follow=True)
        source = sources.get(now) if now is not None else None
        if source is not None and source != name:
            out.append(f"{name}: it holds exactly what {source} held when the run began, a copy the harness cannot "
                       "tell from the work asked for")
    return out


def unchecked(contract: Contract) -> list[str]:
    """What the harness will not check of this contract, each as one line: a run with any ends `done_unverified`."""
    checked = contract.create or contract.change or contract.delete or contract.command
    return ([f"the answer ({contract.answer}): no check can tell an answer is right"] if contract.answer else []) \
        + ([f"keep the other files: {contract.unlisted}"] if contract.unlisted else []) \
        + [f"part of the task ({line})" for line in (contract.unnamed if checked else [])] \
        + ([] if checked or contract.answer else ["the task: it names no file to create, change or delete and no "
                                                  "command that must pass"])


def derive(request: str, workspace: Path) -> Contract:
    # a file already there is never one to create: its existence proves nothing ("Write the largest number of
    # numbers.txt to max.txt" names its input after "write"), as the draft's merge has it
    create = [f for f in answer.outputs(request) if not os.path.lexists(workspace / f)]
    existing = answer.inputs(request, workspace)
    delete = deletes.targets(request)
    command = answer.must_pass(request, workspace)
    targets, unnamed = deliverables(request, workspace, bool(delete or command))
    if not create and len(existing) == 1 and answer.asks_for_change(request) and not answer.asks_question(request):
        targets = list(dict.fromkeys([*targets, existing[0]]))
    change = {f: d for f in targets if (d := _digest(workspace / f)) is not None}
    held = set(answer.named_files(deletes.kept(request)))
    # kept: every file no delete pattern matches, and the ones the keep words name although one does ("Delete the
    # .log files except current.log")
    keep = [p for p in _files(workspace) if not _matches(p, delete) or p in held] if delete else []
    may_change = [f for f in answer.named_files(request) if f in keep and f not in held]
    unlisted = f"the workspace has more than {KEEP_MAX} files" if delete and not keep and _crowded(workspace) else None
    return Contract(create, change, delete, keep, command,
                    answer.short(request, 80) if answer.asks_question(request) else None, unlisted,
                    found=_found(workspace), may_change=may_change, unnamed=unnamed,
                    checks=_checks(command, workspace))


# A part of a request that asks to modify something ("Fix the bug in calc.py", "and update the docs"): its
# imperative, at the start of a sentence or after `and`/`then` (after "In FILE," too). Verbs that make a new file
# are read by answer.outputs (create, write, save, convert, copy, ...), those that delete by deletes.targets.
_MODIFY = (r"(?:fix|change|edit|update|set|add|append|prepend|insert|replace|sort|modify|uncomment|comment out|"
           r"increment|decrement|bump|truncate|clear|refactor|rewrite|rename|remove|delete|correct|patch|adjust|"
           r"reformat|format|translate|clean up|tidy up|improve|optimi[sz]e|implement|upgrade|downgrade|repair)")
_VERB = _MODIFY + r"|create|write|save|generate|produce|make|output|export|put|copy|move|run|convert|keep|leave"
# a part ends at a sentence's end, or at `,`/`and`/`then` before another imperative ("Remove old.log, rewrite
# data.csv and create sub/new.txt"), not inside a list of things ("Add 1, 2 and 3 to nums.txt")
_PARTS = re.compile(r"(?<=[.!?;:])\s+|\n+|(?:,\s*(?:and\s+)?(?:then\s+|also\s+)?|\s+(?:and\s+then|and|then|also)\s+)"
                    r"(?=(?:please\s+)?(?:" + _VERB + r")\b)", re.IGNORECASE)
_OPENS = re.compile(r"\A\s*(?:(?:then|also|please|now|finally|first|next)\s*,?\s+)*"
                    r"(?:in\s+[`'\"]?[\w./-]+[`'\"]?,?\s+)?" + _MODIFY + r"\b", re.IGNORECASE)
_PRONOUN = re.compile(r"\s+(?:it|its|them|this|that|these|those)\b", re.IGNORECASE)  # a file named before
_PURPOSE = re.compile(r"\b(?:so that|so|such that|until|because|since|without|while|unless|except|but|keeping|"
                      r"leaving|making sure|to make)\b|" + deletes._SPARE, re.IGNORECASE)


def deliverables(request: str, workspace: Path, covered: bool) -> tuple[list[str], list[str]]:
    """The files the request's parts ask to modify, and, in words, the parts that ask to modify something no clause
    can check: a part that names no file ("and update the docs") unless a delete or pass clause is there to check
    it (`covered`), or several files it could mean. "Fix the bug in calc.py and write a summary to summary.txt"
    asks for two deliverables; the summary alone is half the task."""
    if answer.asks_question(request):
        return [], []
    made, kept_only = set(answer.outputs(request)), set(answer.named_files(deletes.kept(request)))
    targets: list[str] = []
    unnamed: list[str] = []
    for part in _PARTS.split(request):
        opens = _OPENS.match(part)
        if opens is None:
            continue
        body = _PURPOSE.split(part, maxsplit=1)[0]
        said = answer.short(body.strip().rstrip(".;:"), 80)
        named = [f for f in answer.named_files(body) if f not in made and f not in kept_only]
        files = [f for f in named if (workspace / f).is_file() and not (workspace / f).is_symlink()]
        if len(files) == 1:
            targets.append(files[0])
        elif files:
            unnamed.append(f"{said}: the harness cannot tell which of {', '.join(files[:4])} this changes")
        elif named:
            unnamed.append(f"{said}: {named[0]} is not in the workspace, so the harness has nothing to compare")
        elif not answer.named_files(body) and not covered and not _PRONOUN.match(part[opens.end():]):
            unnamed.append(f"{said}: it names no file the harness can check")
    return list(dict.fromkeys(targets)), unnamed


def check(contract: Contract, workspace: Path, passed: bool, printed: str | None = None,
          typed: Collection[str] | None = None) -> list[str]:
    """The clauses the workspace (and, for `pass`, the journal: `passed`) does not meet, each as one line.
    `printed`: the request and what the run's tools printed; a file to produce that holds just a number the model
    typed itself (`typed`: the files whose last change was a file tool's content; None: any) must hold one of theirs
    (None: not checked). A file a command wrote holds what the command computed (`… | wc -l > count.txt`).
    A directory to create must exist and hold something."""
    linked = {n: why for n in [*contract.create, *contract.change] if (why := _linked(contract, workspace, n))}
    unmet = list(linked.values())
    for name in contract.create:
        path = workspace / name
        if name in linked:
            continue
        if path.is_dir():
            if not any(path.iterdir()):
                unmet.append(f"{name} is an empty directory")
        elif not path.is_file():
            unmet.append(f"{name} does not exist")
        elif path.stat().st_size == 0:
            unmet.append(f"{name} is empty")
        elif printed is not None and (typed is None or name in typed) and \
                (number := _made_up(path, printed)) is not None:
            unmet.append(f"{name} says {number}, a number no tool printed: compute it with a tool and write what "
                         "it prints")
    for name, found in contract.change.items():
        if name not in linked and _digest(workspace / name, follow=True) == found:
            unmet.append(f"{name} is unchanged")
    if contract.delete:
        left = [p for p in _files(workspace) if _matches(p, contract.delete) and p not in contract.keep]
        if left:
            unmet.append(f"{', '.join(left[:5])} still exist{'s' if len(left) == 1 else ''}")
    if contract.keep:
        gone = [p for p in contract.keep if not os.path.lexists(workspace / p)]
        if gone:
            unmet.append(f"{', '.join(gone[:5])} {'was' if len(gone) == 1 else 'were'} to be kept and "
                         f"{'is' if len(gone) == 1 else 'are'} gone")
        changed = [p for p in contract.keep if p in contract.found and p not in contract.may_change
                   and p not in gone and _digest(workspace / p) != contract.found[p]]
        if changed:
            one = len(changed) == 1
            unmet.append(f"{', '.join(changed[:5])} {'was' if one else 'were'} to be kept as {'it was' if one else 'they were'}"
                         f" and {'has' if one else 'have'} changed")
    if contract.command and not passed:
        unmet.append(f"`{contract.command}` has not passed since the last change")
    return unmet


_BARE = re.compile(r"\A\s*(-?\d+(?:\.\d+)?)\s*\Z")
_TOKEN = re.compile(r"(?<![\w.])(?<!\w-)-?\d+(?:\.\d+)?(?![\w])(?!-\w)")


def _made_up(path: Path, printed: str) -> str | None:
    """The number a file holds when it holds just one that the request and the tools' output never showed (a
    count written as 0 after the tool printed 7); None otherwise. 80 and 80.0 are the same number."""
    try:
        found = _BARE.match(path.read_text(errors="replace")[:100])
    except OSError:
        return None
    if found is None:
        return None
    value = float(found.group(1))
    return None if any(float(t) == value for t in _TOKEN.findall(printed)) else found.group(1)


def _linked(contract: Contract, workspace: Path, name: str) -> str | None:
    """Why a file to create or change is no file the run made in the workspace, when it is not: it resolves outside
    the workspace (a link to /etc/os-release is not the notes asked for), or it is a link to something other than a
    regular file the run made or changed. None: it is a file of its own, or a link to such a file inside."""
    path, root = workspace / name, os.path.realpath(workspace)
    if not os.path.lexists(path):
        return None
    real = os.path.realpath(path)
    if real != root and not real.startswith(root + os.sep):
        return f"{name} is a link to {real}, outside the workspace, not a file the run made"
    if not path.is_symlink():
        return None
    target = os.path.relpath(real, root)
    if not os.path.isfile(real) or os.path.islink(real):
        return f"{name} is a link to {target}, not a regular file"
    if target in contract.found and _digest(Path(real)) == contract.found[target]:
        return f"{name} is a link to {target}, a file the run found and did not change"
    return None


def _digest(path: Path, follow: bool = False) -> str | None:
    """sha256 of a regular file; None for anything else (a link too, unless `follow`: a link is not a file's content
    of its own, and its target may lie outside the workspace)."""
    try:
        if not (path.is_file() and (follow or not path.is_symlink())):
            return None
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _files(workspace: Path) -> list[str]:
    """Every file of the workspace, dot-directories and links included (a `keep` clause keeps .config/settings.ini
    too), the visible ones first; [] when there are more than KEEP_MAX. No state of Sentinel's lives in a workspace
    (runs and their checkpoints are kept under SENTINEL_HOME). Left out: a version-control store (`.git`, `.hg`,
    `.svn` and what is below), whose files its tool adds and packs away as it works; the person's files it
    records are the working tree's, which are listed."""
    found: list[str] = []
    for root, dirs, names in os.walk(workspace):
        dirs[:] = [d for d in dirs if d not in answer.VCS_STORES]
        found += [os.path.relpath(os.path.join(root, n), workspace) for n in names]
        if len(found) > KEEP_MAX:
            return []
    return sorted(found, key=lambda f: (any(p.startswith(".") for p in f.split("/")), f))


def _found(workspace: Path) -> dict[str, str]:
    """sha256 of each file the run finds (at most FOUND_MAX files of at most FOUND_BYTES each: enough for the
    inputs of a task, and a large tree costs no more than that)."""
    found: dict[str, str] = {}
    budget = FOUND_TOTAL
    for name in _files(workspace)[:FOUND_MAX]:
        path = workspace / name
        try:
            size = path.lstat().st_size
            if not path.is_file() or path.is_symlink() or not 0 < size <= min(FOUND_BYTES, budget):
                continue
        except OSError:
            continue
        budget -= size
        digest = _digest(path)
        if digest is not None:
            found[name] = digest
    return found


def _crowded(workspace: Path) -> bool:
    return not _files(workspace) and any(os.scandir(workspace))


def _matches(path: str, patterns: list[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p) or name == p for p in patterns)


