"""What a bash command line may write: the paths, from the same parse as its commands, or "unknown".

    written(text, root, cwd=None) -> Writes    .paths: where each write lands (sentinel.policy.landing), relative
                                               to the root or absolute; .why: non-empty when the set is unknown
    writes_nothing(text) -> bool               a cheap check without the parser: True only for a line of plain
                                               words whose every command is known read-only (`ls -la && git status`)

A line writes through the redirections of every simple command and compound command (`>`, `>>`, `>|`, `&>`,
`<>`; `>&2` and the like duplicate a descriptor and write nothing), and through the operands of the known
writers of WRITERS, at their write positions (`cp`'s destination, `dd of=`, `sed -i`'s files, ...). A
relative path is taken from the command's directory: the line's cwd, and every literal `cd DIR`/`pushd DIR`
before the command adds DIR as a possible base (a `cd` inside a subshell or a branch may or may not apply, so
every base seen so far is kept: more paths, never fewer).

The set is unknown (`why` says why) when the line's parse is not sure, a write position holds an expansion
(`$f`, a glob, `~`, find's `{}`, xargs' input), a `cd` goes somewhere the text does not say, or a command is
neither a known writer nor known read-only: an interpreter (`python3 x.py`, `node`, `bash script.sh`), a
build tool (`make`, `npm`), `patch`, `git apply`, `git checkout BRANCH`, an unknown program. Wrappers
(`env`, `sudo`, `timeout`, ...) are transparent: the parse yields the command they run.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook imports this module: no `typing` at run time
    from sentinel.policy.shell import Command

WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
READ_ONLY = frozenset({
    "ls", "cat", "grep", "egrep", "fgrep", "rg", "ag", "head", "tail", "wc", "echo", "printf", "pwd", "true",
    "false", ":", "test", "[", "which", "type", "whoami", "id", "date", "stat", "file", "du", "df", "cmp", "diff",
    "tree", "basename", "dirname", "realpath", "readlink", "cut", "tr", "sleep", "exit", "return", "ps", "uname",
    "hostname", "nproc", "free", "uptime", "md5sum", "sha1sum", "sha256sum", "sha512sum", "tac", "nl", "od",
    "hexdump", "column", "paste", "join", "comm", "fold", "fmt", "expand", "unexpand", "seq", "yes", "base64",
    "strings", "jq", "wait", "export", "unset", "set", "shopt", "local", "declare", "read",
    "popd", "dirs", "hash", "command", "builtin", "help", "history", "jobs", "printenv", "env", "nohup", "time",
    "nice", "ionice", "timeout", "stdbuf", "setsid", "sudo", "doas", "xargs", "busybox", "watch", "lsof", "pgrep",
    "locale", "getconf", "tty", "groups", "users", "who", "w", "last", "cal", "bc", "expr", "sum",
    "cksum", "b2sum", "look", "rev", "shuf", "numfmt",
})
# Wrappers whose options move the wrapped command elsewhere: what it writes is relative to an unknown place.
CHDIR_OPTIONS = {"env": ("-C", "--chdir"), "sudo": ("-D", "--chdir", "-R", "--chroot"), "doas": ("-C",)}
# Options that take the next word as their argument, per writer.
ARG_OPTIONS = {
    "cp": {"-t", "-S", "--suffix", "--target-directory"}, "mv": {"-t", "-S", "--suffix", "--target-directory"},
    "ln": {"-t", "-S", "--suffix", "--target-directory"},
    "install": {"-t", "-S", "--suffix", "--target-directory", "-m", "--mode", "-o", "--owner", "-g", "--group"},
    "truncate": {"-s", "--size", "-r", "--reference"}, "touch": {"-d", "--date", "-t", "-r", "--reference"},
    "mkdir": {"-m", "--mode"}, "shred": {"-n", "--iterations", "-s", "--size"}, "mkfifo": {"-m", "--mode"},
    "sed": {"-e", "--expression", "-f", "--file", "-l", "--line-length"},
    "sort": {"-o", "--output", "-k", "--key", "-t", "--field-separator", "-S", "--buffer-size", "-T",
             "--temporary-directory", "--parallel"},
}
EVERY_OPERAND = frozenset({"tee", "rm", "rmdir", "unlink", "touch", "mkdir", "shred", "truncate", "chmod", "chown",
                           "chgrp", "mkfifo", "mknod", "mv", "chattr", "setfacl", "flock"})
GIT_READ = frozenset({"status", "log", "diff", "show", "blame", "rev-parse", "ls-files", "ls-tree", "grep",
                      "describe", "shortlog", "cat-file", "rev-list", "help", "version", "whatchanged", "name-rev",
                      "for-each-ref", "show-ref", "check-ignore", "merge-base", "--version", "--help"})
GIT_META = frozenset({"commit", "add", "fetch", "branch", "tag", "remote", "notes", "update-ref", "gc", "push",
                      "config", "update-index"})  # they write under .git only
FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
_SED_RISKY = (re.compile(r"(?:^|[;{}\n])\s*[0-9,$]*\s*[wWe](?:\s|$)"),
              re.compile(r"s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1[gpIiMm0-9]*[we]"))
_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=:,./\- \t\n;&|]*$")  # no quote, expansion, glob, redirection or grouping
_SPLIT = re.compile(r"&&|\|\||[;&|\n]")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class Writes:
    __slots__ = ("paths", "why")

    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.why = ""

    @property
    def known(self) -> bool:
        return not self.why

    def unknown(self, why: str) -> None:
        if not self.why:
            self.why = why

    def __repr__(self) -> str:
        return f"Writes({sorted(self.paths)!r}, why={self.why!r})"


def writes_nothing(text: str) -> bool:
    """True when the line is plain words (no quote, `$`, glob, redirection, grouping) and each of its commands
    is known read-only and no wrapper: decided without importing the parser."""
    from sentinel.policy.shell import WRAPPERS

    if not _PLAIN.match(text):
        return False
    for segment in _SPLIT.split(text):
        words = segment.split()
        while words and _ASSIGN.match(words[0]):
            words.pop(0)
        if words and (words[0] in WRAPPERS or words[0] in ("cd", "pushd")
                      or operands(words, [False] * len(words)) != ([], "")):
            return False
    return True


def written(text: str, root: str, cwd: str | None = None) -> Writes:
    from sentinel.policy import shell

    out = Writes()
    text = text.strip()
    if not text:
        return out
    parsed = shell.parse(text)
    if not parsed.sure:
        out.unknown(f"the parse is not sure ({parsed.why})")
        return out
    bases = [os.path.normpath(os.path.join(root, cwd)) if cwd else os.path.normpath(root)]
    for target in parsed.redirects:
        _redirected(target, bases, root, out)
    for command in parsed.commands:
        _command(command, bases, root, out)
    return out


def _command(command: Command, bases: list[str], root: str, out: Writes) -> None:
    words = command.words[:command.nwords]
    dynamic = [command.open_at is not None and i >= command.open_at for i in range(len(words))]
    if command.open_at == len(command.words):  # xargs: its input becomes more operands
        words, dynamic = words + ["(xargs input)"], dynamic + [True]
    for target in command.redirects:
        _redirected(target, bases, root, out)
    name = words[0].rsplit("/", 1)[-1]
    if name in ("cd", "pushd"):
        return _cd(words, dynamic, bases, out)
    paths, why = operands(words, dynamic)
    if why:
        return out.unknown(why)
    for path in paths:
        _land(path, bases, root, out)


def _redirected(target: tuple[str, str, bool], bases: list[str], root: str, out: Writes) -> None:
    op, word, dynamic = target
    if op not in WRITE_REDIRECTS:
        return
    if dynamic:
        return out.unknown(f"a redirection to an expansion ({op} {word})")
    _land(word, bases, root, out)


def _cd(words: list[str], dynamic: list[bool], bases: list[str], out: Writes) -> None:
    args = [w for w in words[1:] if w not in ("-P", "-L", "-e", "-@", "--")]
    if len(args) != 1 or dynamic[-1] or args[0] in ("-", "") or args[0].startswith(("-", "+")):
        return out.unknown("a `cd` to a directory the text does not spell")
    bases.extend([os.path.normpath(os.path.join(b, args[0])) for b in bases])  # it may or may not apply later


def _land(path: str, bases: list[str], root: str, out: Writes) -> None:
    from sentinel.policy.landing import land

    if not path or "\x00" in path:
        return
    for base in bases if not os.path.isabs(path) else [root]:
        landing = land(root, os.path.join(base, path))
        out.paths.add(landing.path)
        if landing.others is None:
            out.unknown(f"{path}: it lands through /proc or /dev/fd, or on a file with a name (a hard link) "
                        "Sentinel cannot find")
        else:
            out.paths.update(landing.others)  # a write to one name writes every name of the file


def operands(words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    """(the paths this simple command writes, why they cannot be known: "" when they can)."""
    name = words[0].rsplit("/", 1)[-1]
    if name in CHDIR_OPTIONS and any(w.startswith(CHDIR_OPTIONS[name]) for w in words[1:]):
        return [], f"`{name}` runs its command in another directory"
    if name == "chroot":
        return [], "`chroot` runs its command in another root"
    if name == "git":
        return _git(words, dynamic)
    if name == "find":
        return _find(words, dynamic)
    if name == "sed":
        return _sed(words, dynamic)
    if name == "dd":
        return _dd(words, dynamic)
    if name == "sort":
        return _sort(words, dynamic)
    if name in ("bash", "sh", "dash", "zsh", "ksh") and _runs_string(words):
        return [], ""  # `bash -c STRING`: the parse yields the commands of the string
    if name in READ_ONLY:
        return [], ""
    if name in ("cp", "install", "ln"):
        found, why = _destination(name, words, dynamic)
        if not why and _hard_links(name, words):  # the new name writes through to the source: both are written
            sources, dyn = _operands(name, words, dynamic)
            if any(dyn):
                return [], f"`{name}` hard-links a source the text does not spell"
            found = sorted(set(found) | set(sources))  # every operand: the sources and the destination
        return found, why
    if name == "link":  # link FILE1 FILE2: FILE2 is a second name of FILE1
        found, dyn = _operands(name, words, dynamic)
        return ([], "`link` to a name the text does not spell") if any(dyn) else (found, "")
    if name in EVERY_OPERAND:
        found, dyn = _operands(name, words, dynamic)
        if name == "mv":
            extra, why = _destination(name, words, dynamic)
            if why:
                return [], why
            found += extra
        if name == "flock":
            found, dyn = found[:1], dyn[:1]
        if any(dyn) or any("{}" in w for w in found):
            return [], f"`{name}` writes a path the text does not spell"
        return found, ""
    return [], f"`{name}` is not known to write nothing (a program, an interpreter or a build tool)"


def _runs_string(words: list[str]) -> bool:
    for word in words[1:]:
        if not word.startswith(("-", "+")) or word in ("-", "--"):
            return False
        if not word.startswith("--") and "c" in word[1:]:
            return True
    return False


def _operands(name: str, words: list[str], dynamic: list[bool]) -> tuple[list[str], list[bool]]:
    takes = ARG_OPTIONS.get(name, frozenset[str]())
    found: list[str] = []
    flags: list[bool] = []
    i, options = 1, True
    while i < len(words):
        word = words[i]
        if options and word == "--":
            options = False
        elif options and word.startswith("-") and len(word) > 1 and not dynamic[i]:
            i += 1 if word in takes else 0
        else:
            found.append(word)
            flags.append(dynamic[i])
        i += 1
    return found, flags


def _hard_links(name: str, words: list[str]) -> bool:
    """`ln` without -s, or `cp -l`/`--link`: the command makes a second name of its source, and a write to the
    new name writes the source."""
    flags = [w for w in words[1:] if w.startswith("-") and not w.startswith("--") and w != "-"]
    if name == "ln":
        return "--symbolic" not in words and not any("s" in f[1:] for f in flags)
    return name == "cp" and ("--link" in words or any("l" in f[1:] for f in flags))


def _destination(name: str, words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    """cp/install/ln: the `-t DIR` directory, else the last operand (ln with one operand: its basename here)."""
    for i, word in enumerate(words):
        if word in ("-t", "--target-directory") and i + 1 < len(words):
            return ([], f"`{name} -t` to an expansion") if dynamic[i + 1] else ([words[i + 1]], "")
        if word.startswith("--target-directory="):
            return ([], f"`{name} -t` to an expansion") if dynamic[i] else ([word.partition("=")[2]], "")
    found, dyn = _operands(name, words, dynamic)
    if name == "install" and any(w in ("-d", "--directory") for w in words):
        return ([], "`install -d` to an expansion") if any(dyn) else (found, "")
    if not found:
        return [], ""
    if dyn[-1] or "{}" in found[-1]:
        return [], f"`{name}` writes to a destination the text does not spell"
    if name == "ln" and len(found) == 1:
        return [found[0].rstrip("/").rsplit("/", 1)[-1]], ""
    return [found[-1]], ""


def _git(words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    i = 1
    if i < len(words) and words[i].startswith("-") and words[i] not in ("--version", "--help"):
        return [], f"`git {words[i]}` (a global option) may work elsewhere"
    if i >= len(words):
        return [], ""
    if dynamic[i]:
        return [], "`git` runs a subcommand the text does not spell"
    sub = words[i]
    if any(w.startswith(("--output", "-o")) for w in words[i + 1:]) and sub in GIT_READ:
        return [], f"`git {sub} --output` writes a file"
    if sub in GIT_READ:
        return [], ""
    if sub in GIT_META:
        return [".git"], ""
    rest, rest_dyn = words[i + 1:], dynamic[i + 1:]
    if sub in ("checkout", "restore") and "--" in rest:
        at = rest.index("--")
        if any(rest_dyn[at + 1:]):
            return [], f"`git {sub} --` of an expansion"
        return [".git", *rest[at + 1:]], ""
    if sub in ("rm", "mv"):
        found = [w for w, d in zip(rest, rest_dyn) if not w.startswith("-") or d]
        if any(rest_dyn):
            return [], f"`git {sub}` of an expansion"
        return [".git", *found], ""
    return [], f"`git {sub}` may write any file of the work tree"


def _find(words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    """find: its start directories when it deletes (-delete), the file of -fprint; -exec is parsed as a command."""
    if any(dynamic):
        return [], "`find` with an expansion in its expression"
    found: list[str] = []
    for i, word in enumerate(words):
        if word.startswith("-fprint") or word == "-fls":
            if i + 1 < len(words):
                found.append(words[i + 1])
    if "-delete" in words:
        starts = []
        for word in words[1:]:
            if word.startswith(("-", "(", ")", "!")):
                break
            starts.append(word)
        found.extend(starts or ["."])
    return found, ""


def _sed(words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    """sed -i: its files; sed without -i writes only through a `w`/`e` command of its script (unknown then)."""
    in_place = any(w.startswith("--in-place") or (w.startswith("-") and not w.startswith("--") and "i" in w[1:]
                                                   and w not in ARG_OPTIONS["sed"]) for w in words[1:])
    scripts = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-e", "--expression")]
    found, dyn = _operands("sed", words, dynamic)
    if not scripts and not any(w in ("-f", "--file") or w.startswith("--expression=") for w in words) and found:
        scripts, found, dyn = [found[0]], found[1:], dyn[1:]
    if any(rx.search(s) for s in scripts for rx in _SED_RISKY) or any(w in ("-f", "--file") for w in words):
        return [], "a sed script that may write (`w`, `e`) or is read from a file"
    if not in_place:
        return [], ""
    if any(dyn):
        return [], "`sed -i` of an expansion"
    return found, ""


def _dd(words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    for word, dyn in zip(words[1:], dynamic[1:]):
        if word.startswith("of="):
            return ([], "`dd of=` an expansion") if dyn else ([word[3:]], "")
    return [], ""


def _sort(words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    for i, word in enumerate(words):
        if word in ("-o", "--output") and i + 1 < len(words):
            return ([], "`sort -o` an expansion") if dynamic[i + 1] else ([words[i + 1]], "")
        if word.startswith("--output="):
            return ([], "`sort -o` an expansion") if dynamic[i] else ([word.partition("=")[2]], "")
    return [], ""
