"""What a bash command line runs: every simple command, found by a real parse (bashlex), never by splitting text.

    parse(text) -> Parsed         .commands: [Command]; .sure: False when the parse cannot tell what runs
    may_run(text, runs) -> bool   a cheap pre-check: False only when no parse could yield a command holding all `runs`

A Command is one simple command as the shell runs it: quotes removed, whitespace collapsed, `VAR=x`
prefixes dropped, redirections kept after the words. Commands are found in lists, pipelines,
background jobs, subshells, brace groups, if/while/until/for bodies, functions, `$(…)`, backticks,
process substitutions, `bash -c`/`sh -c`, `su -c`, `runuser -c`, `script -c` and `sg GROUP` strings and
here-strings (parsed again), and behind the wrappers of WRAPPERS (`env`, `command`, `exec`, `nohup`, `sudo`,
`xargs`, `taskset`, `setpriv`, `unshare`, `systemd-run`, `bwrap`, ...), which yield both the wrapper's command
and the wrapped one, with where it runs (`Command.cwd`: `env -C DIR`, `sudo -D DIR`, `git -C DIR`; or
`Command.elsewhere`: `chroot`, `sudo -i`, `nsenter -w`, a directory that is an expansion). A word the shell expands (`$x`, `$(…)`, a glob, a brace list even with quoted or nested
elements: `{a,"x y"}`, `{a,{b}}`, `~`) makes the command `open` from that word on: only the words before it are
known. Here-documents end where bash ends them: at the line equal to the delimiter after quote removal
(`<<'EOF'`, `<<"E"OF`, `<<\\EOF`); the text bashlex reads has each quoted delimiter unquoted, and a line
whose here-documents bashlex would end elsewhere is unsure.

The parse is not sure (`sure` False) when what runs cannot be read from the text: the line does not
parse (bashlex has no `case`, `[[ ]]`, `$((…))`, `time`), a command name is an expansion, `eval`,
`source`/`.`, `alias`, `trap`, a shell (or `at`, `batch`) reading a script from its input, a descriptor or a
process substitution, a shell whose grammar is not bash's (`fish -c`), a `${…}` holding `$(…)`, backquotes or
`@P` (bashlex keeps it as a leaf), literal text bash may evaluate as an array subscript holding `$(…)`
(`test -v 'a[$(…)]'`), `env -S` with env's own quotes or escapes, or a here-document
whose body runs command substitutions or whose end this reading cannot be sure bash agrees on (a delimiter
with `$`, a line continuation, a body line in `$(…)` that starts with the delimiter, a command after a
here-document in `$(…)`, a here-document in backquotes or beside arithmetic).
"""

from __future__ import annotations

import re
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, TypeAlias

    # untyped: a bashlex parse node (bashlex ships no types; a node's attributes depend on its kind)
    Node: TypeAlias = Any


class _Lazy:
    """A regular expression compiled on its first use. This module is imported on the hook's fast path for the two
    patterns the own-files pre-check reads (own.may_hold); the parse's own patterns wait for a parse."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled.search(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(text)

    def sub(self, repl: "str | Callable[[re.Match[str]], str]", text: str) -> str:
        return self.compiled.sub(repl, text)

    def split(self, text: str) -> list[str]:
        return self.compiled.split(text)


MAX_CHARS = 16_000  # a longer line is not parsed (about 1 s of bashlex on a loaded machine): unsure, so judged
MAX_DEPTH = 4  # `bash -c "bash -c '…'"` nesting parsed before the line counts as unsure
# bashlex does not end on some short lines (an unclosed `${` inside a `$'…'` word restarts its parameter
# expansion forever, allocating as it goes): a parse still running after this long is unsure, so judged, and the
# hook answers instead of being killed by the client's timeout (which every client takes as "allowed")
PARSE_BUDGET_S = 2.0
# shells whose script is read here with bash's grammar (a name with a version, `bash5.2`, `zsh-5.9`, is one too)
SHELLS = frozenset({"bash", "rbash", "sh", "dash", "zsh", "ksh", "ksh93", "mksh", "lksh", "oksh", "posh", "ash",
                    "yash", "hush", "bosh", "osh", "busybox-sh"})
# shells with a grammar of their own: a script they run (`fish -c …`) cannot be read here, so it is unsure
FOREIGN_SHELLS = frozenset({"fish", "csh", "tcsh", "rc", "es", "xonsh", "elvish", "nu", "pwsh", "ion", "ysh"})
_SHELL_NAME = _Lazy(rf"(?:{'|'.join(sorted(SHELLS | FOREIGN_SHELLS, key=len, reverse=True))})[-.]?[0-9][0-9.]*")
OPAQUE = frozenset({"eval", "source", ".", "alias", "trap", "fc", "coproc", "enable", "let"})
# How each wrapper reads its options (see Spec), and how many positional words come before the wrapped command.
WRAPPERS: dict[str, tuple[str, str, int]] = {
    "env": ("+a:C:iS:u:v0", "argv0= chdir= ignore-environment null split-string= unset= debug block-signal? "
            "default-signal? ignore-signal? list-signal-handling", 0),
    "command": ("+pVv", "", 0),
    "builtin": ("+", "", 0),
    "exec": ("+cla:", "", 0),
    "nohup": ("+", "", 0),
    "time": ("+af:o:pqv", "append format= output= portability quiet verbose", 0),
    "nice": ("+n:0123456789", "adjustment=", 0),
    "ionice": ("+c:n:p:P:u:tV", "class= classdata= pid= pgid= uid= ignore", 0),
    "timeout": ("+fk:ps:v", "foreground kill-after= preserve-status signal= verbose", 1),
    "stdbuf": ("+i:o:e:", "input= output= error=", 0),
    "setsid": ("+cfw", "ctty fork wait", 0),
    "sudo": ("+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv",
             "askpass background bell close-from= chdir= preserve-env? edit group= set-home host= login "
             "remove-timestamp reset-timestamp list no-update non-interactive preserve-groups prompt= chroot= role= stdin shell "
             "type= command-timeout= other-user= user= validate", 0),
    "doas": ("+a:C:Lnsu:", "", 0),
    "chroot": ("+", "userspec= groups= skip-chdir", 1),
    "xargs": ("+0a:d:E:e::I:i::L:l::n:oP:prs:txX", "null arg-file= delimiter= eof? replace? max-lines? max-args= "
              "open-tty max-procs= interactive no-run-if-empty max-chars= show-limits verbose exit "
              "process-slot-var=", 0),
    "flock": ("+sexnoFuw:E:V", "shared exclusive unlock nonblock nb timeout= wait= close conflict-exit-code= "
              "no-fork verbose", 1),
    "busybox": ("+", "", 0),
    "watch": ("+bcCd::egn:pq:rtwx", "beep color no-color differences? errexit chgexit equexit= interval= precise "
              "no-rerun no-title no-wrap exec", 0),
    "strace": ("+a:Ab:cCdDe:E:fFhiI:kno:O:p:P:qrs:S:tTu:U:vVwxX:yYzZ", "", 0),  # strace -h; its long options: unsure
    "ltrace": ("+a:A:bcCD:e:fF:hil:Ln:o:p:rs:Stu:Vw:x:", "", 0),  # ltrace(1): -D MASK
    "valgrind": ("+qvhd", "", 0),  # its other options are `--name=value`
    "catchsegv": ("+", "", 0),
    "taskset": ("+acp", "all-tasks cpu-list pid", 1),  # the mask (or, with -c, the CPU list)
    "chrt": ("+abdefiIomprRT:P:D:v", "all-tasks batch deadline fifo idle other max pid rr reset-on-fork "
             "sched-runtime= sched-period= sched-deadline= verbose", 1),
    # numactl(8), not installed here to check: only its policy options; the others (-t, -T, shm ones) unsure
    "numactl": ("+abC:Hi:lm:N:p:P:sw:", "all balancing cpunodebind= physcpubind= hardware interleave= "
                "localalloc membind= preferred= preferred-many= show weighted-interleave=", 0),
    "prlimit": ("+c::d::e::f::i::l::m::n::q::r::s::t::u::v::x::y::p:o:", "pid= output= noheadings raw verbose "
                "core? data? nice? fsize? sigpending? memlock? rss? nofile? msgqueue? rtprio? stack? cpu? nproc? as? "
                "locks? rttime?", 0),
    "cpulimit": ("+c:e:hikl:mp:qrvz", "cpu= exe= include-children kill limit= monitor-forks pid= quiet restore "
                 "verbose lazy", 0),
    "cgexec": ("+g:", "sticky", 0),
    "unbuffer": ("+p", "", 0),
    "setpriv": ("+d", "dump no-new-privs ruid= euid= reuid= rgid= egid= regid= clear-groups keep-groups init-groups "
                "groups= inh-caps= ambient-caps= bounding-set= securebits= pdeathsig= selinux-label= "
                "apparmor-profile= landlock-access= landlock-rule= seccomp-filter= reset-env", 0),
    "nsenter": ("+aS:G:r::w::W:e::t:m::u::i::n::p::U::C::T::FZ", "all target= mount? uts? ipc? net? pid? user? "
                "cgroup? time? setuid= setgid= preserve-credentials root? wd? wdns= env no-fork follow-context "
                "user-parent keep-caps", 0),
    "unshare": ("+fmuinpCTUl:rR:w:S:G:c", "fork kill-child? mount? uts? ipc? net? pid? user? cgroup? time? "
                "mount-proc? map-user= map-users= map-group= map-groups= map-root-user map-current-user map-auto "
                "propagation= setgroups= keep-caps setuid= setgid= root= wd= monotonic= boottime= load-interp=", 0),
    "runuser": ("c:fg:G:lmpPs:u:hVw:", "command= fast group= supp-group= login preserve-environment pty shell= "
                "session-command= user= whitelist-environment=", 0),  # util-linux: options and operands mix
    "pkexec": ("+", "user= keep-cwd disable-internal-agent", 0),
    "run0": ("+u:g:D:", "user= group= chdir= setenv= property= description= slice= slice-inherit nice= unit= "
             "background= machine= pty pipe shell-prompt-prefix= no-ask-password via-shell empty? area= "
             "lightweight=", 0),
    "systemd-run": ("+u:p:E:rtPqGdSH:M:", "unit= property= description= slice= slice-inherit setenv= uid= gid= "
                    "nice= working-directory= same-dir machine= host= on-active= on-boot= on-startup= "
                    "on-unit-active= on-unit-inactive= on-calendar= timer-property= path-property= "
                    "socket-property= service-type= remain-after-exit pty pipe quiet collect shell user system "
                    "scope wait no-block no-ask-password send-sighup expand-environment=", 0),
    "chpst": ("+u:U:b:e:/:C:n:l:L:m:d:o:p:f:c:r:t:vP012", "", 0),
    "fakeroot": ("+l:f:i:s:ub:vh", "lib= faked= unknown-is-real fd-base=", 0),  # its getopt line
    "proot": ("+r:b:m:w:q:k:0i:v:VR:S:", "rootfs= bind= mount= pwd= cwd= qemu= kernel-release= root-id "
              "change-id= verbose= link2symlink kill-on-exit", 0),
    "firejail": ("+", "", 0),  # its options are `--name[=value]`
    "bwrap": ("+", "", 0),  # its own reader: see BWRAP_ARGS
    "dbus-run-session": ("+", "config-file= dbus-daemon=", 0),
    "ssh-agent": ("+a:cDdkE:P:st:O:", "", 0),
    "torsocks": ("+u:p:a:P:iqd", "user= pass= address= port= isolate quiet debug", 0),
    "proxychains": ("+qf:", "", 0),
    "proxychains4": ("+qf:", "", 0),
    "parallel": ("+0a:C:d:E:I:j:kL:l::mn:N:P:qrS:s:uvXx", "jobs= sshlogin= arg-file= delay= timeout= colsep= "
                 "delimiter= joblog= results= tmpdir= workdir= env= halt= keep-order group ungroup line-buffer tag "
                 "verbose dry-run null xargs quote no-run-if-empty bar progress eta will-cite pipe block= max-args= "
                 "max-replace-args= max-lines= retries= nice= load= memfree= shuf trim= plus", 0),
}
# wrappers whose long options are all `--name[=value]` with the value attached: any name is read
ANY_LONG = frozenset({"valgrind", "firejail"})
# bwrap's options (not getopt: no grouping, no abbreviation) and how many arguments each takes
BWRAP_ARGS = {**dict.fromkeys((
    "--args", "--userns", "--userns2", "--pidns", "--uid", "--gid", "--hostname", "--chdir", "--unsetenv",
    "--lock-file", "--sync-fd", "--remount-ro", "--exec-label", "--file-label", "--proc", "--dev", "--tmpfs",
    "--mqueue", "--dir", "--seccomp", "--add-seccomp-fd", "--block-fd", "--userns-block-fd", "--info-fd",
    "--json-status-fd", "--cap-add", "--cap-drop", "--perms", "--size", "--argv0", "--level-prefix"), 1),
    **dict.fromkeys(("--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try", "--dev-bind-try",
                     "--symlink", "--setenv", "--file", "--bind-data", "--ro-bind-data", "--chmod",
                     "--overlay-src"), 2),
    **dict.fromkeys(("--unshare-all", "--share-net", "--unshare-user", "--unshare-user-try", "--unshare-ipc",
                     "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup", "--unshare-cgroup-try",
                     "--clearenv", "--new-session", "--die-with-parent", "--as-pid-1", "--disable-userns",
                     "--assert-userns-disabled"), 0)}
RUNS_STRING = frozenset({"watch"})  # the wrapped words are joined and run by `sh -c`
COMMAND_OPTION = {"script": ("-c", "--command")}  # its command is one string, run by a shell: parsed again
STRING_AFTER = frozenset({"sg"})  # `sg GROUP [-c] COMMAND…`: the words after the group are one shell string
READS_INPUT = frozenset({"at", "batch"})  # they run the commands their input holds
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Variables that change which program a name runs, what a shell runs first, where `cd` goes or what git runs:
# a line that sets one is unsure (in scope of every rule), whatever its commands look like.
REBINDS = re.compile(r"(?:PATH|BASH_ENV|ENV|CDPATH|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|HOME|XDG_CONFIG_HOME|"
                     r"EDITOR|VISUAL|PAGER|[A-Z_]*_PAGER|LD_[A-Z0-9_]*|"
                     r"GIT_(?!(?:AUTHOR|COMMITTER)_(?:NAME|EMAIL|DATE)\b)[A-Z0-9_]*)")
SETS_VARIABLES = frozenset({"export", "declare", "typeset", "local", "readonly", "read", "printf", "mapfile",
                            "readarray", "getopts", "unset"})
# bash builtins and keywords a function may not shadow without the parse losing track of what runs
BUILTINS = frozenset({
    "cd", "pushd", "popd", "dirs", "echo", "printf", "test", "[", "read", "exit", "return", "set", "shopt", "unset",
    "export", "declare", "typeset", "local", "readonly", "hash", "type", "command", "builtin", "exec", "eval",
    "source", "alias", "unalias", "trap", "true", "false", ":", "wait", "kill", "jobs", "fg", "bg", "help",
    "history", "enable", "getopts", "mapfile", "readarray", "shift", "times", "ulimit", "umask", "let", "logout",
    "caller", "complete", "compgen", "compopt", "disown", "suspend", "command_not_found_handle"})
# git options whose value is a program git runs (or configuration that can name one): unsure for bash rules
_GIT_RUNS = re.compile(r"--(?:upload-pack|receive-pack|exec|extcmd|to-cmd|cc-cmd|open-files-in-pager|"
                       r"[a-z-]*-filter|config-env|exec-path)(?:=|$)")
_GIT_SAFE_CONFIG = re.compile(r"(?:user|color|advice|init|i18n|column)\.[A-Za-z0-9.-]*=")
# Pre-check: anything here can make the parse yield words the text does not spell out.
_DYNAMIC_TEXT = re.compile(r"[$`*?\[{~]")
_DEQUOTE = str.maketrans("", "", "'\"\\")
_WORDS = re.compile(r"[^\s;&|()<>!]+")
_HEREDOC_WORD = re.compile(r"[\w.,:+%@/=^-]+")  # a here-document delimiter bashlex reads alike unquoted
# words after which the parse may find text the line does not spell, or be unsure (a command reading its input)
_UNSEEN = OPAQUE | SHELLS | FOREIGN_SHELLS | STRING_AFTER | READS_INPUT | {"xargs", "su", "runuser", "flock", "hash", "function",
                                                           *COMMAND_OPTION}
# a command moved to another directory (`env -C`, `git -C`, `sudo -D`, `unshare -w`, `--chdir`, `chroot`, ...): a
# word of the line is then not a path from the line's directory (sentinel.policy.gate.own's pre-check parses it)
_MOVES_TEXT = (r"\b(?:env|git|sudo|unshare|nsenter)(?:\s+[^\s;&|]+)*?\s+-[A-Za-z]*[CDRrwWi]|"
               r"--(?:chdir|wd|wdns|working-directory|git-dir|work-tree|root|rootfs|pwd|cwd|chroot|workdir|private)|"
               r"\b(?:chroot|pkexec|bwrap|systemd-run|run0|chpst|proot|firejail)\b")
# must parse: a rebinding variable, a function definition or a moved command
_REBINDS_TEXT = re.compile(rf"\b{REBINDS.pattern}\b|\(\s*\)|{_MOVES_TEXT}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


class Spec:
    """How a program reads its options, as getopt_long does. `short` is a getopt optstring: `b:` takes an
    argument (attached, `-bX`, or the next word), `c::` an optional attached one, a leading `+` stops at the
    first operand (else operands and options mix, GNU-style). `long` lists the long options: `name` a flag,
    `name=` takes an argument (`--name=X` or `--name X`), `name?` an optional `=` one; a unique prefix of a
    name is that option (`--targ=` is `--target-directory=`). `any_long`: every `--name[=value]` is a flag."""

    __slots__ = ("short", "long", "stop", "any_long")

    def __init__(self, short: str = "", long: str = "", any_long: bool = False):
        self.stop = short.startswith("+")
        self.short: dict[str, int] = {}
        letters = short.lstrip("+")
        i = 0
        while i < len(letters):
            colons = len(letters[i + 1:]) - len(letters[i + 1:].lstrip(":"))
            self.short[letters[i]] = min(colons, 2)
            i += 1 + colons
        self.long: dict[str, int] = {"help": 0, "version": 0}
        for item in long.split():
            self.long[item.rstrip("=?")] = 1 if item.endswith("=") else 2 if item.endswith("?") else 0
        self.any_long = any_long


class Options:
    """What an option reader found: `found` [(name, value, value is an expansion)] with names as `-t` or
    `--target-directory`; `operands` [(word, is an expansion)]; `end` the index after the options (where a
    wrapper's command starts); `why` non-empty when some word could not be classified."""

    __slots__ = ("found", "operands", "end", "why")

    def __init__(self) -> None:
        self.found: list[tuple[str, str | None, bool]] = []
        self.operands: list[tuple[str, bool]] = []
        self.end = 0
        self.why = ""

    def has(self, *names: str) -> bool:
        return any(name in names for name, _, _ in self.found)

    def values(self, *names: str) -> list[tuple[str | None, bool]]:
        return [(value, dyn) for name, value, dyn in self.found if name in names]


def read_options(words: list[str], dynamic: list[bool], spec: Spec, start: int = 1) -> Options:
    """Read `words[start:]` the way getopt_long reads a program's arguments (see Spec)."""
    out = Options()
    i = start
    while i < len(words):
        word, dyn = words[i], dynamic[i]
        if word == "--" and not dyn:
            i += 1
            if not spec.stop:
                out.operands.extend(zip(words[i:], dynamic[i:]))
                i = len(words)
            break
        if dyn and (word.startswith("-") or not word[:1].isalnum() and word[:1] not in "./_"):
            out.why = out.why or f"`{word}` may expand to an option"  # `$x`, `*`: an option for all we know
        if not word.startswith("-") or word == "-":
            if spec.stop:
                break
            out.operands.append((word, dyn))
        elif word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            full = _long_name(name, spec)
            if full is None:
                if not spec.any_long:
                    out.why = out.why or f"`{word}`: an option not known here"
                out.found.append(("--" + name, value if eq else None, dyn))
            elif spec.long[full] == 1 and not eq:
                if i + 1 >= len(words):
                    out.why = out.why or f"`{word}` lacks its argument"
                    break
                i += 1
                out.found.append(("--" + full, words[i], dynamic[i]))
            else:
                out.found.append(("--" + full, value if eq else None, dyn))
        else:
            j = 1
            while j < len(word):
                letter = word[j]
                kind = spec.short.get(letter)
                if kind is None:
                    out.why = out.why or f"`-{letter}`: an option not known here"
                    out.found.append(("-" + letter, None, dyn))
                    j += 1
                    continue
                if kind == 0:
                    out.found.append(("-" + letter, None, dyn))
                    j += 1
                    continue
                if j + 1 < len(word) or kind == 2:
                    out.found.append(("-" + letter, word[j + 1:] or None, dyn))
                elif i + 1 < len(words):
                    i += 1
                    out.found.append(("-" + letter, words[i], dynamic[i]))
                else:
                    out.why = out.why or f"`-{letter}` lacks its argument"
                break
        i += 1
    out.end = i
    return out


def _long_name(name: str, spec: Spec) -> str | None:
    if name in spec.long:
        return name
    matches = [n for n in spec.long if n.startswith(name)] if name else []
    return matches[0] if len(matches) == 1 else None


class Command:
    """One simple command: `words` (redirections last), the literal ones before `open_at` (None: all known).
    `elsewhere` says why the command runs in a directory the line does not name (`find -execdir`, `env -C $d`,
    `chroot`, `sudo -i`); `cwd` the directory the line names for it, relative to where the line's commands run
    (`env -C sub`, `git -C sub`, `sudo -D sub`), and `opened` where its redirections are opened: the same, but
    for git's own `-C` (`git -C sub log > out` writes ./out)."""

    __slots__ = ("words", "open_at", "nwords", "redirects", "elsewhere", "repeats", "cwd", "opened")

    def __init__(self, words: list[str], open_at: int | None = None, nwords: int | None = None,
                 redirects: tuple[tuple[str, str, bool], ...] = (), elsewhere: str = "", repeats: bool = False,
                 cwd: str = "", opened: str = ""):
        self.cwd = cwd
        self.opened = opened
        self.words = words
        self.open_at = open_at
        self.nwords = len(words) if nwords is None else nwords  # words[nwords:] are the redirections as text
        self.redirects = redirects  # (operator, target word, target is an expansion); `>&2` is ("dup", "2", False)
        self.elsewhere = elsewhere
        self.repeats = repeats  # inside a loop or a function body: it may run any number of times

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
    __slots__ = ("commands", "sure", "why", "redirects", "repeating", "elsewhere", "cwd", "functions")

    def __init__(self) -> None:
        self.commands: list[Command] = []
        # those of compound commands (`{ …; } > f`, `done > f`) and of commands with no word (`> f`, `x=1 > f`)
        self.redirects: list[tuple[str, str, bool]] = []
        self.sure = True
        self.why = ""
        self.repeating = False  # the commands being added are inside a loop or a function body
        self.elsewhere = ""  # the commands being added run in another directory (find -execdir)
        self.cwd = ""  # ... or in this one, relative to where the line's commands run (`env -C sub`)
        self.functions: list[str] = []  # names the line defines as functions (writes.py: one named like a writer)

    def unsure(self, why: str) -> None:
        if self.sure:
            self.sure, self.why = False, why


def may_run(text: str, runs: list[str]) -> bool:
    """False only when no command the parse could find holds every literal run of `runs` (see `literal_runs`):
    the text has no expansion, glob, opaque word, shell, xargs, rebinding variable or function definition, and
    lacks some run once quotes are removed."""
    flat = text.replace("\\\n", "").translate(_DEQUOTE)  # a backslash-newline joins the lines around it
    if _DYNAMIC_TEXT.search(flat) or _REBINDS_TEXT.search(flat):
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


class _OverBudget(BaseException):
    """Raised into a parse that ran past its budget (a BaseException: no `except Exception` in bashlex keeps it)."""


def _parse_within(bashlex: Any, text: str, seconds: float) -> Any:  # untyped: bashlex's module and its nodes
    """bashlex.parse(text), interrupted after `seconds` (SIGALRM, the real-time interval timer: _OverBudget), on
    the main thread, where a signal handler runs (the hook and a worker decide there; a parse elsewhere runs
    unbounded as before). A timer already set (a test's timeout) is put back afterwards with what it had left;
    one that ends sooner is left to end first. Imported here, not with the module: the hook's fast path imports
    this module for its tables and never parses."""
    import signal
    import threading
    import time

    outer = signal.getitimer(signal.ITIMER_REAL)[0]
    if threading.current_thread() is not threading.main_thread() or 0 < outer <= seconds:
        return bashlex.parse(text)

    def over(signum: int, frame: object) -> None:
        raise _OverBudget()

    previous = signal.signal(signal.SIGALRM, over)
    began = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return bashlex.parse(text)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 0.001))


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
        import bashlex  # type: ignore[import-untyped]  # bashlex ships no types: its nodes are typed Node
    except ImportError:  # an install that predates the dependency: judge everything rather than guess
        return parsed.unsure("bashlex is not installed")
    spans: list[tuple[int, int]] = []
    scanned = "<<" in text or "<\\\n" in text  # a here-document: bashlex must end each body where bash does
    if scanned:
        text, spans, why = _heredocs(text)
        if why:
            return parsed.unsure(why)
    try:
        trees = _parse_within(bashlex, text, PARSE_BUDGET_S)
    except _OverBudget:
        return parsed.unsure(f"the parser did not finish within {PARSE_BUDGET_S:g} s")
    except Exception as exc:  # bashlex raises parse errors, NotImplementedError and worse: all mean "not sure"
        return parsed.unsure(f"does not parse ({type(exc).__name__})")
    if scanned and sorted(_heredoc_nodes(trees)) != spans:
        return parsed.unsure("bashlex ends a here-document elsewhere than bash")
    outer = parsed.repeating
    for tree in trees:
        for node, repeats in _command_nodes(tree):
            parsed.repeating = outer or repeats
            if node.kind == "function":
                _function(node, text, parsed)
            elif node.kind == "compound":
                _redirects(parsed, [_redirect(r, text, parsed)[2] for r in node.redirects])
            elif node.kind == "command":
                _simple(node, text, parsed, depth)
            else:
                _leaf(node, text, parsed)
    parsed.repeating = outer


def _command_nodes(node: Node) -> list[tuple[Node, bool]]:
    """Every CommandNode in the tree, including those inside substitutions, in source order (and every compound
    command with redirections, every function definition, and every word, parameter expansion and here-document,
    which `_leaf` looks into), each with whether it is inside a loop or a function body (it may run any number
    of times)."""
    found: list[tuple[Node, bool]] = []
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        item, repeats = stack.pop()
        if isinstance(item, list):
            stack.extend((child, repeats) for child in reversed(item))
            continue
        if not hasattr(item, "kind"):
            continue
        if item.kind in _VISITED or (item.kind == "compound" and getattr(item, "redirects", None)):
            found.append((item, repeats))
        inner = repeats or item.kind in ("for", "while", "until", "function")
        stack.extend((v, inner) for v in reversed([v for v in vars(item).values()
                                                    if isinstance(v, list) or hasattr(v, "kind")]))
    return found


_VISITED = frozenset({"command", "function", "word", "assignment", "parameter", "heredoc"})
# a command substitution, process substitution or prompt expansion inside `${…}`, or bash 5.3's `${ cmd; }`: bashlex
# keeps a parameter expansion as one opaque leaf, so what it runs is not seen
_PARAMETER_RUNS = _Lazy(r"\$\(|`|[<>]\(|@P|^[\s|]")
# literal text that bash evaluates as a subscript (`test -v`, `printf -v`, `read`, `declare`, `unset`, arithmetic,
# `a[x]=`, `${a[x]}`, `${x:i}` of a variable holding it): a command substitution in a `[…]` runs there
_SUBSCRIPT_RUNS = _Lazy(r"\[[^]]*?(?:\$[({]|`)")
_ANSI_C = _Lazy(r"\$'((?:[^'\\]|\\.)*)'", re.S)
_ANSI_ESCAPE = _Lazy(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)", re.S)


def _leaf(node: Node, text: str, parsed: Parsed) -> None:
    """What a word, a parameter expansion or a here-document may run that bashlex does not show as a command:
    `${x:-$(cmd)}` (bashlex keeps `${…}` as a leaf), `${x@P}`, and literal text bash may evaluate as an array
    subscript (`test -v 'a[$(cmd)]'`, `x='a[$(cmd)]'`, a here-string or here-document body read into one)."""
    if node.kind == "parameter":
        if _PARAMETER_RUNS.search(getattr(node, "value", None) or ""):
            parsed.unsure("a parameter expansion `${…}` runs a command substitution or a prompt expansion")
        return
    raw = text[node.pos[0]:node.pos[1]]
    if "[" not in raw:
        return
    # the expansions bashlex found in the word are commands (or leaves) of their own: only its literal text is read
    for part in sorted(getattr(node, "parts", []) or [], key=lambda p: -p.pos[0]):
        if part.kind in ("commandsubstitution", "processsubstitution", "parameter") and part.pos[1] - part.pos[0] > 1:
            start, end = part.pos[0] - node.pos[0], part.pos[1] - node.pos[0]
            raw = raw[:start] + raw[end:]
    decoded = _ANSI_C.sub(lambda m: _ANSI_ESCAPE.sub(_ansi_char, m.group(1)), raw)
    if _SUBSCRIPT_RUNS.search(decoded) or _SUBSCRIPT_RUNS.search(unquote(raw)):
        parsed.unsure("literal text bash may evaluate as an array subscript holds a command substitution")


def _ansi_char(match: re.Match[str]) -> str:
    """One escape of a `$'…'` string, as bash decodes it (enough to see a `$` or a backquote it spells)."""
    code = match.group(1)
    base = 8 if code[0] in "01234567" else 16 if code[0] in "xuU" else 0
    if not base:
        return code
    try:
        return chr(int(code if base == 8 else code[1:], base))
    except (ValueError, OverflowError):
        return "$"


def _heredoc_nodes(node: Node) -> list[tuple[int, int]]:
    """Where bashlex put each here-document body: (its start, the end of its delimiter line)."""
    found: list[tuple[int, int]] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif hasattr(item, "kind"):
            if item.kind == "heredoc":
                found.append((item.pos[0], item.pos[1]))
            stack.extend(v for v in vars(item).values() if isinstance(v, list) or hasattr(v, "kind"))
    return found


class _Doc:
    """One here-document as bash reads it: the operator's end, its delimiter word, the body's span."""

    __slots__ = ("op_end", "word_end", "delimiter", "quoted", "strip", "depth", "start", "end")

    def __init__(self, op_end: int, word_end: int, delimiter: str, quoted: bool, strip: bool, depth: int):
        self.op_end, self.word_end, self.delimiter = op_end, word_end, delimiter
        self.quoted, self.strip, self.depth = quoted, strip, depth
        self.start = self.end = 0


def _heredocs(text: str) -> tuple[str, list[tuple[int, int]], str]:
    """Where bash ends each here-document of the line, and the line as bashlex must be given it to agree.

    Bash ends a body at the first line equal to the delimiter after quote removal (`<<'EOF'`, `<<"E"OF`,
    `<<\\EOF` all end at `EOF`); bashlex (0.18, heredoc.py) at a line equal to the word as written. Each
    quoted delimiter is rewritten to its unquoted form (bashlex then reads the body as expandable: more, never
    fewer commands), and the caller checks bashlex put every body where this reading did. Returns (the text
    for bashlex, each body's (start, end of its delimiter line) in it, why the line is unsure: "" when it is
    not). Unsure: a delimiter bashlex cannot be given unquoted (`$'…'`, a blank, a `$`), a here-document in
    backquotes or beside arithmetic, a body bash may end otherwise than at its delimiter line (see
    `_body_end`), a command after a here-document inside `$(…)` (bashlex reads no further there), a body
    that runs command substitutions."""
    docs = _scan_heredocs(text)
    if isinstance(docs, str):
        return text, [], docs
    for doc in docs:
        body = text[doc.start:doc.end]
        if not doc.quoted and ("$(" in body or "`" in body):
            return text, [], "a here-document runs command substitutions"
    out: list[str] = []
    shifts: list[tuple[int, int]] = []  # (where a rewritten word ends, how much longer the text is from there)
    at = 0
    for doc in docs:
        if doc.quoted:
            out += [text[at:doc.op_end], " ", doc.delimiter]
            at = doc.word_end
            shifts.append((at, 1 + len(doc.delimiter) - (doc.word_end - doc.op_end)))

    def moved(pos: int) -> int:
        return pos + sum(by for end, by in shifts if end <= pos)

    return "".join(out) + text[at:], sorted((moved(d.start), moved(d.end)) for d in docs), ""


def _scan_heredocs(text: str) -> list[_Doc] | str:
    """Every here-document operator bash sees (outside quotes and comments, in the line or a `$(…)`), each
    with its body; a str says why the line cannot be read surely."""
    docs: list[_Doc] = []
    pending: list[_Doc] = []
    stack = ["cmd"]  # "cmd" (the line, `$(`, `(`, `<(`), '"' (double quotes), "${" (a parameter)
    i, n, word_start = 0, len(text), True
    while i < n:
        c, top = text[i], stack[-1]
        if c == "\\":
            if top == "cmd" and i and text[i - 1] == "<" and text.startswith("\n<", i + 1):
                return "a line continuation inside a here-document operator"
            word_start = word_start and text.startswith("\n", i + 1)
            i += 2
            continue
        if top != "cmd":
            i = _scan_quoted(text, i, stack)
        elif c == "'":
            i = text.find("'", i + 1) + 1 or n + 1
        elif c == "$" and text.startswith("'", i + 1):
            i = _ansi_end(text, i + 2)
        elif c == "#" and word_start:
            i = text.find("\n", i) % (n + 1)
            continue
        elif text.startswith("<<<", i):
            i += 3
        elif text.startswith("<<", i):
            doc = _heredoc_word(text, i, len(stack))
            if isinstance(doc, str):
                return doc
            pending.append(doc)
            i = doc.word_end
        elif c == "\n" and pending:
            if any(d.depth != len(stack) for d in pending):
                return "a here-document whose body starts inside another construct"
            for doc in pending:
                i = doc.end = _body_end(text, i + 1, doc)
                if i < 0:
                    return "a here-document bash may end elsewhere than at its delimiter line"
            if len(stack) > 1 and not re.match(r"[ \t\n]*\)", text[i:]):  # bashlex reads no further in `$(…)`
                return "a command after a here-document inside a substitution or subshell"
            docs += pending
            pending = []
            i, word_start = min(i + 1, n), True
            continue
        else:
            step = _scan_cmd(text, i, stack)
            if isinstance(step, str):
                return step
            i = step
        word_start = c in " \t\n;&|()<>" or text[i - 2:i] == "$("
    if pending or len(stack) > 1 or i > n:
        return "a here-document, quote or substitution that does not end"
    return docs


def _scan_cmd(text: str, i: int, stack: list[str]) -> int | str:
    """One character of a command (the quotes and `<<` are the caller's): opens or closes a construct."""
    c = text[i]
    if text.startswith(("$((", "$[", "(("), i):
        return "arithmetic beside a here-document"
    if c == "`":
        return _backticks(text, i)
    opened = _substitution(text, i, stack)
    if opened:
        return opened
    if c == '"':
        stack.append('"')
    elif c == "(":
        stack.append("cmd")
    elif c == ")" and len(stack) > 1:
        stack.pop()
    return i + 1


def _substitution(text: str, i: int, stack: list[str]) -> int:
    """A `$(` or `${` at `i`, in a command or inside quotes alike: pushed, and where to go on; 0 when none."""
    for opener, kind in (("$(", "cmd"), ("${", "${")):
        if text.startswith(opener, i):
            stack.append(kind)
            return i + 2
    return 0


def _scan_quoted(text: str, i: int, stack: list[str]) -> int:
    """One character inside double quotes or `${…}`."""
    c, top = text[i], stack[-1]
    if c == "`":
        end = _backticks(text, i)
        return end if isinstance(end, int) else len(text) + 1
    if text.startswith(("$((", "$["), i):
        return len(text) + 1  # arithmetic: bashlex does not read it either
    opened = _substitution(text, i, stack)
    if opened:
        return opened
    if (top == '"' and c == '"') or (top == "${" and c == "}"):
        stack.pop()
    elif top == "${" and c == '"':
        stack.append('"')
    elif top == "${" and c == "'" and stack[-2] != '"':
        return text.find("'", i + 1) + 1 or len(text) + 1
    return i + 1


def _backticks(text: str, i: int) -> int | str:
    """The index after the backquoted substitution that starts at i; a here-document in it is not read here."""
    j = i + 1
    while j < len(text) and text[j] != "`":
        j += 2 if text[j] == "\\" else 1
    if j >= len(text) or "<<" in text[i:j] or "\n" in text[i:j]:
        return "a here-document or a line break inside backquotes"
    return j + 1


def _ansi_end(text: str, i: int) -> int:
    """The index after a `$'…'` string whose text starts at i."""
    while i < len(text) and text[i] != "'":
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _heredoc_word(text: str, i: int, depth: int) -> _Doc | str:
    """The `<<`/`<<-` operator at i and its delimiter word: bash's delimiter is the word after quote removal."""
    strip = text.startswith("<<-", i)
    op_end = i + 3 if strip else i + 2
    k = op_end
    while k < len(text) and text[k] in " \t":
        k += 1
    start, quoted, out = k, False, []
    while k < len(text) and text[k] not in " \t\n;&|()<>":
        c = text[k]
        if c in "$`" or text.startswith("\\\n", k):
            return "a here-document delimiter with an expansion or a line continuation"
        if c == "'":
            end = text.find("'", k + 1)
            if end < 0:
                return "a here-document delimiter whose quote does not end"
            out.append(text[k + 1:end])
            k, quoted = end + 1, True
        elif c == '"':
            end = text.find('"', k + 1)
            if end < 0 or any(ch in text[k + 1:end] for ch in "\\$`\n"):
                return "a here-document delimiter whose double quotes hold more than text"
            out.append(text[k + 1:end])
            k, quoted = end + 1, True
        elif c == "\\":
            out.append(text[k + 1:k + 2])
            k, quoted = k + 2, True
        else:
            out.append(c)
            k += 1
    delimiter = "".join(out)
    if k == start or (quoted and not _HEREDOC_WORD.fullmatch(delimiter)):
        return "a here-document delimiter bashlex cannot be given as bash reads it"
    return _Doc(op_end, k, delimiter, quoted, strip, depth)


def _body_end(text: str, i: int, doc: _Doc) -> int:
    """Reads the body from i as bash does; the end of its delimiter line, or -1 when bash may read it otherwise
    than by comparing whole lines: no delimiter line, an unquoted line ending in a backslash (bash joins it to
    the next), inside a substitution a line that starts with the delimiter."""
    doc.start = i
    while i <= len(text):
        nl = text.find("\n", i)
        end = len(text) if nl < 0 else nl
        line = text[i:end].lstrip("\t") if doc.strip else text[i:end]
        if line == doc.delimiter:
            return end
        if (not doc.quoted and line.endswith("\\")) or nl < 0:
            return -1
        if doc.depth > 1 and line.startswith(doc.delimiter):  # in `$(…)` bash also ends it at `EOF )`, `EOFx)`
            return -1
        i = nl + 1
    return -1


def _function(node: Node, text: str, parsed: Parsed) -> None:
    """A function named like a builtin, wrapper or shell changes what that name runs (one named like a program
    whose writes are modelled: sentinel/policy/writes.py, from `Parsed.functions`)."""
    name = _word(node.parts[0], text)[0] if getattr(node, "parts", None) else ""
    parsed.functions.append(name)
    if name in BUILTINS or name in WRAPPERS or name in SHELLS or name in OPAQUE:
        parsed.unsure(f"a function named `{name}` changes what that command runs")


def _word(part: Node, text: str) -> tuple[str, bool]:  # a bashlex word node
    """The word as the shell passes it (quotes removed by bash's rules), and whether the shell expands it."""
    raw = text[part.pos[0]:part.pos[1]]
    if is_dynamic(raw):
        return part.word, True
    return unquote(raw), False


def unquote(raw: str) -> str:
    """Quote removal as bash does it on a word with no expansion: `'a'"b"\\c` is `abc`, `"sr"'c'` is `src`."""
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(raw):
        c = raw[i]
        if quote == "'":
            if c == "'":
                quote = ""
            else:
                out.append(c)
        elif quote == '"':
            if c == '"':
                quote = ""
            elif c == "\\" and i + 1 < len(raw) and raw[i + 1] in '$`"\\\n':
                out.append(raw[i + 1] if raw[i + 1] != "\n" else "")
                i += 1
            else:
                out.append(c)
        elif c == "\\" and i + 1 < len(raw):
            out.append(raw[i + 1] if raw[i + 1] != "\n" else "")
            i += 1
        elif c in "'\"":
            quote = c
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _simple(node: Node, text: str, parsed: Parsed, depth: int) -> None:
    words: list[str] = []
    dynamic: list[bool] = []
    redirects: list[tuple[str, bool, tuple[str, str, bool]]] = []
    for part in getattr(node, "parts", []):
        kind = part.kind
        if kind == "word":
            word, dyn = _word(part, text)
            words.append(word)
            dynamic.append(dyn)
        elif kind == "redirect":
            redirects.append(_redirect(part, text, parsed))
        elif kind == "assignment":
            _assigned(text[part.pos[0]:part.pos[1]], parsed)
    if not words:  # `> f`, `x=1 > f`: the redirections are still made
        return _redirects(parsed, [r for _, _, r in redirects])
    _add(words, dynamic, redirects, node, text, parsed, depth)


def _redirects(parsed: Parsed, redirects: list[tuple[str, str, bool]]) -> None:
    """Redirections of no simple command: the line's, or (in a script run in another directory) those of a
    command `:` run there."""
    if parsed.cwd or parsed.elsewhere:
        parsed.commands.append(Command([":"], None, 1, tuple(redirects), parsed.elsewhere, parsed.repeating,
                                       parsed.cwd, parsed.cwd))
    else:
        parsed.redirects.extend(redirects)


def _assigned(word: str, parsed: Parsed) -> None:
    name = word.split("=", 1)[0].rstrip("+").split("[", 1)[0]
    if REBINDS.fullmatch(name):
        parsed.unsure(f"it sets `{name}`, which changes what commands run or where")


def _redirect(part: Node, text: str, parsed: Parsed) -> tuple[str, bool, tuple[str, str, bool]]:
    out: Node = getattr(part, "output", None)  # a bashlex node, or the fd number of a dup
    prefix = str(part.input) if isinstance(getattr(part, "input", None), int) else ""
    if isinstance(out, int):
        return f"{prefix}{part.type}{out}", False, ("dup", str(out), False)
    target, dyn = _word(out, text) if out is not None else ("", False)
    return f"{prefix}{part.type} {target}", dyn, (part.type, target, dyn)


def _add(words: list[str], dynamic: list[bool], redirects: list[tuple[str, bool, tuple[str, str, bool]]],
         node: Node, text: str, parsed: Parsed, depth: int) -> None:
    tokens = words + [r for r, _, _ in redirects]
    flags = dynamic + [d for _, d, _ in redirects]
    open_at = next((i for i, d in enumerate(flags) if d), None)
    redirs = tuple(r for _, _, r in redirects)
    name = words[0].rsplit("/", 1)[-1]
    _append(tokens, open_at, len(words), redirs, dynamic, parsed)
    if open_at == 0:
        return parsed.unsure("the command name is an expansion")
    if name != words[0]:
        _append([name] + tokens[1:], open_at, len(words), redirs, dynamic, parsed)
    _inner(name, words, dynamic, redirects, node, text, parsed, depth)


def _append(tokens: list[str], open_at: int | None, nwords: int, redirects: tuple[tuple[str, str, bool], ...],
            dynamic: list[bool], parsed: Parsed) -> None:
    """Adds the command, with where it runs: the directory of the commands being added, and git's `-C DIR`."""
    cwd, away = _git_moves(tokens[:nwords], dynamic) if tokens[0].rsplit("/", 1)[-1] == "git" and open_at != 0 \
        else ("", "")
    away = parsed.elsewhere or away
    parsed.commands.append(Command(tokens, open_at, nwords, redirects, away, parsed.repeating,
                                   "" if away else _joined(parsed.cwd, cwd), "" if away else parsed.cwd))


def _joined(outer: str, inner: str) -> str:
    """A directory `inner` taken from `outer` (both relative to where the line's commands run, or absolute)."""
    import posixpath

    return posixpath.join(outer, inner) if outer and inner else outer or inner


def _git_moves(words: list[str], dynamic: list[bool]) -> tuple[str, str]:
    """(the directory `git -C DIR …` works in, why it works where the line does not say: `--git-dir`,
    `--work-tree`, `-C` of an expansion)."""
    cwd = ""
    i = 1
    while i < len(words) and words[i].startswith("-"):
        word = words[i]
        if word.startswith(("--git-dir", "--work-tree")) or (word.startswith("-C") and word != "-C"):
            return "", f"`git {word}` works in a directory the line does not name"
        if word == "-C":
            if i + 1 >= len(words) or dynamic[i + 1]:
                return "", "`git -C` of an expansion works in a directory the line does not name"
            cwd = _joined(cwd, words[i + 1])
            i += 1
        elif word in ("-c", "--namespace", "--config-env"):
            i += 1
        i += 1
    return cwd, ""


def _inner(name: str, words: list[str], dynamic: list[bool], redirects: list[tuple[str, bool, tuple[str, str, bool]]],
           node: Node, text: str, parsed: Parsed, depth: int) -> None:
    """The commands this one runs in turn: a wrapped command, a shell's script string, find's -exec."""
    if name in OPAQUE:
        return parsed.unsure(f"`{name}` runs text the parse cannot see")
    if name.startswith("-"):
        return parsed.unsure(f"a wrapped command starts with `{name}`: an option the parse did not read")
    if name in SHELLS or name in FOREIGN_SHELLS or _SHELL_NAME.fullmatch(name):
        return _shell(words, dynamic, node, text, parsed, depth)
    if name in ("su", "runuser"):
        return _su(name, words, dynamic, node, text, parsed, depth)
    if name in COMMAND_OPTION:
        return _command_option(words, dynamic, COMMAND_OPTION[name], parsed, depth)
    if name in STRING_AFTER:
        return _string_after(words, dynamic, parsed, depth)
    if name in READS_INPUT:
        return _input(node, text, parsed, depth, f"`{name}` runs the commands its input holds")
    if name in SETS_VARIABLES:
        return _sets_variables(name, words, parsed)
    if name == "hash" and any(w.startswith("-") and "p" in w for w in words[1:]):
        return parsed.unsure("`hash -p` binds a command name to another program")
    if name == "git":
        return _git(words, dynamic, parsed)
    if name == "find":
        return _find_exec(words, dynamic, node, text, parsed, depth)
    if name not in WRAPPERS or depth > MAX_DEPTH:
        return
    got = _wrapped_start(name, words, dynamic, parsed, depth)
    if got is None:
        return
    start, cwd, away = got
    outer = parsed.cwd, parsed.elsewhere
    parsed.elsewhere = parsed.elsewhere or away
    parsed.cwd = "" if parsed.elsewhere else _joined(parsed.cwd, cwd)
    try:
        # the wrapper's redirections are opened where it runs (its own command has them), not where it moves
        _wrapped(name, start, words, dynamic, redirects if not (cwd or away) else [], node, text, parsed, depth)
    finally:
        parsed.cwd, parsed.elsewhere = outer


def _wrapped(name: str, start: int, words: list[str], dynamic: list[bool],
             redirects: list[tuple[str, bool, tuple[str, str, bool]]], node: Node, text: str, parsed: Parsed,
             depth: int) -> None:
    """The command a wrapper runs, from `words[start]`."""
    if start >= len(words):
        if name in ("sudo", "doas") and any(w in ("-s", "-i", "--shell", "--login") or
                                            (w[:1] == "-" and w[1:2] != "-" and ("s" in w or "i" in w))
                                            for w in words[1:]):
            parsed.unsure(f"`{name}` opens a shell that reads its script from its input")
        return
    inner_words, inner_dynamic = words[start:], dynamic[start:]
    if name == "flock" and inner_words[0] in ("-c", "--command"):  # `flock FILE -c STRING`: run by $SHELL -c
        if len(inner_words) < 2 or inner_dynamic[1]:
            return parsed.unsure("flock runs an expanded string")
        return _script(inner_words[1], parsed, depth + 1)
    if name in RUNS_STRING:
        if any(inner_dynamic):
            return parsed.unsure(f"`{name}` runs an expanded string")
        return _script(" ".join(inner_words), parsed, depth + 1)
    if name in ("xargs", "parallel"):  # its input becomes more arguments: everything after the words is unknown
        marker = _xargs_placeholder(name, words[1:start], dynamic[1:start])
        if marker:  # the replace string is the input: every word holding it is an expansion
            inner_dynamic = [d or marker in w for w, d in zip(inner_words, inner_dynamic)]
        if name == "parallel":  # `{}`, `{.}`, `{1}`… and the arguments after `:::` are its input
            inner_dynamic = [d or "{" in w or w.startswith(":::") for w, d in zip(inner_words, inner_dynamic)]
            if any(re.search(r"[\s;&|<>()`$]", w) for w in inner_words):
                return parsed.unsure("parallel runs its command through a shell")
        open_at = next((i for i, d in enumerate(inner_dynamic) if d), len(inner_words))
        _append(inner_words, open_at, len(inner_words), (), inner_dynamic, parsed)
        if inner_dynamic[0]:
            return parsed.unsure("xargs runs an expanded command name")
        return _inner(inner_words[0].rsplit("/", 1)[-1], inner_words, inner_dynamic, [], node, text, parsed,
                      depth + 1)
    _add(inner_words, inner_dynamic, redirects, node, text, parsed, depth + 1)


def _sets_variables(name: str, words: list[str], parsed: Parsed) -> None:
    """`export PATH=…`, `read PATH`, `printf -v PATH …`, `declare -n r=PATH`: a variable that rebinds commands."""
    for word in words[1:]:
        if word.startswith("-") and name in ("declare", "typeset", "local") and "n" in word:
            return parsed.unsure(f"`{name} -n` makes a name refer to another variable")
        target = word.split("=", 1)[0].rstrip("+").split("[", 1)[0]
        if REBINDS.fullmatch(target):
            return parsed.unsure(f"`{name}` sets `{target}`, which changes what commands run or where")


def _git(words: list[str], dynamic: list[bool], parsed: Parsed) -> None:
    """git options that name a program git runs (`--upload-pack=CMD`, `grep -O CMD`, `rebase -x CMD`) or
    configuration that can (`-c alias.x=!CMD`): unsure."""
    i = 1
    while i < len(words) and words[i].startswith("-"):
        word = words[i]
        if word in ("-c", "--config-env") or word.startswith("--config-env="):
            value = words[i + 1] if word == "-c" and i + 1 < len(words) else ""
            if not (value and not dynamic[i + 1] and _GIT_SAFE_CONFIG.match(value)):
                return parsed.unsure("`git -c` sets configuration that can name a program git runs")
            i += 1
        elif word.startswith("--exec-path="):
            return parsed.unsure("`git --exec-path` runs its commands from another directory")
        elif word in ("-C", "--git-dir", "--work-tree", "--namespace"):
            i += 1
        i += 1
    sub = words[i] if i < len(words) else ""
    for word in words[i + 1:]:
        if _GIT_RUNS.match(word) or (sub == "grep" and word.startswith("-O")) or \
                (sub in ("rebase", "difftool") and word[:1] == "-" and word[1:2] != "-" and "x" in word) or \
                (sub in ("clone", "ls-remote", "archive") and word[:1] == "-" and word[1:2] != "-" and "u" in word):
            return parsed.unsure(f"`git {sub} {word}` runs a program named in an option")
    if sub in ("submodule", "bisect") and any(w in ("foreach", "run") for w in words[i + 1:]):
        return parsed.unsure(f"`git {sub}` runs a command given as arguments")


def _xargs_placeholder(name: str, options: list[str], dynamic: list[bool]) -> str:
    """The replace string of `xargs -I STR`/`-i[STR]`/`--replace[=STR]` (`{}` when not given), else ""."""
    found = read_options([name, *options], [False, *dynamic], Spec(*WRAPPERS[name][:2]))
    marker = ""
    for name, value, _ in found.found:
        if name in ("-I", "-i", "--replace"):
            marker = value or "{}"
    return marker


def _wrapped_start(name: str, words: list[str], dynamic: list[bool], parsed: Parsed,
                   depth: int) -> tuple[int, str, str] | None:
    """(where the wrapped command starts, read with the wrapper's own option spec; the directory it runs in, if
    the line names it; why it runs in one the line does not name, see `_moves`); None when unsure (an option not
    known, an expansion among the options) or when `env -S` ran its split string."""
    if name == "bwrap":
        start = _bwrap_start(words, dynamic, parsed)
        return None if start is None else (start, "", "`bwrap` runs it in a file system its options make")
    short, long, positionals = WRAPPERS[name]
    found = read_options(words, dynamic, Spec(short, long, name in ANY_LONG))
    if found.why:
        parsed.unsure(f"`{name}`: {found.why}")
        return None
    start = found.end
    if name in ("env", "sudo"):  # `env A=1 cmd`, `sudo A=1 cmd`: assignments before the command
        while start < len(words) and _NAME.match(words[start]) and not dynamic[start]:
            _assigned(words[start], parsed)
            start += 1
    if name == "env" and found.has("-S", "--split-string"):
        _env_split(words, dynamic, found, node=None, parsed=parsed, depth=depth)
        return None
    return (start + positionals, *_moves(name, found, words, dynamic))


# env -S's own grammar (GNU env): words split at these; quotes, `\` escapes (`\_` is a space, `\c` ends the
# string), `${VAR}` and `#` comments are read by rules of its own, not bash's: a string with them is unsure
_ENV_SPLIT_PLAIN = _Lazy(r"[^\\$'\"#]*")
_ENV_SEPARATORS = _Lazy(r"[ \t\n\v\f\r]+")


def _env_split(words: list[str], dynamic: list[bool], found: Options, node: Node, parsed: Parsed,
               depth: int) -> None:
    """`env [OPTIONS] -S STRING [ARGS]`: env reads STRING's words as more of its own arguments, then ARGS: the
    line env then reads (its options again, its assignments, the command) is added as a command of its own."""
    name, value, dyn = found.found[-1]
    if name not in ("-S", "--split-string") or sum(o in ("-S", "--split-string") for o, _, _ in found.found) > 1:
        return parsed.unsure("env -S among other options: where its words go is not read here")
    if dyn or value is None or any(dynamic[found.end:]) or not _ENV_SPLIT_PLAIN.fullmatch(value):
        return parsed.unsure("env -S splits a string with quotes, escapes or variables (its own grammar, not "
                             "bash's) or an expansion")
    before: list[str] = []
    for option, argument, _ in found.found[:-1]:
        before += [option] if argument is None else [f"{option}={argument}"] if option.startswith("--") \
            else [option, argument]
    rest = words[found.end - 1:] if words[found.end - 1] == "--" and value != "--" else words[found.end:]
    line = [words[0], *before, *[w for w in _ENV_SEPARATORS.split(value) if w], *rest]
    if depth <= MAX_DEPTH:
        _add(line, [False] * len(line), [], node, "", parsed, depth + 1)


# Wrappers that run their command in another directory or root: (options naming a directory the line names,
# relative to where it runs; options that move it where the line does not say). `_moves` adds those that move it
# unless an option keeps it (`systemd-run` runs a service in `/` unless `--scope`/`--same-dir`, `pkexec` in the
# target's home unless `--keep-cwd`, `chroot` always).
CHDIR = {
    "env": (("-C", "--chdir"), ()),
    "sudo": (("-D", "--chdir"), ("-R", "--chroot", "-i", "--login")),
    "unshare": (("-w", "--wd"), ("-R", "--root")),
    "nsenter": ((), ("-w", "--wd", "-W", "--wdns", "-r", "--root")),
    "proot": ((), ("-r", "--rootfs", "-R", "-S", "-b", "--bind", "-m", "--mount", "-w", "--pwd", "--cwd")),
    "chpst": ((), ("-/", "-C")),
    "run0": ((), ("-D", "--chdir", "-u", "--user")),
    "systemd-run": ((), ("--working-directory",)),
    "parallel": ((), ("--workdir",)),
    "firejail": ((), ("--chroot", "--private", "--private-cwd", "--bind", "--overlay", "--overlay-named",
                      "--overlay-tmpfs")),
}
ALWAYS_MOVES = {"chroot": (), "systemd-run": ("--scope", "-d", "--same-dir"), "pkexec": ("--keep-cwd",)}


def _moves(name: str, found: Options, words: list[str], dynamic: list[bool]) -> tuple[str, str]:
    """(the directory the wrapper runs its command in, when the line names it: `env -C sub`, `sudo -D sub`;
    why it runs it where the line does not say: `chroot`, `sudo -i`, `nsenter -w`, `env -C $d`)."""
    named, away = CHDIR.get(name, ((), ()))
    for option, _value, _dyn in found.found:
        if option in away or (name == "firejail" and option.startswith(("--private", "--overlay"))):
            return "", f"`{name} {option}` runs it in another directory or root"
    if name in ALWAYS_MOVES and not found.has(*ALWAYS_MOVES[name]):
        return "", f"`{name}` runs it in another directory or root"
    values = found.values(*named)
    if not values:
        return "", ""
    value, dyn = values[-1]
    if dyn or value is None:
        return "", f"`{name}` runs it in a directory the text does not spell"
    return value, ""


def _bwrap_start(words: list[str], dynamic: list[bool], parsed: Parsed) -> int | None:
    i = 1
    while i < len(words) and words[i].startswith("--"):
        if dynamic[i] or words[i] not in BWRAP_ARGS and words[i] != "--":
            parsed.unsure(f"`bwrap {words[i]}`: an option not known here")
            return None
        if words[i] == "--":
            return i + 1
        i += 1 + BWRAP_ARGS[words[i]]
    return i


def _shell(words: list[str], dynamic: list[bool], node: Node, text: str, parsed: Parsed, depth: int) -> None:
    """`bash -c STRING`: the string is parsed again; a shell reading its script from its input (`-s`, no
    operand, `/dev/stdin`) runs a literal here-string, parsed again, or is unsure; one reading it from a process
    substitution or another descriptor (`bash <(…)`, `--rcfile /dev/fd/3`) is unsure. A shell whose grammar is
    not bash's (`fish`, `csh`) running a string or its input is unsure."""
    name = words[0].rsplit("/", 1)[-1]
    i, has_c, has_s = 1, False, False
    while i < len(words) and words[i].startswith(("-", "+")) and words[i] not in ("-", "--"):
        word = words[i]
        if word in ("--rcfile", "--init-file"):  # a file the shell runs first
            if i + 1 < len(words) and (dynamic[i + 1] or _INPUT_FILE.search(words[i + 1])):
                return parsed.unsure(f"a shell runs its `{word}` from its input or a descriptor")
            i += 1
        elif not word.startswith("--"):
            has_c = has_c or "c" in word[1:]
            has_s = has_s or "s" in word[1:]
            i += sum(c in "oO" for c in word[1:])  # `-o pipefail`, `-eo pipefail`: each takes the next word
        i += 1
    if i < len(words) and words[i] == "--":
        i += 1
    operand = words[i] if i < len(words) and words[i] != "-" else None
    if _foreign(name):
        if has_c or has_s or operand is None or dynamic[i] or _INPUT_FILE.search(operand):
            parsed.unsure(f"`{name}` runs a script in a grammar other than bash's")
        return
    if operand is not None and has_c:
        if dynamic[i]:
            return parsed.unsure("a shell runs an expanded string")
        return _script(operand, parsed, depth + 1)
    if operand is not None and not has_s and operand not in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
        if dynamic[i] or _INPUT_FILE.search(operand):
            return parsed.unsure("a shell runs a script from a process substitution, a descriptor or an expansion")
        return  # `bash script.sh`: a program like any other; its file is not read
    _input(node, text, parsed, depth, "a shell reads its script from its input")


def _foreign(shell: str) -> bool:
    """A shell whose grammar is not bash's (a version in its name too: `fish3`)."""
    return re.sub(r"[-.]?[0-9][0-9.]*$", "", shell.rsplit("/", 1)[-1]) in FOREIGN_SHELLS


# a script file that is a pipe or a descriptor: a process substitution, /dev/stdin, /dev/fd/N, /proc/…/fd/N
_INPUT_FILE = _Lazy(r"^[<>]\(|(?:^|/)(?:dev|proc|fd)(?:/|$)|(?:^|/)std(?:in|out|err)$")


def _input(node: Node, text: str, parsed: Parsed, depth: int, why: str) -> None:
    """A command that runs the script its input holds: a literal here-string is parsed again; else unsure."""
    strings = [p for p in getattr(node, "parts", []) if p.kind == "redirect" and p.type == "<<<"]
    if strings and not is_dynamic(text[strings[0].output.pos[0]:strings[0].output.pos[1]]):
        return _script(_word(strings[0].output, text)[0], parsed, depth + 1)
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


def _su(name: str, words: list[str], dynamic: list[bool], node: Node, text: str, parsed: Parsed,
        depth: int) -> None:
    """`su|runuser [OPTIONS] [-] [USER [ARG…]]`, read as util-linux's getopt reads it (options and operands mix):
    each `-c`/`--command`/`--session-command` string is parsed again (`-lc STRING`, `-cSTRING`); `runuser -u USER
    COMMAND…` runs COMMAND; otherwise the user's shell runs with the ARGs (`su root -- -c STRING`), or reads its
    script from its input. `-l`, `--login`, `-` run it in the user's home directory."""
    found = read_options(words, dynamic, Spec(*WRAPPERS["runuser"][:2]))
    if found.why:
        return parsed.unsure(f"`{name}`: {found.why}")
    operands = found.operands
    login = found.has("-l", "--login") or bool(operands and operands[0][0] == "-")
    operands = operands[1:] if operands and operands[0][0] == "-" else operands
    if any(dyn or value is None or _foreign(value) for value, dyn in found.values("-s", "--shell")):
        return parsed.unsure(f"`{name} -s` runs it with a shell whose grammar may not be bash's")
    outer = parsed.elsewhere
    if login:
        parsed.elsewhere = parsed.elsewhere or f"`{name} -l` runs it in the user's home directory"
    try:
        strings = found.values("-c", "--command", "--session-command")
        if name == "runuser" and found.has("-u", "--user") and not strings:
            if not operands:
                return parsed.unsure("runuser opens a shell that reads its script from its input")
            return _add([w for w, _ in operands], [d for _, d in operands], [], node, text, parsed, depth + 1)
        for value, dyn in strings:
            if dyn or value is None:
                return parsed.unsure(f"`{name}` runs an expanded string")
            _script(value, parsed, depth + 1)
        if strings:
            return None
        if len(operands) > 1:  # the words after the user are the shell's arguments
            return _shell(["sh", *(w for w, _ in operands[1:])], [False, *(d for _, d in operands[1:])], node,
                          text, parsed, depth + 1)
        return _input(node, text, parsed, depth, f"`{name}` opens a shell that reads its script from its input")
    finally:
        parsed.elsewhere = outer


def _find_exec(words: list[str], dynamic: list[bool], node: Node, text: str, parsed: Parsed, depth: int) -> None:
    """find's -exec/-ok commands: `{}` is each match (an expansion); -execdir/-okdir run in its directory."""
    i = 1
    while i < len(words):
        word = words[i]
        if word not in FIND_EXEC:
            i += 1
            continue
        end = find_exec_end(words, i)
        if end > i + 1 and depth <= MAX_DEPTH:
            outer = parsed.elsewhere
            if word.endswith("dir"):
                parsed.elsewhere = f"`find {word}` runs it in each match's directory"
            _add(words[i + 1:end], [d or "{}" in w for w, d in zip(words[i + 1:end], dynamic[i + 1:end])],
                 [], node, text, parsed, depth + 1)
            parsed.elsewhere = outer
        i = end + 1


def find_exec_end(words: list[str], i: int) -> int:
    """Where the command of find's `-exec` (`-execdir`, `-ok`, `-okdir`) at `words[i]` ends, as GNU find ends it:
    at `;`, or (-exec and -execdir only) at a `+` right after a word `{}`; len(words) when nothing ends it."""
    plus = words[i] in ("-exec", "-execdir")
    for j in range(i + 1, len(words)):
        if words[j] == ";" or (plus and words[j] == "+" and j > i + 1 and words[j - 1] == "{}"):
            return j
    return len(words)


def is_dynamic(raw: str) -> bool:
    """True when the shell expands this word (as written) into text the word does not spell out: a `$`,
    backquote, glob or leading `~` outside single quotes, or a brace expansion (an unquoted `{` whose matching
    unquoted `}` has an unquoted `,` or `..` at its own level: `{a,"x y"}`, `{a,{b}}`, `x{1..3}`; not `{}`,
    `{x}`, `'{a,b}'`)."""
    quote = ""
    braces: list[bool] = []  # each open unquoted `{`: whether a `,` or `..` stands at its level
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
        elif c in "*?" or (c == "[" and "]" in raw[i + 2:]) or (c == "~" and (i == 0 or raw[i - 1] in "=:")):
            return True
        elif c == "{":
            braces.append(False)
        elif c == "}" and braces and braces.pop():
            return True
        elif braces and (c == "," or raw.startswith("..", i)):
            braces[-1] = True
        i += 1
    return False
