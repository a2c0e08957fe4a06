"""Whether a command deletes more than the request allows: the `wide_delete` safeguard.

    allowed = targets("Delete every .tmp file in the workspace. Keep all the other files.")   # ["*.tmp"]
    overreach(command, allowed)     # "rm *": the part of the command that could delete a file to keep

Asked to delete the `.tmp` files and keep the rest, the default model ran a command that deleted every file.
When the request says to delete some files (by extension, `*.x` pattern or name) and to keep others, a `rm`,
`unlink` or `find ... -delete` / `-exec rm` whose targets are not all among those is refused before it runs.
Other commands (a script, `mv`) are not read: this catches the common slip, it is no sandbox.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from typing import Collection

_DELETE = re.compile(r"\b(?:delete|remove|erase)\b", re.IGNORECASE)
# Where a request starts saying which files must survive: "keep", "preserve", "except", "do not touch",
# "without changing", "leave ... alone|untouched|as it is|in place". A file name's dots are no sentence's end
# ("leave config.yaml untouched").
_SPARE = (r"\b(?:keep|keeping|preserve|preserving|retain|retaining|except|excluding|other than|apart from|but not|"
          r"(?:do not|don't|never|without) (?:touch(?:ing)?|delet(?:e|ing)|remov(?:e|ing)|eras(?:e|ing)|chang(?:e|ing)|"
          r"modif(?:y|ying)|overwrit(?:e|ing)|edit(?:ing)?))\b")
_KEEP = re.compile(_SPARE + r"|\bleave\b(?:[^.!?;]|\.(?=\w))*?\b(?:alone|as (?:they|it) (?:are|is)|untouched|"
                   r"unchanged|in place)\b", re.IGNORECASE)
_EXTENSION = re.compile(r"(?<![\w*])\.([A-Za-z0-9]{1,8})\s+files?\b", re.IGNORECASE)  # "every .tmp file"
_GLOB = re.compile(r"(?<!\S)[`'\"]?(\*\.[A-Za-z0-9]{1,8})\b")                          # "*.tmp"
_NAME = re.compile(r"(?<![\w.*/])[\w][\w-]*\.[A-Za-z0-9]{1,8}\b")                     # "old.log"
_PUNCTUATION = ";&|()\n"  # what separates simple commands: `;`, `&&`, `||`, `|`, `&`, a subshell, a new line


def targets(request: str) -> list[str]:
    """The patterns a deleting request allows (`*.tmp`, `old.log`), from the part that asks to delete; empty
    when the request does not both delete and keep."""
    deleting = _DELETE.search(request)
    if deleting is None or not _KEEP.search(request):
        return []
    clause = re.split(r"(?<=[.!?;])\s|\bbut\b|\bleave\b|" + _SPARE, request[deleting.start():], maxsplit=1,
                      flags=re.I)[0]
    found = [f"*.{m.group(1)}" for m in _EXTENSION.finditer(clause)] + _GLOB.findall(clause)
    found += [m.group(0) for m in _NAME.finditer(clause) if f"*{m.group(0)}" not in found]
    return list(dict.fromkeys(found))


# where the words about keeping end: a sentence's or clause's end, or `and`/`then` not followed by a file name
# ("keep a.txt and b.txt" goes on; "keep the rest and append done to notes.txt" stops before `and`)
_KEPT_END = re.compile(r"[.!?;](?:\s|\Z)|,|\bthen\b|\band\b(?!\s+[`'\"]?[\w-]+\.[A-Za-z0-9]{1,8}\b)", re.IGNORECASE)


def kept(request: str) -> str:
    """The request's words about what to keep ("keep current.log", "leave the .cfg files untouched"), each to where
    its clause ends; empty when it says nothing of keeping."""
    return " ".join(_kept_phrases(request))


def _kept_phrases(request: str) -> list[str]:
    out = []
    for m in _KEEP.finditer(request):
        rest = request[m.start():]
        end = _KEPT_END.search(rest, m.end() - m.start())
        out.append(rest[:end.start()] if end else rest)
    return out


def outside_kept(request: str) -> str:
    """The request without its words about keeping (`kept`)."""
    for phrase in _kept_phrases(request):
        request = request.replace(phrase, " ")
    return request


def overreach(command: str, allowed: list[str], spared: Collection[str] = ()) -> str | None:
    """The first deleting part of `command` that could delete a file none of `allowed` matches, or one of
    `spared` (the files the request's keep words name: "Delete the .log files except current.log"), or None."""
    if not allowed:
        return None
    for words in commands(command):
        program = words[0].rsplit("/", 1)[-1] if words else ""
        if program in ("rm", "unlink"):
            operands = _operands(words[1:])
            if not operands or not all(_allowed(w, allowed, spared) for w in operands):
                return " ".join(words)
        elif program == "find" and _find_deletes(words):
            names = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-name", "-iname")]
            negated = any(w in ("!", "-not", "-o", "-or") for w in words)
            if negated or not names or not all(_allowed(n, allowed, spared) for n in names):
                return " ".join(words)
    return None


def commands(command: str) -> list[list[str]]:
    """The simple commands of a shell line, as words; a line that does not split is one word list of its own."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=_PUNCTUATION)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    out: list[list[str]] = [[]]
    for token in tokens:
        if set(token) <= set(_PUNCTUATION):
            out.append([])
        elif not out[-1] and token in ("sudo", "command", "exec", "nice"):
            continue  # the program after them is the one that runs
        else:
            out[-1].append(token)
    return [words for words in out if words]


def _operands(args: list[str]) -> list[str]:
    operands, options = [], True
    for arg in args:
        if options and arg == "--":
            options = False
        elif not (options and arg.startswith("-") and arg != "-"):
            operands.append(arg)
    return operands


def _find_deletes(words: list[str]) -> bool:
    return "-delete" in words or any(w in ("-exec", "-execdir", "-ok") and i + 1 < len(words)
                                     and words[i + 1].rsplit("/", 1)[-1] in ("rm", "unlink")
                                     for i, w in enumerate(words))


def _allowed(operand: str, allowed: list[str], spared: Collection[str] = ()) -> bool:
    """Whether deleting `operand` (a name or a glob) deletes only what the request allows: it matches an allowed
    pattern and could match no spared file."""
    name = operand.rstrip("/").rsplit("/", 1)[-1]
    if not name or name in (".", "..", "*"):
        return False
    hits_spared = any(fnmatch.fnmatchcase(base, name) or base == name for base in (s.rsplit("/", 1)[-1] for s in spared))
    return not hits_spared and any(fnmatch.fnmatchcase(name, p) or name == p for p in allowed)
