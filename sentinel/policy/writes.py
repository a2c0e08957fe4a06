"""What a bash command line may write: the paths, from the same parse as its commands, or "unknown".

    written(text, root, cwd=None) -> Writes    .paths: where each write lands (sentinel.policy.landing), relative
                                               to the root or absolute; .why: non-empty when the set is unknown
    writes_nothing(text) -> bool               a cheap check without the parser: True only for a line of plain
                                               words whose every command is known read-only (`ls -la && git status`)

The default is "unknown". A line writes through the redirections of every simple command, of commands with no
word (`> f`) and of compound commands (`>`, `>>`, `>|`, `&>`, `<>`; `>&2` and the like duplicate a descriptor
and write nothing), and through the operands of the known writers of SPECS, read as their getopt reads them
(`cp -tDIR`, `--target=DIR`, `sort -oFILE`, grouped flags, unique prefixes of long options); an option a
writer's spec does not know makes the set unknown. A command is read-only only when its name is in READ_ONLY,
each of its options is one READ_ONLY lists as harmless for it (`shuf -o`, `history -w`, `tree -o` write) and
each operand one READ_ONLY_OPERANDS allows (`date MMDDhhmm`, `hostname NAME` change the system). The action
policy's read-only rule asks this same model (sentinel.policy.action_policy, `writes_nothing`).

Directories: a relative path is taken from every directory the line can reach. The line's cwd, and each
literal `cd DIR`/`pushd DIR` of the line (wherever it stands: a `cd` after a write in a loop, or before a
function's call, still applies to it), followed both as text (`cd l/..` is `.`) and through its symlinks
(`cd -P l/..`, `set -P`); a `cd` that may run more than once (in a loop or a function) is applied until no new
directory comes. A command the parse runs in a directory the line names (`env -C DIR`, `sudo -D DIR`, `git -C
DIR`: `Command.cwd`) writes from there, its redirections from where the shell opens them. The set is unknown
when a `cd` goes somewhere the text does not say (`cd $X`, `cd -`, a target CDPATH or `cdable_vars` may
redirect), when too many directories are reachable, and when a command writes from a directory the line does not
name (`find -execdir`, `env -C $d`, `chroot`, `sudo -i`: `Command.elsewhere`).

It is unknown too when the line's parse is not sure, a write position holds an expansion (`$f`, a glob, `~`,
a brace list, find's `{}`, xargs' input or its `-I` string), the line makes a symbolic link or puts an existing
one at a new place (`ln -s`, `cp -s`, `mv`/`cp -P`/`cp -R`/`ln`/`git mv` of a link or of a directory holding
one: `_places_link`) and writes anything else or changes directory, a sed script may write or run (`w`, `W`,
`e`, or a script this reading cannot follow), or a command is neither a known writer nor known read-only: an
interpreter (`python3 x.py`, `node`, `bash script.sh`), a build tool (`make`, `npm`), `patch`, `git apply`,
`git checkout BRANCH`, an unknown program. `Writes.spelled` tells the last kind (what a program does) from the
others (where the line's own commands write: `Writes.unplaced`). Wrappers (`env`, `sudo`, `timeout`, ...) are
transparent: the parse yields the command they run, and the wrapper's own options are checked like a read-only
command's.
"""

from __future__ import annotations

import os
import re
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook imports this module: no `typing` at run time
    from sentinel.policy.shell import Command, Options

WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
MAX_BASES = 64  # directories a line's `cd`s can reach before its relative writes count as unknown
MAX_WALK = 2000  # entries of a moved or copied directory looked at for a symlink before it counts as holding one
ANY = None  # READ_ONLY: every option of the command is harmless (audited: none writes a file or runs a program)
# Known read-only commands: name -> the options known harmless (short letters, long names), or ANY.
# Each is read with the option spec of OPTION_SPECS (or of the wrapper): an option not listed makes it unknown.
READ_ONLY: dict[str, tuple[str, frozenset[str]] | None] = {
    **dict.fromkeys((
        "ls", "cat", "grep", "egrep", "fgrep", "head", "tail", "wc", "echo", "printf", "pwd", "true", "false", ":",
        "test", "[", "which", "type", "whoami", "id", "stat", "du", "df", "cmp", "diff", "basename",
        "dirname", "realpath", "readlink", "cut", "tr", "sleep", "exit", "return", "ps", "uname",
        "nproc", "free", "uptime", "md5sum", "sha1sum", "sha256sum", "sha512sum", "tac", "nl", "od", "hexdump",
        "column", "paste", "join", "comm", "fold", "fmt", "expand", "unexpand", "seq", "yes", "base64", "strings",
        "jq", "wait", "export", "unset", "set", "shopt", "local", "declare", "read", "popd", "dirs", "command",
        "builtin", "help", "jobs", "printenv", "nice", "ionice", "timeout", "stdbuf", "setsid", "doas", "xargs",
        "busybox", "watch", "lsof", "pgrep", "locale", "getconf", "tty", "groups", "users", "who", "w", "last",
        "cal", "bc", "expr", "sum", "cksum", "b2sum", "look", "rev", "numfmt"), ANY),
    "shuf": ("einrz", frozenset({"echo", "input-range", "head-count", "repeat", "zero-terminated", "random-source"})),
    "history": ("cdnprs", frozenset()),  # not -w/-a: they write the history file
    "hash": ("dlrt", frozenset()),  # not -p: it binds a name to another program
    "file": ("0bcdEe:hiIkLlmNnPprSsvzZfF", frozenset({
        "brief", "mime", "mime-type", "mime-encoding", "dereference", "no-dereference", "uncompress", "keep-going",
        "special-files", "raw", "separator", "no-pad", "print0", "preserve-date", "files-from", "exclude", "extension",
        "apple", "magic-file", "parameter", "debug", "uncompress-noreport", "exclude-quiet"})),  # not -C: compiles
    "tree": ("adlfxLPIiqNQpugshDFvtcUrCnASJX", frozenset({
        "gitignore", "noreport", "charset", "filelimit", "matchdirs", "prune", "ignore-case", "info", "dirsfirst",
        "filesfirst", "du", "si", "inodes", "device", "timefmt", "sort", "nolinks", "metafirst"})),
    "env": ("aiuvS0", frozenset({"argv0", "ignore-environment", "null", "split-string", "unset", "debug",
                                 "block-signal", "default-signal", "ignore-signal", "list-signal-handling"})),
    "sudo": ("AaBbCcEgHhiKklNnPpSsTtUuVv", frozenset({
        "askpass", "background", "bell", "close-from", "preserve-env", "group", "set-home", "host", "login",
        "remove-timestamp", "reset-timestamp", "list", "no-update", "non-interactive", "preserve-groups", "prompt",
        "role", "stdin", "shell", "type", "command-timeout", "other-user", "user", "validate"})),  # not -e/-D/-R
    "time": ("fpqv", frozenset({"format", "portability", "quiet", "verbose"})),  # not -o: it writes a file
    "rg": ("ABCcdEeFgHhiLlMmNnopqrSsTtUuvwxz0", frozenset({
        "after-context", "before-context", "context", "count", "count-matches", "max-depth", "encoding", "regexp",
        "fixed-strings", "glob", "iglob", "with-filename", "no-filename", "ignore-case", "follow", "files",
        "files-with-matches", "files-without-match", "max-columns", "max-count", "line-number", "no-line-number",
        "only-matching", "quiet", "replace", "smart-case", "case-sensitive", "type", "type-not", "type-list",
        "unrestricted", "invert-match", "word-regexp", "line-regexp", "search-zip", "null", "hidden", "no-ignore",
        "no-ignore-vcs", "no-heading", "heading", "color", "colors", "json", "vimgrep", "sort", "sortr", "stats",
        "trim", "multiline", "pcre2", "column", "no-messages", "one-file-system", "passthru",
        "max-filesize", "threads", "debug", "engine", "glob-case-insensitive", "ignore-file", "no-config",
        "pretty", "byte-offset", "crlf", "context-separator", "field-match-separator", "path-separator"})),
    "ag": ("ABCcDfGgHhiLlmnprQSstuUvwz0", frozenset({
        "after", "before", "context", "count", "depth", "follow", "file-search-regex", "files-with-matches",
        "files-without-matches", "filename", "nofilename", "hidden", "ignore", "ignore-case", "ignore-dir",
        "literal", "max-count", "nocolor", "color", "noheading", "heading", "numbers", "nonumbers", "only-matching",
        "print-long-lines", "silent", "skip-vcs-ignores", "smart-case", "stats", "unrestricted", "vimgrep",
        "word-regexp", "case-sensitive", "column", "all-types", "search-zip", "group", "nogroup"})),
    "nohup": ("", frozenset()),
    "date": ("dfIrRu", frozenset({"date", "debug", "file", "iso-8601", "resolution", "rfc-email", "rfc-3339",
                                  "reference", "utc", "universal"})),  # not -s/--set: it sets the clock
    "hostname": ("aAdfiIsy", frozenset({"alias", "all-fqdns", "all-ip-addresses", "domain", "fqdn", "long",
                                        "ip-address", "short", "yp", "nis"})),  # not -b/-F: they set the name
}
# Read-only commands whose operands can change the system: the operands a read-only use takes (a regex)
READ_ONLY_OPERANDS = {"date": re.compile(r"\+.*", re.S), "hostname": re.compile(r"(?!)")}  # `date MMDDhhmm`
# getopt specs of the commands above whose options are checked, and of the writers below: (optstring, longs)
OPTION_SPECS: dict[str, tuple[str, str]] = {
    "shuf": ("ei:n:o:rz", "echo input-range= head-count= output= random-source= repeat zero-terminated"),
    "history": ("+acd:nprsw", ""),
    "hash": ("+dlp:rt", ""),
    "file": ("0bcCdEe:f:F:hiIklLm:NnpP:rsSvzZ", "brief checking-printout compile debug exclude= exclude-quiet= "
             "extension files-from= separator= no-dereference mime mime-type mime-encoding keep-going list "
             "dereference magic-file= no-pad print0 preserve-date parameter= raw special-files uncompress "
             "uncompress-noreport apple"),
    "tree": ("adlfxL:P:I:iqNQpugshDFvtcUrCnASJXRo:H:T:", "gitignore noreport charset= filelimit= matchdirs prune "
             "ignore-case info dirsfirst filesfirst du si inodes device timefmt= sort= nolinks metafirst fromfile "
             "hyperlink? nolinks output= fflinks"),
    "time": ("+af:o:pqv", "append format= output= portability quiet verbose"),
    "rg": ("A:B:C:cd:E:e:Ff:g:HhiLlM:m:NnopqrSsT:t:Uuvwxz0j:", "after-context= before-context= context= count "
           "count-matches max-depth= encoding= regexp= file= fixed-strings glob= iglob= with-filename no-filename "
           "ignore-case follow files files-with-matches files-without-match max-columns= max-count= line-number "
           "no-line-number only-matching quiet replace= smart-case case-sensitive type= type-not= type-list "
           "unrestricted invert-match word-regexp line-regexp search-zip null hidden no-ignore no-ignore-vcs "
           "no-heading heading color= colors= json vimgrep sort= sortr= stats trim multiline pcre2 column "
           "no-messages one-file-system passthru max-filesize= threads= debug engine= glob-case-insensitive "
           "ignore-file= no-config pretty byte-offset crlf context-separator= field-match-separator= "
           "path-separator= pre= pre-glob= hostname-bin= hyperlink-format="),
    "ag": ("A:B:C:cD:fG:g:HhiLlm:nprQSstuUvwz0", "after= before= context= count depth= follow file-search-regex= "
           "files-with-matches files-without-matches filename nofilename hidden ignore= ignore-case ignore-dir= "
           "literal max-count= nocolor color noheading heading numbers nonumbers only-matching print-long-lines "
           "silent skip-vcs-ignores smart-case stats unrestricted vimgrep word-regexp case-sensitive column "
           "all-types search-zip group nogroup pager= passthrough"),
    "nohup": ("+", ""),
    "date": ("d:f:I::r:Rs:u", "date= debug file= iso-8601? resolution rfc-email rfc-3339= reference= set= utc "
             "universal rfc-2822"),
    "hostname": ("aAbdfF:iIsy", "alias all-fqdns all-ip-addresses boot domain fqdn file= long ip-address short "
                 "yp nis"),
    # writers
    "cp": ("abdfHilLnprst:uvxPRS:TZ", "archive attributes-only backup? copy-contents debug dereference force "
           "interactive link no-clobber no-dereference no-preserve= one-file-system parents preserve? recursive "
           "reflink? remove-destination sparse= strip-trailing-slashes suffix= symbolic-link target-directory= "
           "no-target-directory update? verbose keep-directory-symlink context?"),
    "mv": ("bfinS:t:TuvZ", "backup? force interactive no-clobber no-copy strip-trailing-slashes suffix= "
           "target-directory= no-target-directory update? verbose context exchange debug"),
    "ln": ("bdfinrsLPS:t:Tv", "backup? directory force interactive logical no-dereference physical relative "
           "symbolic suffix= target-directory= no-target-directory verbose"),
    "install": ("bcCdDg:m:o:pPS:st:TvZ", "backup? compare debug directory group= mode= owner= preserve-timestamps "
                "preserve-context strip strip-program= suffix= target-directory= no-target-directory verbose "
                "context?"),
    "tee": ("aip", "append ignore-interrupts output-error?"),
    "rm": ("dfirIRv", "dir force interactive? one-file-system no-preserve-root preserve-root? recursive verbose"),
    "rmdir": ("pv", "ignore-fail-on-non-empty parents verbose"),
    "unlink": ("", ""),
    "link": ("", ""),
    "touch": ("acd:fhmr:t:", "date= no-create no-dereference reference= time="),
    "mkdir": ("m:pvZ", "mode= parents verbose context?"),
    "shred": ("fn:s:uvxz", "force iterations= random-source= size= remove? verbose exact zero"),
    "truncate": ("cor:s:", "no-create io-blocks reference= size="),
    # a mode like -w or -rwx reads as flags: every operand (the mode too) is taken as a path, more never fewer
    "chmod": ("cfvRrwxXstugoa", "changes silent quiet verbose no-preserve-root preserve-root reference= "
              "recursive"),
    "chown": ("cfhvRHLP", "changes dereference no-dereference from= no-preserve-root preserve-root quiet silent "
              "reference= recursive verbose"),
    "chgrp": ("cfhvRHLP", "changes dereference no-dereference no-preserve-root preserve-root quiet silent "
              "reference= recursive verbose"),
    "mkfifo": ("m:Z", "mode= context?"),
    "mknod": ("m:Z", "mode= context?"),
    "chattr": ("RVfv:p:", ""),
    "setfacl": ("bkndRLPm:M:x:X:", "remove-all remove-default no-mask mask default recursive logical physical "
                "modify= modify-file= remove= remove-file= set= set-file= restore= test"),
    "sort": ("bcCdfghiMmnrRsuVzk:o:S:t:T:", "ignore-leading-blanks check? dictionary-order ignore-case "
             "general-numeric-sort ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort "
             "random-source= reverse sort= version-sort batch-size= compress-program= debug files0-from= key= merge "
             "output= stable buffer-size= field-separator= temporary-directory= unique zero-terminated parallel="),
    "sed": ("bEe:f:i::l:nrsuz", "binary debug expression= file= follow-symlinks in-place? line-length= null-data "
            "zero-terminated posix quiet silent regexp-extended sandbox separate unbuffered"),
}
TARGET = ("-t", "--target-directory")
EVERY_OPERAND = frozenset({"tee", "rm", "rmdir", "unlink", "touch", "mkdir", "shred", "truncate", "chmod", "chown",
                           "chgrp", "mkfifo", "mknod", "mv", "chattr", "setfacl", "flock"})
GIT_READ = frozenset({"status", "log", "diff", "show", "blame", "rev-parse", "ls-files", "ls-tree", "grep",
                      "describe", "shortlog", "cat-file", "rev-list", "help", "version", "whatchanged", "name-rev",
                      "for-each-ref", "show-ref", "check-ignore", "merge-base", "--version", "--help"})
GIT_META = frozenset({"commit", "add", "fetch", "branch", "tag", "remote", "notes", "update-ref", "gc", "push",
                      "update-index"})  # they write under .git only
# The options of git's read-only and .git-only subcommands known harmless (exact names: git takes prefixes of long
# options, which are not listed, so unknown); any other option makes the command unknown.
GIT_SHORT = frozenset("0123456789abcdefghijklmnpqrstuvwxzABCDEFGHILMNPRSTUWXZ")  # not -o/-O (output, pager)
GIT_LONG = frozenset("""
    oneline stat shortstat numstat dirstat name-only name-status patch no-patch graph decorate no-decorate all
    color no-color follow reverse cached staged summary raw short long branch porcelain abbrev-commit no-merges
    merges first-parent pretty format since until after before author committer grep max-count skip word-diff
    word-diff-regex color-words ignore-all-space ignore-space-change ignore-blank-lines ignore-space-at-eol
    unified stat-width relative diff-filter find-renames find-copies no-renames exit-code quiet check minimal
    patience histogram anchored full-index binary abbrev source date name ignored untracked-files ahead-behind
    verbose show-stash null heads tags sort count line-number ignore-case invert-match word-regexp
    files-with-matches files-without-match extended-regexp fixed-strings perl-regexp basic-regexp
    recurse-submodules others exclude-standard modified deleted stage full-name show-toplevel show-prefix
    show-cdup abbrev-ref verify is-inside-work-tree is-bare-repository git-dir git-common-dir absolute-git-dir
    symbolic symbolic-full-name left-right cherry-pick cherry-mark topo-order date-order author-date-order
    walk-reflogs simplify-by-decoration boundary numbered email text no-textconv no-ext-diff merge no-abbrev
    show-signature no-show-signature remotes list contains no-contains merged no-merged points-at exclude
    match first-match long exact-match candidates dirty broken always full-history ancestry-path
    show-linear-break no-walk not mailmap no-mailmap use-mailmap encoding expand-tabs no-expand-tabs notes
    no-notes show-notes standard-notes relative-date parents children cc combined-all-paths dd diff-merges
    remerge-diff no-relative compact-summary patch-with-stat patch-with-raw histogram break-rewrites
    irreversible-delete pickaxe-all pickaxe-regex function-context show-function context max-depth
    threads and or heading break untracked no-index no-exclude-standard all-match invert-grep regexp-ignore-case
    full-diff line-prefix output-indicator-new output-indicator-old output-indicator-context submodule
    ignore-submodules src-prefix dst-prefix no-prefix default-prefix inter-hunk-context ita-invisible-in-index
    ita-visible-in-index ignore-cr-at-eol ignore-matching-lines indent-heuristic no-indent-heuristic
    color-moved color-moved-ws no-color-moved no-color-moved-ws word-diff exit-code show-current
    set-upstream set-upstream-to unset-upstream track no-track force force-with-lease force-if-includes
    delete dry-run no-verify follow-tags atomic progress no-progress prune prune-tags no-tags depth deepen
    unshallow shallow-since shallow-exclude multiple jobs append amend no-edit edit allow-empty
    allow-empty-message signoff no-signoff fixup squash reset-author message file template cleanup
    update intent-to-add ignore-errors ignore-missing chmod renormalize refresh really-refresh add remove
    assume-unchanged no-assume-unchanged skip-worktree no-skip-worktree index-info stdin aggressive auto
    keep-largest-pack annotate sign local-user create-reflog no-create-reflog column no-column
    ignore-unmatch cached expire ref mirror push-option recurse-submodules no-recurse-submodules
    porcelain thin no-thin ipv4 ipv6 set-url get-url no-deref create-reflog deref z
    """.split())
# git's global options read here, with how many words each takes (-C, --git-dir, --work-tree: the parse says where
# the command works, sentinel.policy.shell `Command.cwd`/`elsewhere`); any other makes what it writes unknown
GIT_GLOBAL = {"-C": 1, "--git-dir": 1, "--work-tree": 1, "--no-pager": 0, "-P": 0, "--no-optional-locks": 0,
              "--literal-pathspecs": 0, "--no-replace-objects": 0}
GIT_MESSAGE = frozenset({"-m", "--message", "-F", "--file", "--author", "--date", "-am"})
GIT_READ_CONFIG = frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--show-scope",
                             "--name-only", "--null", "-z", "--type", "--bool", "--int", "--path", "--default",
                             "--local", "--includes", "--no-includes"})
FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
# find's primaries, options and operators known here, with how many arguments each takes; any other is unknown
FIND_PRIMARIES = {
    **dict.fromkeys((
        "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-regextype",
        "-type", "-xtype", "-maxdepth", "-mindepth", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin",
        "-newer", "-anewer", "-cnewer", "-size", "-perm", "-user", "-group", "-uid", "-gid", "-links", "-inum",
        "-samefile", "-lname", "-ilname", "-printf", "-used", "-fstype", "-context", "-fprint", "-fprint0", "-fls",
        "-files0-from"), 1),
    "-fprintf": 2,
    **dict.fromkeys((
        "-print", "-print0", "-ls", "-prune", "-quit", "-true", "-false", "-not", "-a", "-and", "-o", "-or",
        "-depth", "-d", "-xdev", "-mount", "-follow", "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race",
        "-daystart", "-empty", "-readable", "-writable", "-executable", "-nouser", "-nogroup", "-delete", "-H",
        "-L", "-P", "-help", "--help", "-version", "--version", "-nowarn", "-warn"), 0),
}
_NEWER_XY = re.compile(r"-newer[aBcmt][aBcmt]$")
_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=:,./\- \t\n;&|]*$")  # no quote, expansion, glob, redirection or grouping
_SPLIT = re.compile(r"&&|\|\||[;&|\n]")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class Writes:
    __slots__ = ("paths", "why", "spelled")

    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.why = ""
        # the parse is sure and every word and redirection target is spelled in the text (no expansion, glob or
        # `~`): when the writes are unknown all the same, it is for what a program does, not for where a
        # command the line names writes
        self.spelled = True

    @property
    def known(self) -> bool:
        return not self.why

    def unknown(self, why: str) -> None:
        if not self.why:
            self.why = why

    def unplaced(self, why: str) -> None:
        """Unknown because the text does not say where a command it names writes (a symlink the line makes or
        moves, a directory the line does not name): never the kind of unknown a program's own writes are."""
        self.spelled = False
        self.unknown(why)

    def __repr__(self) -> str:
        return f"Writes({sorted(self.paths)!r}, why={self.why!r})"


# Every command name this module gives a meaning to (a function so named would change it)
KNOWN_NAMES = frozenset(READ_ONLY) | frozenset(OPTION_SPECS) | {"git", "find", "dd", "cd", "pushd", "popd"}


def writes_nothing(text: str) -> bool:
    """True when the line is plain words (no quote, `$`, glob, redirection, grouping) and each of its commands
    is known read-only and no wrapper: decided without importing the parser."""
    from sentinel.policy.shell import REBINDS, SETS_VARIABLES, WRAPPERS

    if not _PLAIN.match(text):
        return False
    for segment in _SPLIT.split(text):
        words = segment.split()
        while words and _ASSIGN.match(words[0]):
            if REBINDS.fullmatch(words.pop(0).split("=", 1)[0]):
                return False
        if words and (words[0] in WRAPPERS or words[0] in ("cd", "pushd") or words[0] in SETS_VARIABLES
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
    out.spelled = parsed.sure and all(c.open_at is None and not any(d for _, _, d in c.redirects)
                                      for c in parsed.commands) and not any(d for _, _, d in parsed.redirects)
    if not parsed.sure:
        out.unknown(f"the parse is not sure ({parsed.why})")
        return out
    if shadowed := [name for name in parsed.functions if name in KNOWN_NAMES]:
        out.unknown(f"a function named `{shadowed[0]}` changes what that command writes")
        return out
    start = os.path.normpath(os.path.join(root, cwd)) if cwd else os.path.normpath(root)
    bases = _bases(parsed.commands, start, root, out)
    writers = sum(_redirected(target, bases, root, out) for target in parsed.redirects)
    links = False
    for command in parsed.commands:
        wrote, link = _command(command, bases, root, out)
        writers += wrote
        links = links or link
    if links and (writers > 1 or len(bases) > 1):
        out.unplaced("a symbolic link the line makes or moves can send its other writes anywhere")
    return out


def _bases(commands: list[Command], start: str, root: str, out: Writes) -> list[str]:
    """Every directory the line's commands can run in: the start and where each `cd`/`pushd` of the line can
    lead, in any order a `cd` can come before a command (a loop repeats, a function runs where it is called)."""
    moves: list[tuple[list[str], bool]] = []  # (the directories one cd may lead to, from a base; it may repeat)
    shopt = any(c.words[0] == "shopt" for c in commands)  # cdable_vars: `cd NAME` goes to $NAME
    for command in commands:
        words = command.words[:command.nwords]
        if words[0].rsplit("/", 1)[-1] not in ("cd", "pushd"):
            continue
        dynamic = [command.open_at is not None and i >= command.open_at for i in range(len(words))]
        target, why = _cd_target(words, dynamic, shopt)
        if why:
            out.unplaced(why)
            return [start]
        if target is not None:
            moves.append(([target], command.repeats))
    bases = [start]
    if any(repeats for _, repeats in moves):  # a cd that may run again: apply every cd until nothing new comes
        changed = True
        while changed:
            changed = False
            for targets, _ in moves:
                for base in list(bases):
                    for new in _cd_to(base, targets[0], root):
                        if new not in bases:
                            bases.append(new)
                            changed = True
                if len(bases) > MAX_BASES:
                    out.unplaced("the line's `cd`s reach too many directories")
                    return [start]
        return bases
    for targets, _ in moves:  # each cd once, in the order written: it may or may not have applied before a command
        bases.extend(new for base in list(bases) for new in _cd_to(base, targets[0], root) if new not in bases)
        if len(bases) > MAX_BASES:
            out.unplaced("the line's `cd`s reach too many directories")
            return [start]
    return bases


def _cd_target(words: list[str], dynamic: list[bool], shopt: bool) -> tuple[str | None, str]:
    args = [w for w in words[1:] if w not in ("-P", "-L", "-e", "-@", "-Pe", "-eP", "--")]
    if len(args) != 1 or dynamic[-1] or args[0] in ("-", "") or args[0].startswith(("-", "+")):
        return None, "a `cd` to a directory the text does not spell"
    target = args[0]
    if not target.startswith(("/", "./", "../")) and target not in (".", "..") and \
            (shopt or os.environ.get("CDPATH")):
        return None, f"`cd {target}`: CDPATH or cdable_vars may take it to another directory"
    return target, ""


def _cd_to(base: str, target: str, root: str) -> list[str]:
    """Where `cd target` from base leads: as text (bash's default) and through its symlinks (`cd -P`, `set -P`)."""
    from sentinel.policy.landing import land

    lexical = os.path.normpath(os.path.join(base, target))
    physical = land(root, os.path.join(base, target)).path  # `l/..` after the link `l`, as the kernel walks it
    physical = os.path.normpath(physical if os.path.isabs(physical) else os.path.join(root, physical))
    return [lexical] if physical == lexical else [lexical, physical]


def _command(command: Command, bases: list[str], root: str, out: Writes) -> tuple[bool, bool]:
    """Lands what the command writes; (it writes something, it makes a symbolic link)."""
    words = command.words[:command.nwords]
    dynamic = [command.open_at is not None and i >= command.open_at for i in range(len(words))]
    if command.open_at == len(command.words):  # xargs: its input becomes more operands
        words, dynamic = words + ["(xargs input)"], dynamic + [True]
    here, opened = (_moved(bases, cwd, root) for cwd in (command.cwd, command.opened))  # `env -C sub`, `git -C sub`
    wrote = any([_redirected(target, opened, root, out) for target in command.redirects])
    name = words[0].rsplit("/", 1)[-1]
    if name in ("cd", "pushd"):
        return wrote, False  # see _bases
    paths, why = operands(words, dynamic)
    if command.elsewhere and (paths or why or command.redirects):
        out.unplaced(f"{command.elsewhere}: what it writes is relative to a directory the line does not name")
    elif why:
        out.unknown(why)
    for path in paths:
        _land(path, here, root, out)
    return wrote or bool(paths), bool(paths) and _places_link(name, words, dynamic, here)


def _moved(bases: list[str], cwd: str, root: str) -> list[str]:
    """The directories a command runs in that runs in `cwd` (relative to each base, or absolute)."""
    return list(dict.fromkeys(new for base in bases for new in _cd_to(base, cwd, root))) if cwd else bases


def _places_link(name: str, words: list[str], dynamic: list[bool], bases: list[str]) -> bool:
    """The command can put a symbolic link at a new place: `ln -s`/`cp -s` make one; `mv`, `git mv`, `cp` that
    does not follow links (-P, -d, -a, -R/-r without -L), `ln`/`link` (a hard link to a symlink is a symlink)
    carry one there when a source is a symlink or a directory holding one now, or does not exist yet (the line
    may make it); `git checkout/restore -- PATH` restores whatever the index holds."""
    if name == "git":
        sub = words[1] if len(words) > 1 else ""
        if sub != "mv":
            return sub in ("checkout", "restore")
        sources = [(w, d) for w, d in zip(words[2:], dynamic[2:]) if not w.startswith("-")][:-1]
    elif name == "link":
        sources = list(zip(words[1:2], dynamic[1:2]))
    elif name in ("mv", "cp", "ln"):
        found = _read(name, words, dynamic)
        if found.has("-s", "--symbolic", "--symbolic-link"):
            return True
        if found.has("-L", "--dereference", "--logical") or name == "cp" and not found.has(
                "-P", "-d", "--no-dereference", "-a", "--archive", "-R", "-r", "--recursive"):
            return False  # it follows the links it is given: what it puts there is a file's content
        ops = found.operands
        sources = ops if found.has(*TARGET) or (name == "ln" and len(ops) == 1) else ops[:-1]
    else:
        return False
    return any(dyn or _link_or_directory(src, bases) for src, dyn in sources)


def _link_or_directory(path: str, bases: list[str]) -> bool:
    """The path, from some base, is a symlink or a directory holding one (or too many entries to tell), or does
    not exist (yet)."""
    for base in bases:
        try:
            mode = os.lstat(os.path.join(base, path)).st_mode
        except OSError:
            return True
        if stat.S_ISLNK(mode) or (stat.S_ISDIR(mode) and _holds_link(os.path.join(base, path))):
            return True
    return False


def _holds_link(directory: str) -> bool:
    """A symlink somewhere below the directory, or more than MAX_WALK entries (or one unreadable) to look at."""
    todo, seen = [directory], 0
    while todo:
        try:
            with os.scandir(todo.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if entry.is_symlink() or seen > MAX_WALK:
                        return True
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
        except OSError:
            return True
    return False


def _redirected(target: tuple[str, str, bool], bases: list[str], root: str, out: Writes) -> bool:
    op, word, dynamic = target
    if op not in WRITE_REDIRECTS:
        return False
    if dynamic:
        out.unknown(f"a redirection to an expansion ({op} {word})")
        return True
    _land(word, bases, root, out)
    return True


def _land(path: str, bases: list[str], root: str, out: Writes) -> None:
    from sentinel.policy.landing import land

    if not path or "\x00" in path:
        return
    for base in bases if not os.path.isabs(path) else [root]:
        landing = land(root, os.path.join(base, path))
        out.paths.add(landing.path)
        if landing.others is None:
            out.unplaced(f"{path}: it lands through /proc or /dev/fd, or on a file with a name (a hard link) "
                        "Sentinel cannot find")
        else:
            out.paths.update(landing.others)  # a write to one name writes every name of the file


def _read(name: str, words: list[str], dynamic: list[bool]) -> Options:
    from sentinel.policy.shell import WRAPPERS, Spec, read_options

    short, long = OPTION_SPECS[name] if name in OPTION_SPECS else WRAPPERS[name][:2]
    return read_options(words, dynamic, Spec(short, long))


def _read_only(name: str, words: list[str], dynamic: list[bool]) -> str:
    """"" when every option of this read-only command is one known harmless; else why not."""
    allowed = READ_ONLY[name]
    if allowed is None:
        return ""
    letters, longs = allowed
    found = _read(name, words, dynamic)
    if found.why:
        return f"`{name}`: {found.why}"
    for option, _, _ in found.found:
        if not (option[2:] in longs if option.startswith("--") else option[1:] in letters):
            return f"`{name} {option}` is not known to write nothing"
    takes = READ_ONLY_OPERANDS.get(name)
    if takes and any(dyn or not takes.fullmatch(word) for word, dyn in found.operands):
        return f"`{name}` with an operand that can change the system (`date MMDDhhmm`, `hostname NAME`)"
    return ""


def operands(words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    """(the paths this simple command writes, why they cannot be known: "" when they can)."""
    name = words[0].rsplit("/", 1)[-1]
    if name == "git":
        return _git(words, dynamic)
    if name == "find":
        return _find(words, dynamic)
    if name == "sed":
        return _sed(words, dynamic)
    if name == "dd":
        return _dd(words, dynamic)
    if _runs_string(words) and _is_shell(name):
        return [], ""  # `bash -c STRING`: the parse yields the commands of the string
    if name in READ_ONLY:
        why = _read_only(name, words, dynamic)
        return (["nohup.out"] if name == "nohup" and not why else []), why  # nohup may write ./nohup.out
    if name not in OPTION_SPECS and name != "flock":  # flock: read with its wrapper spec (shell.WRAPPERS)
        return [], f"`{name}` is not known to write nothing (a program, an interpreter or a build tool)"
    found = _read(name, words, dynamic)
    if found.why:
        return [], f"`{name}`: {found.why}"
    if name == "sort":
        if found.has("--compress-program"):
            return [], "`sort --compress-program` runs a program"
        return _values(found, "sort -o", "-o", "--output")
    if name in ("cp", "install", "ln"):
        paths, why = _destination(name, found)
        if not why and _hard_links(name, found):  # the new name writes through to the source: both are written
            if any(dyn for _, dyn in found.operands):
                return [], f"`{name}` hard-links a source the text does not spell"
            paths = sorted(set(paths) | {w for w, _ in found.operands})
        return paths, why
    if name == "link":  # link FILE1 FILE2: FILE2 is a second name of FILE1
        if any(dyn for _, dyn in found.operands):
            return [], "`link` to a name the text does not spell"
        return [w for w, _ in found.operands], ""
    ops = found.operands[:1] if name == "flock" else found.operands
    if name == "mv":
        target, why = _values(found, "mv -t", *TARGET)
        if why:
            return [], why
        ops = ops + [(t, False) for t in target]
    if any(dyn for _, dyn in ops):
        return [], f"`{name}` writes a path the text does not spell"
    return [w for w, _ in ops], ""


def _values(found: Options, what: str, *names: str) -> tuple[list[str], str]:
    """Every value given to the option (a repeated option: each, the last one wins and the others are kept)."""
    values = found.values(*names)
    if any(dyn or value is None for value, dyn in values):
        return [], f"`{what}` an expansion"
    return [str(value) for value, _ in values], ""


def _is_shell(name: str) -> bool:
    from sentinel.policy.shell import _SHELL_NAME, SHELLS

    return name in SHELLS or bool(_SHELL_NAME.fullmatch(name)) and not name.startswith(tuple(_FOREIGN))


_FOREIGN = ("fish", "csh", "tcsh", "rc", "es", "xonsh", "elvish", "nu", "pwsh", "ion", "ysh")


def _runs_string(words: list[str]) -> bool:
    i = 1
    while i < len(words):
        word = words[i]
        if not word.startswith(("-", "+")) or word in ("-", "--"):
            return False
        if not word.startswith("--") and "c" in word[1:]:
            return True
        i += 1 + (sum(c in "oO" for c in word[1:]) if not word.startswith("--") else word in ("--rcfile", "--init-file"))
    return False


def _hard_links(name: str, found: Options) -> bool:
    """`ln` without -s, or `cp -l`/`--link`: the command makes a second name of its source, and a write to the
    new name writes the source."""
    if name == "ln":
        return not found.has("-s", "--symbolic")
    return name == "cp" and found.has("-l", "--link")


def _destination(name: str, found: Options) -> tuple[list[str], str]:
    """cp/install/ln: the `-t DIR` directory, else the last operand (ln with one operand: its basename here)."""
    if found.has(*TARGET):
        return _values(found, f"{name} -t", *TARGET)
    ops = found.operands
    if name == "install" and found.has("-d", "--directory"):
        return ([], "`install -d` to an expansion") if any(d for _, d in ops) else ([w for w, _ in ops], "")
    if not ops:
        return [], ""
    if ops[-1][1]:
        return [], f"`{name}` writes to a destination the text does not spell"
    if name == "ln" and len(ops) == 1:
        return [ops[0][0].rstrip("/").rsplit("/", 1)[-1]], ""
    return [ops[-1][0]], ""


def _git_options(words: list[str], dynamic: list[bool], sub: str) -> str:
    """"" when every option of `git SUB …` is one known harmless; else why not."""
    for i, (word, dyn) in enumerate(zip(words, dynamic)):
        if word == "--":
            break
        if dyn and i and words[i - 1] in GIT_MESSAGE and sub in ("commit", "tag", "notes"):
            continue  # `git commit -m "$msg"`: the argument of an option (no option of these writes a file)
        if dyn and not word[:1].isalnum():
            return f"`git {sub}` with an expansion that may be an option"
        if not word.startswith("-") or word == "-":
            continue
        if word.startswith("--"):
            if word[2:].partition("=")[0] not in GIT_LONG and not word[2:].partition("=")[0].startswith("no-"):
                return f"`git {sub} {word}` is not known to write nothing"
        elif not (set(word[1:]) <= GIT_SHORT or word[1:].isdigit() or (sub == "grep" and "O" not in word)):
            return f"`git {sub} {word}` is not known to write nothing"
    return ""


def _git(words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    """What `git [-C DIR]… SUB …` writes. A global option keeps it unknown, but what the subcommand names is still
    written, relative to where git works (`-C DIR`, `--git-dir`, `--work-tree`: the parse says where,
    `Command.cwd`/`elsewhere`): `git -C .claude rm settings.json` writes `.claude/settings.json`."""
    i = 1
    while i < len(words) and words[i].startswith("-") and words[i] not in ("--version", "--help"):
        if dynamic[i] or words[i] not in GIT_GLOBAL and not words[i].startswith(("--git-dir=", "--work-tree=")):
            return [], f"`git {words[i]}` (a global option) may work elsewhere"
        i += 1 + GIT_GLOBAL.get(words[i], 0)
    if i > 1:
        paths, why = _git(words[:1] + words[i:], dynamic[:1] + dynamic[i:])
        return paths, why or f"`git {words[1]}` (a global option) may work elsewhere"
    if i >= len(words):
        return [], ""
    if dynamic[i]:
        return [], "`git` runs a subcommand the text does not spell"
    sub = words[i]
    rest, rest_dyn = words[i + 1:], dynamic[i + 1:]
    if sub == "config":
        if any(rest_dyn) or not any(w in GIT_READ_CONFIG for w in rest) and \
                len([w for w in rest if not w.startswith("-")]) != 1:
            return [], "`git config` sets configuration, which can name programs git runs"
        if all(w in GIT_READ_CONFIG or not w.startswith("-") for w in rest):
            return [], ""
        return [], "`git config` with an option not known to write nothing"
    if sub in GIT_READ or sub in GIT_META:
        why = _git_options(rest, rest_dyn, sub)
        if why:
            return [], why
        return ([] if sub in GIT_READ else [".git"]), ""
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
    """find: its start directories when it deletes (-delete), the file of -fprint; -exec is parsed as a command.
    A primary not known here makes it unknown."""
    if any(dynamic):
        return [], "`find` with an expansion in its expression"
    found: list[str] = []
    starts: list[str] = []
    i, expression = 1, False
    while i < len(words):
        word = words[i]
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            from sentinel.policy.shell import find_exec_end

            i = find_exec_end(words, i) + 1
            expression = True
            continue
        if word in ("(", ")", "!", ",") or (word.startswith("-") and len(word) > 1):
            expression = True
            if word in ("(", ")", "!", ","):
                i += 1
                continue
            if word in ("-H", "-L", "-P", "-D") or word.startswith("-O"):
                expression = False if not found and not starts else expression  # options before the start points
            takes = 1 if _NEWER_XY.match(word) or word == "-D" else 0 if re.fullmatch(r"-O\d*", word) \
                else FIND_PRIMARIES.get(word)
            if takes is None:
                return [], f"`find {word}` is not known to write nothing"
            if word.startswith("-fprint") or word == "-fls":
                if i + takes < len(words):
                    found.append(words[i + takes])
            i += 1 + takes
            continue
        if not expression:
            starts.append(word)
        i += 1
    if "-delete" in words:
        found.extend(starts or ["."])
    return found, ""


def _sed(words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    """sed -i: its files; sed without -i writes only through a `w`/`W` command or `w` flag, and runs a program
    through `e`: every script (-e, --expression, the first operand) is read, and one that may hold any of them,
    or that this reading cannot follow, or a script file (-f), makes the set unknown."""
    found = _read("sed", words, dynamic)
    if found.why:
        return [], f"`sed`: {found.why}"
    if found.has("-f", "--file"):
        return [], "a sed script read from a file"
    scripts = found.values("-e", "--expression")
    ops = found.operands
    if not scripts and ops:
        scripts, ops = [ops[0]], ops[1:]
    if any(dyn or value is None or _sed_may_write(value) for value, dyn in scripts):
        return [], "a sed script that may write or run a program (`w`, `W`, `e`, or one this reading cannot follow)"
    if not found.has("-i", "--in-place"):
        return [], ""
    if any(dyn for _, dyn in ops):
        return [], "`sed -i` of an expansion"
    return [w for w, _ in ops], ""


_SED_PLAIN = frozenset("=dDgGhHnNpPxzF")


def _sed_may_write(script: str) -> bool:
    """True when a sed script may hold a `w`/`W`/`e` command or the `w`/`e` flag of `s`, or this reading of
    GNU sed's grammar cannot follow it: it errs toward True."""
    n = len(script)
    i = 0

    def regex_end(i: int, delim: str, brackets: bool = True) -> int:
        while i < n:
            c = script[i]
            if c == "\\":
                i += 2
                continue
            if c == "[" and brackets:
                j = i + 1
                j += script[j:j + 1] == "^"
                j += script[j:j + 1] == "]"
                while j < n and script[j] != "]":
                    if script[j] == "[" and script[j + 1:j + 2] in (":", "=", "."):
                        close = script.find(script[j + 1] + "]", j + 2)
                        if close < 0:
                            return -1
                        j = close + 2
                        continue
                    j += 1
                if j >= n:
                    return -1
                i = j + 1
                continue
            if c == delim:
                return i
            if c == "\n":
                return -1
            i += 1
        return -1

    def address(i: int) -> int:
        if i < n and script[i].isdigit():
            while i < n and (script[i].isdigit() or script[i] == "~"):
                i += 1
        elif i < n and script[i] == "$":
            i += 1
        elif i < n and script[i] in "/\\":
            delim = "/"
            if script[i] == "\\":
                if i + 1 >= n:
                    return -1
                delim, i = script[i + 1], i + 1
            end = regex_end(i + 1, delim)
            if end < 0:
                return -1
            i = end + 1
            while i < n and script[i] in "IM":
                i += 1
        return i

    while i < n:
        c = script[i]
        if c in " \t\n;{}!":
            i += 1
            continue
        if c == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        start = i
        i = address(i)
        if i < 0:
            return True
        if i > start and i < n and script[i] == ",":
            i += 1
            if i < n and script[i] in "+~":
                i += 1
            i = address(i)
            if i < 0:
                return True
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return i > start and False
        c = script[i]
        i += 1
        if c in "{};\n":
            continue
        if c in _SED_PLAIN:
            continue
        if c in "lLqQ":
            while i < n and (script[i].isdigit() or script[i] in " \t"):
                i += 1
            continue
        if c in ":btTv":  # a label (or version) up to `;` or the end of the line
            while i < n and script[i] not in ";\n":
                i += 1
            continue
        if c in "aicrR":  # text or a file name to read, up to the end of the line (`;` too: more, never fewer)
            while i < n and script[i] != "\n" and (c in "aic" or script[i] != ";"):
                i += 2 if script[i] == "\\" else 1
            continue
        if c in "sy":
            if i >= n or script[i] in "\n\\":
                return True
            delim = script[i]
            end = regex_end(i + 1, delim, brackets=c == "s")
            if end < 0:
                return True
            end = regex_end(end + 1, delim, brackets=False)
            if end < 0:
                return True
            i = end + 1
            if c == "s":
                while i < n and script[i] not in " \t\n;}#":
                    if script[i] not in "gpiImM0123456789":
                        return True  # w FILE, e, or a flag not known here
                    i += 1
            continue
        return True  # w, W, e, or a command not known here
    return False


def _dd(words: list[str], dynamic: list[bool]) -> tuple[list[str], str]:
    found: list[str] = []  # every of= (the last one wins; the others are kept: more, never fewer)
    for word, dyn in zip(words[1:], dynamic[1:]):
        if dyn:
            return [], "`dd` with an expansion among its operands"
        if word.startswith("of="):
            found.append(word[3:])
    return found, ""
