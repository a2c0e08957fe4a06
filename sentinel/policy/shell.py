"""What a bash command line runs: every simple command, found by a real parse (bashlex), never by splitting text.

    parse(text) -> Parsed         .commands: [Command]; .sure: False when the parse cannot tell what runs
    may_run(text, runs) -> bool   a cheap pre-check: False only when no parse could yield a command holding all `runs`

A Command is one simple command as the shell runs it: quotes removed, whitespace collapsed, `VAR=x`
prefixes dropped, redirections kept after the words. Commands are found in lists, pipelines,
background jobs, subshells, brace groups, if/while/until/for bodies, functions, `$(…)`, backticks,
process substitutions, `bash -c`/`sh -c`, `su -c`, `runuser -c`, `script -c` and `sg GROUP` strings and
here-strings (parsed again), and behind the wrappers of WRAPPERS (`env`, `command`, `exec`, `nohup`, `sudo`,
`xargs`, `taskset`, `setpriv`, `unshare`, `systemd-run`, `bwrap`, ...), which yield both the wrapper's command
and the wrapped one. A word the shell expands (`$x`, `$(…)`, a glob, a brace list,
`~`) makes the command `open` from that word on: only the words before it are known.

The parse is not sure (`sure` False) when what runs cannot be read from the text: the line does not
parse (bashlex has no `case`, `[[ ]]`, `$((…))`, `time`), a command name is an expansion, `eval`,
`source`/`.`, `alias`, `trap`, a shell (or `at`, `batch`) reading a script from its input, or a here-document
whose body runs command substitutions.
"""

from __future__ import annotations

import re
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_CHARS = 16_000  # a longer line is not parsed (about 1 s of bashlex on a loaded machine): unsure, so judged
MAX_DEPTH = 4  # `bash -c "bash -c '…'"` nesting parsed before the line counts as unsure
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "busybox-sh"})
OPAQUE = frozenset({"eval", "source", ".", "alias", "trap", "fc", "coproc", "enable", "let"})
# wrapper -> (options taking an argument, positional words before the wrapped command)
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "setsid": (frozenset(), 0),
    "sudo": (frozenset({"-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host",
                        "-p", "--prompt", "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U",
                        "--other-user", "-R", "--chroot"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "xargs": (frozenset({"-I", "-i", "-n", "--max-args", "-P", "--max-procs", "-L", "--max-lines", "-s",
                         "--max-chars", "-d", "--delimiter", "-E", "-e", "-a", "--arg-file"}), 0),
    "flock": (frozenset({"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"}), 1),
    "busybox": (frozenset(), 0),
    "watch": (frozenset({"-n", "--interval", "-d", "--differences"}), 0),
    "strace": (frozenset({"-e", "-o", "-p", "-s", "-u"}), 0),
    "ltrace": (frozenset({"-o", "-e", "-p", "-s", "-u", "-n", "-a", "-A", "-D", "-F", "-l", "-L", "-x"}), 0),
    "valgrind": (frozenset(), 0),
    "catchsegv": (frozenset(), 0),
    "taskset": (frozenset(), 1),  # the mask (or, with -c, the CPU list)
    "chrt": (frozenset({"-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"}), 1),
    "numactl": (frozenset({"-i", "--interleave", "-m", "--membind", "-N", "--cpunodebind", "-C", "--physcpubind",
                           "-p", "--preferred", "-P", "--preferred-many"}), 0),
    "prlimit": (frozenset({"-p", "--pid", "-o", "--output"}), 0),
    "cpulimit": (frozenset({"-l", "--limit", "-p", "--pid", "-e", "--exe"}), 0),
    "cgexec": (frozenset({"-g"}), 0),
    "unbuffer": (frozenset(), 0),
    "setpriv": (frozenset({"--ruid", "--rgid", "--reuid", "--regid", "--euid", "--egid", "--groups", "--inh-caps",
                           "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label",
                           "--apparmor-profile", "--landlock-access", "--landlock-rule", "--seccomp-filter"}), 0),
    "nsenter": (frozenset({"-t", "--target", "-S", "--setuid", "-G", "--setgid"}), 0),
    "unshare": (frozenset({"-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd", "--propagation",
                           "--map-user", "--map-group", "--map-users", "--map-groups"}), 0),
    "runuser": (frozenset({"-u", "--user", "-g", "--group", "-G", "--supp-group", "-s", "--shell", "-w",
                           "--whitelist-environment"}), 0),
    "pkexec": (frozenset({"--user"}), 0),
    "run0": (frozenset({"-u", "--user", "-g", "--group", "--property", "--unit", "--description", "--slice", "--nice",
                        "-D", "--chdir", "--setenv"}), 0),
    "systemd-run": (frozenset({"-u", "--unit", "-p", "--property", "--description", "--slice", "-E", "--setenv",
                               "--uid", "--gid", "--nice", "--working-directory", "-M", "--machine", "-H", "--host",
                               "--on-active", "--on-boot", "--on-startup", "--on-unit-active", "--on-unit-inactive",
                               "--on-calendar", "--timer-property", "--path-property", "--socket-property",
                               "--service-type"}), 0),
    "chpst": (frozenset({"-u", "-U", "-b", "-e", "-/", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f", "-c", "-t"}), 0),
    "fakeroot": (frozenset({"-l", "--lib", "--faked", "-s", "-i", "-b"}), 0),
    "proot": (frozenset({"-r", "--rootfs", "-b", "--bind", "-m", "--mount", "-w", "--pwd", "--cwd", "-q", "--qemu",
                         "-k", "--kernel-release"}), 0),
    "firejail": (frozenset(), 0),
    "bwrap": (frozenset({"--args", "--userns", "--userns2", "--pidns", "--uid", "--gid", "--hostname", "--chdir",
                         "--unsetenv", "--lock-file", "--sync-fd", "--remount-ro", "--exec-label", "--file-label",
                         "--proc", "--dev", "--tmpfs", "--mqueue", "--dir", "--seccomp", "--add-seccomp-fd",
                         "--block-fd", "--userns-block-fd", "--info-fd", "--json-status-fd", "--cap-add", "--cap-drop",
                         "--perms", "--size"}), 0),
    "dbus-run-session": (frozenset(), 0),
    "ssh-agent": (frozenset({"-a", "-E", "-t", "-P", "-O"}), 0),
    "torsocks": (frozenset({"-u", "-p", "-a", "-P"}), 0),
    "proxychains": (frozenset({"-f"}), 0),
    "proxychains4": (frozenset({"-f"}), 0),
    "parallel": (frozenset({"-j", "--jobs", "-S", "--sshlogin", "-a", "--arg-file", "--delay", "--timeout", "-N",
                            "-n", "--colsep", "-d", "--delimiter", "-I", "--joblog", "--results", "--tmpdir",
                            "--workdir", "--env", "--halt"}), 0),
}
TWO_ARGS = {"bwrap": frozenset({"--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try", "--dev-bind-try",
                                "--symlink", "--setenv", "--file", "--bind-data", "--ro-bind-data", "--chmod"})}
RUNS_STRING = frozenset({"watch"})  # the wrapped words are joined and run by `sh -c`
COMMAND_OPTION = {"script": ("-c", "--command")}  # its command is one string, run by a shell: parsed again
STRING_AFTER = frozenset({"sg"})  # `sg GROUP [-c] COMMAND…`: the words after the group are one shell string
READS_INPUT = frozenset({"at", "batch"})  # they run the commands their input holds
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Pre-check: anything here can make the parse yield words the text does not spell out.
_DYNAMIC_TEXT = re.compile(r"[$`*?\[{~]")
_DEQUOTE = str.maketrans("", "", "'\"\\")
_WORDS = re.compile(r"[^\s;&|()<>!]+")
_BRACE = re.compile(r"\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}")
# words after which the parse may find text the line does not spell, or be unsure (a command reading its input)
_UNSEEN = OPAQUE | SHELLS | STRING_AFTER | READS_INPUT | {"xargs", "su", "runuser", *COMMAND_OPTION}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class Command:
    """One simple command: `words` (redirections last), the literal ones before `open_at` (None: all known)."""

    __slots__ = ("words", "open_at", "nwords", "redirects")

    def __init__(self, words: list[str], open_at: int | None = None, nwords: int | None = None,
                 redirects: tuple[tuple[str, str, bool], ...] = ()):
        self.words = words
        self.open_at = open_at
        self.nwords = len(words) if nwords is None else nwords  # words[nwords:] are the redirections as text
        self.redirects = redirects  # (operator, target word, target is an expansion); `>&2` is ("dup", "2", False)

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def known(self) -> str:
        """The text every expansion of this command starts with."""
        return self.text if self.open_at is None else " ".join(self.words[:self.open_at])

    def __repr__(self) -> str:
        return f"Command({self.text!r}, open_at={self.open_at})"


class Parsed:
    __slots__ = ("commands", "sure", "why", "redirects")

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.redirects: list[tuple[str, str, bool]] = []  # those of compound commands: `{ …; } > f`, `done > f`
        self.sure = True
        self.why = ""

    def unsure(self, why: str) -> None:
        if self.sure:
            self.sure, self.why = False, why


def may_run(text: str, runs: list[str]) -> bool:
    """False only when no command the parse could find holds every literal run of `runs` (see `literal_runs`):
    the text has no expansion, glob, opaque word, shell or xargs, and lacks some run once quotes are removed."""
    flat = text.replace("\\\n", "").translate(_DEQUOTE)  # a backslash-newline joins the lines around it
    if _DYNAMIC_TEXT.search(flat):
        return True
    if any(w.rsplit("/", 1)[-1] in _UNSEEN for w in _WORDS.findall(flat)):
        return True
    return all(run in flat for run in runs)


def literal_runs(pattern: str) -> list[str] | None:
    """The literal pieces every match of an fnmatch pattern contains; None when the pattern is beyond this
    simple reading (braces, escapes, quotes), so the pre-check must not exclude anything."""
    if any(c in pattern for c in "{}\\'\""):
        return None
    return [r for r in re.split(r"[*?\s]+|\[[^\]]*\]", pattern) if r]


@lru_cache(maxsize=32)
def parse(text: str) -> Parsed:
    parsed = Parsed()
    _script(text, parsed, 0)
    return parsed


def _script(text: str, parsed: Parsed, depth: int) -> None:
    if not text.strip():
        return
    if depth > MAX_DEPTH:
        return parsed.unsure("nested too deep")
    if len(text) > MAX_CHARS:
        return parsed.unsure(f"longer than {MAX_CHARS} characters")
    try:
        import bashlex  # type: ignore[import-untyped]  # bashlex ships no types: its nodes are typed Any below
    except ImportError:  # an install that predates the dependency: judge everything rather than guess
        return parsed.unsure("bashlex is not installed")
    try:
        trees = bashlex.parse(text)
    except Exception as exc:  # bashlex raises parse errors, NotImplementedError and worse: all mean "not sure"
        return parsed.unsure(f"does not parse ({type(exc).__name__})")
    for tree in trees:
        for node in _command_nodes(tree):
            if node.kind == "compound":
                parsed.redirects.extend(_redirect(r, text, parsed)[2] for r in node.redirects)
            else:
                _simple(node, text, parsed, depth)


# untyped: a bashlex parse node (bashlex ships no types; a node's attributes depend on its kind)
def _command_nodes(node: Any) -> list[Any]:
    """Every CommandNode in the tree, including those inside substitutions, in source order (and every compound
    command with redirections)."""
    # untyped: a bashlex parse node (bashlex ships no types; a node's attributes depend on its kind)
    found: list[Any] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
            continue
        if not hasattr(item, "kind"):
            continue
        if item.kind == "command" or (item.kind == "compound" and getattr(item, "redirects", None)):
            found.append(item)
        stack.extend(reversed([v for v in vars(item).values() if isinstance(v, list) or hasattr(v, "kind")]))
    return found


# untyped: a bashlex parse node (bashlex ships no types; a node's attributes depend on its kind)
def _simple(node: Any, text: str, parsed: Parsed, depth: int) -> None:
    words: list[str] = []
    dynamic: list[bool] = []
    redirects: list[tuple[str, bool, tuple[str, str, bool]]] = []
    for part in getattr(node, "parts", []):
        kind = part.kind
        if kind == "word":
            words.append(part.word)
            dynamic.append(is_dynamic(text[part.pos[0]:part.pos[1]]))
        elif kind == "redirect":
            redirects.append(_redirect(part, text, parsed))
    if not words:
        return
    _add(words, dynamic, redirects, node, text, parsed, depth)


# untyped: a bashlex parse node (bashlex ships no types; a node's attributes depend on its kind)
def _redirect(part: Any, text: str, parsed: Parsed) -> tuple[str, bool, tuple[str, str, bool]]:
    out: Any = getattr(part, "output", None)  # untyped: a bashlex node (or the fd number of a dup), as above
    heredoc = getattr(part, "heredoc", None)
    if heredoc is not None and getattr(out, "word", "") == text[out.pos[0]:out.pos[1]] and \
            re.search(r"\$\(|`", heredoc.value):  # an unquoted delimiter: the body's substitutions run
        parsed.unsure("a here-document runs command substitutions")
    prefix = str(part.input) if isinstance(getattr(part, "input", None), int) else ""
    if isinstance(out, int):
        return f"{prefix}{part.type}{out}", False, ("dup", str(out), False)
    target = getattr(out, "word", "")
    dyn = is_dynamic(text[out.pos[0]:out.pos[1]]) if out is not None else False
    return f"{prefix}{part.type} {target}", dyn, (part.type, target, dyn)


def _add(words: list[str], dynamic: list[bool], redirects: list[tuple[str, bool, tuple[str, str, bool]]],
         node: Any, text: str, parsed: Parsed, depth: int) -> None:  # untyped: a bashlex node, as in _simple
    tokens = words + [r for r, _, _ in redirects]
    flags = dynamic + [d for _, d, _ in redirects]
    open_at = next((i for i, d in enumerate(flags) if d), None)
    redirs = tuple(r for _, _, r in redirects)
    parsed.commands.append(Command(tokens, open_at, len(words), redirs))
    if open_at == 0:
        return parsed.unsure("the command name is an expansion")
    name = words[0].rsplit("/", 1)[-1]
    if name != words[0]:
        parsed.commands.append(Command([name] + tokens[1:], open_at, len(words), redirs))
    _inner(name, words, dynamic, redirects, node, text, parsed, depth)


def _inner(name: str, words: list[str], dynamic: list[bool], redirects: list[tuple[str, bool, tuple[str, str, bool]]],
           node: Any,  # untyped: a bashlex node, as in _simple
           text: str, parsed: Parsed, depth: int) -> None:
    """The commands this one runs in turn: a wrapped command, a shell's script string, find's -exec."""
    if name in OPAQUE:
        return parsed.unsure(f"`{name}` runs text the parse cannot see")
    if name in SHELLS:
        return _shell(words, dynamic, node, text, parsed, depth)
    if name == "su" or (name == "runuser" and any(w in ("-c", "--command") or w.startswith("--command=")
                                                  for w in words[1:])):
        return _su(words, dynamic, parsed, depth)
    if name in COMMAND_OPTION:
        return _command_option(words, dynamic, COMMAND_OPTION[name], parsed, depth)
    if name in STRING_AFTER:
        return _string_after(words, dynamic, parsed, depth)
    if name in READS_INPUT:
        return _input(node, text, parsed, depth, f"`{name}` runs the commands its input holds")
    if name == "find":
        _find_exec(words, dynamic, node, text, parsed, depth)
    spec = WRAPPERS.get(name)
    if spec is None or depth > MAX_DEPTH:
        return
    start = _wrapped_start(words, spec, name == "env", parsed, dynamic, depth, TWO_ARGS.get(name, frozenset()))
    if start is None:
        return
    if start >= len(words):
        if name in ("sudo", "doas") and any(w in ("-s", "-i", "--shell", "--login") for w in words[1:]):
            parsed.unsure(f"`{name}` opens a shell that reads its script from its input")
        return
    inner_words, inner_dynamic = words[start:], dynamic[start:]
    if name in RUNS_STRING:
        if any(inner_dynamic):
            return parsed.unsure(f"`{name}` runs an expanded string")
        return _script(" ".join(inner_words), parsed, depth + 1)
    if name == "xargs":  # its input becomes more arguments: everything after the given words is unknown
        parsed.commands.append(Command(inner_words, len(inner_words), len(inner_words)))
        if inner_dynamic[0]:
            parsed.unsure("xargs runs an expanded command name")
        return _inner(inner_words[0].rsplit("/", 1)[-1], inner_words, inner_dynamic, [], node, text, parsed,
                      depth + 1)
    _add(inner_words, inner_dynamic, redirects, node, text, parsed, depth + 1)


def _wrapped_start(words: list[str], spec: tuple[frozenset[str], int], env: bool, parsed: Parsed,
                   dynamic: list[bool], depth: int, two_args: frozenset[str] = frozenset()) -> int | None:
    takes_arg, positionals = spec
    i = 1
    while i < len(words):
        word = words[i]
        if dynamic[i]:
            parsed.unsure("a wrapper's option is an expansion")
            return None
        if word == "--":
            i += 1
            break
        if env and word.startswith(("-S", "--split-string")):  # env -S splits its argument into a command line
            attached = word[2:] if word.startswith("-S") else word.partition("=")[2]
            split = attached or (words[i + 1] if i + 1 < len(words) else "")
            if (not attached and i + 1 < len(words) and dynamic[i + 1]) or "$" in split:
                parsed.unsure("env -S splits an expanded string")
                return None
            _script(split, parsed, depth + 1)
        if word.startswith("-") and len(word) > 1:
            i += 3 if word in two_args else 2 if word in takes_arg else 1
        elif env and _NAME.match(word):
            i += 1
        else:
            break
    return i + positionals


# untyped: a bashlex parse node (bashlex ships no types; a node's attributes depend on its kind)
def _shell(words: list[str], dynamic: list[bool], node: Any, text: str, parsed: Parsed, depth: int) -> None:
    """`bash -c STRING`: the string is parsed again; a shell reading its script from input is unsure."""
    i, has_c = 1, False
    while i < len(words) and words[i].startswith(("-", "+")) and words[i] not in ("-", "--"):
        word = words[i]
        has_c = has_c or (not word.startswith("--") and "c" in word[1:])
        i += 2 if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file") else 1
    if i < len(words) and words[i] == "--":
        i += 1
    if i < len(words) and words[i] != "-":
        if not has_c:
            return  # `bash script.sh`: a program like any other; its file is not read
        if dynamic[i]:
            return parsed.unsure("a shell runs an expanded string")
        return _script(words[i], parsed, depth + 1)
    _input(node, text, parsed, depth, "a shell reads its script from its input")


# untyped: a bashlex parse node (bashlex ships no types; a node's attributes depend on its kind)
def _input(node: Any, text: str, parsed: Parsed, depth: int, why: str) -> None:
    """A command that runs the script its input holds: a literal here-string is parsed again; else unsure."""
    strings = [p for p in getattr(node, "parts", []) if p.kind == "redirect" and p.type == "<<<"]
    if strings and not is_dynamic(text[strings[0].output.pos[0]:strings[0].output.pos[1]]):
        return _script(strings[0].output.word, parsed, depth + 1)
    parsed.unsure(why)


def _command_option(words: list[str], dynamic: list[bool], options: tuple[str, ...], parsed: Parsed,
                    depth: int) -> None:
    """`script -c STRING`: the string is parsed again; without one it is a shell reading its input."""
    short = next(o[1] for o in options if not o.startswith("--"))
    for i, word in enumerate(words[1:], 1):
        if word.startswith(tuple(f"{o}=" for o in options if o.startswith("--"))):
            return _script(word.partition("=")[2], parsed, depth + 1)
        if word in options or (word[:1] == "-" and word[1:2] != "-" and short in word[1:]):  # `-qc STRING`
            attached = word.partition(short)[2] if word not in options else ""
            if attached or i + 1 < len(words):
                if dynamic[i] or (not attached and dynamic[i + 1]):
                    return parsed.unsure(f"`{words[0]}` runs an expanded string")
                return _script(attached or words[i + 1], parsed, depth + 1)
    parsed.unsure(f"`{words[0]}` opens a shell that reads its script from its input")


def _string_after(words: list[str], dynamic: list[bool], parsed: Parsed, depth: int) -> None:
    """`sg GROUP [-c] COMMAND…`: the words after the group, joined, are run by a shell."""
    rest = [i for i, w in enumerate(words[1:], 1) if w != "-"]
    start = rest[1] if len(rest) > 1 else len(words)
    if start < len(words) and words[start] == "-c":
        start += 1
    if start >= len(words):
        return parsed.unsure(f"`{words[0]}` opens a shell that reads its script from its input")
    if any(dynamic[start:]):
        return parsed.unsure(f"`{words[0]}` runs an expanded string")
    _script(" ".join(words[start:]), parsed, depth + 1)


def _su(words: list[str], dynamic: list[bool], parsed: Parsed, depth: int) -> None:
    """`su [user] -c STRING`: the string is parsed again; `su` with no command is a shell reading its input."""
    for i, word in enumerate(words[1:], 1):
        if word.startswith("--command="):
            return _script(word.partition("=")[2], parsed, depth + 1)
        if word in ("-c", "--command") and i + 1 < len(words):
            if dynamic[i + 1]:
                return parsed.unsure("su runs an expanded string")
            return _script(words[i + 1], parsed, depth + 1)
    parsed.unsure("su opens a shell that reads its script from its input")


# untyped: a bashlex parse node (bashlex ships no types; a node's attributes depend on its kind)
def _find_exec(words: list[str], dynamic: list[bool], node: Any, text: str, parsed: Parsed, depth: int) -> None:
    for i, word in enumerate(words):
        if word in FIND_EXEC and i + 1 < len(words):
            end = next((j for j in range(i + 1, len(words)) if words[j] in (";", "+")), len(words))
            if end > i + 1 and depth <= MAX_DEPTH:
                _add(words[i + 1:end], dynamic[i + 1:end], [], node, text, parsed, depth + 1)


def is_dynamic(raw: str) -> bool:
    """True when the shell expands this word (as written) into text the word does not spell out."""
    quote = ""
    i = 0
    while i < len(raw):
        c = raw[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 1
        elif c in "$`":
            return True
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c in "*?" or (c == "[" and "]" in raw[i + 2:]) or (c == "~" and (i == 0 or raw[i - 1] in "=:")) \
                or (c == "{" and _BRACE.match(raw, i)):
            return True
        i += 1
    return False
