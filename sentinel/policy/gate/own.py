"""The gate's own files: a coding agent's call that writes them asks a person, whatever the repository says.

    own_rule(root) -> RuleDump     the built-in rule `sentinel-own-files` the hook adds to every call's rules

A coding agent runs as the user, so nothing in the kernel stops it from writing what gates it: the repository's
rules and gate config (`.claude/sentinel/`), the hook settings each client reads (`.claude/settings.json`,
`.codex/`, `.gemini/settings.json`, ...; the user-level ones in the home directory too) and the user's Sentinel
home (its config, store and allowlist). An instruction injected into the agent's context would otherwise switch
the gate off with one edit (`"disableAllHooks": true`, a rule file removed) before doing what the rule forbids.

The rule is a scope rule (no judge): a call whose known writes land in one of these paths is held for a person,
like any `ask` rule (the approval names the rule and the path). The hook adds it to the repository's rules on
every call; it is made here each time (a few literal paths, no wcmatch), never read from the repository's cache,
which the agent could rewrite (`.sentinel/` is protected too). Decided on where the write lands (symlinks
followed, `sentinel.policy.landing`), as every path rule is. A command whose line does not spell where it writes
(`rm -rf ~/.sentinel`, `> "$SENTINEL_HOME/config.yaml"`, a glob, a brace list, a parse that is not sure) may
write them: held.
*Limit:* a line that spells every word but runs a command outside the write model (sentinel.policy.writes: a
program, an interpreter, a build tool, a writer it does not list) is not held by this rule, even when the line
names a protected path literally: `npm test`, `python gen.py`, `git pull`, and writers such as `uniq IN OUT`,
`curl -o OUT`, `split IN PREFIX`, `rsync`, `tar -x` (holding them would hold every build); the repository's
`file_write` rules still apply to it. A repository whose config no longer loads turns the hook off (fail_open)
before any rule; the write that broke it was held.
"""

from __future__ import annotations

import os
import re
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sentinel.policy.gate.dump import PatternDump, RuleDump

RULE_ID = "sentinel-own-files"
DESCRIPTION = ("writes Sentinel's own files (the gate's rules and config, a coding agent's hook settings, Sentinel's "
               "home): a person decides, whatever the repository's rules say")
# In the repository: the gate's directory and every client's hook settings (sentinel/hooks/trust.py CONFIG names
# the files `sentinel hook install` writes; a client's settings can also switch hooks off, so the whole file).
# Cline reads hooks from `.clinerules/hooks/` and (its CLI and SDK) `.cline/hooks/` (docs: HOOK-PROTOCOLS.md).
# The clients' MCP server definitions too: a rule scoped `db:*` and an allowlisted `db/query` call mean the server
# named `db`, so redefining what that name runs is rewriting the gate (Claude Code `.mcp.json`, Cursor, VS Code's
# Copilot, Amazon Q; Gemini's are in its settings.json, Codex's in `.codex/`).
IN_REPO = (".claude/sentinel", ".sentinel", ".claude/settings.json", ".claude/settings.local.json", ".codex",
           ".gemini/settings.json", ".github/hooks", ".cursor/hooks.json", ".windsurf/hooks.json", ".clinerules/hooks",
           ".cline/hooks", ".amazonq/cli-agents", ".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json",
           ".amazonq/mcp.json")
# In the user's home: the same clients' user-level settings, and the trust that decides whether a client loads a
# repository's hooks at all (Codex's in `.codex/config.toml`, Copilot's in `.copilot/config.json`, Gemini's
# `.gemini/trustedFolders.json`). Cline's user-level hooks: `Documents/Cline/Hooks` (the extension), `.cline/hooks`.
IN_HOME = (".claude/settings.json", ".claude/settings.local.json", ".codex", ".gemini/settings.json",
           ".gemini/trustedFolders.json", ".copilot", ".cursor/hooks.json", ".codeium/windsurf/hooks.json",
           ".aws/amazonq/cli-agents", ".cline/hooks", "Documents/Cline/Hooks",
           ".claude.json", ".cursor/mcp.json", ".aws/amazonq/mcp.json", ".codeium/windsurf/mcp_config.json")


def sentinel_home() -> str:
    return os.path.expanduser(os.environ.get("SENTINEL_HOME") or os.path.join("~", ".sentinel"))


def protected(root: str | None = None) -> list[str]:
    """Every protected path: relative to the repository, or absolute (each name and its resolved form). A write
    inside `root` is named relative to it (sentinel.policy.landing), so a place in the home that lies inside the
    root (a session started in $HOME, which is no repository; a repository of dotfiles) is named that way too, and
    "." when the root itself lies inside one (every path under the root is then protected)."""
    home = os.path.expanduser("~")
    places = [os.path.join(home, p) for p in IN_HOME] + [sentinel_home()]
    absolute = [p for place in places for p in dict.fromkeys((os.path.abspath(place), os.path.realpath(place)))]
    inside = []
    for base in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))) if root else ():
        for place in absolute:
            if base == place or base.startswith(place + "/"):
                inside.append(".")
            elif place.startswith(base.rstrip("/") + "/"):
                inside.append(os.path.relpath(place, base))
    return list(dict.fromkeys([*IN_REPO, *absolute, *inside]))


_SEPARATORS = re.compile(r"[\s;&|]+")
_PIECES = re.compile(r"[=:,]")
_PLACES_LINKS = frozenset({"ln", "link", "cp", "mv"})  # with `git mv|checkout|restore`: sentinel.policy.writes


def may_hold(text: str, root: str, cwd: str | None) -> bool:
    """False only when no write the shell parse could find (sentinel.policy.writes) lands on, in or above a
    protected path, and the line spells every word: the rule then cannot hold it, and the hook answers without
    importing the parser (~80 ms). The line must be plain words (no quote, expansion, glob, redirection or
    grouping), run no command that takes words from elsewhere or changes directory, nor one that may move, copy
    or make a symlink beside another command (its link can send the other's writes anywhere), and no word of it
    (nor the value after `=`/`:`/`,` or a glued short option) may name, through a symlink or not, a protected
    path, one inside it, a directory above it, a file with other names (hard links), or a path through /proc or
    /dev/fd."""
    from sentinel.policy.shell import _REBINDS_TEXT, _UNSEEN
    from sentinel.policy.writes import _PLAIN

    if not _PLAIN.match(text) or _REBINDS_TEXT.search(text):
        return True
    words = [w for w in _SEPARATORS.split(text) if w]
    if any(w.rsplit("/", 1)[-1] in _UNSEEN or w in ("cd", "pushd", "popd", "parallel") for w in words):
        return True
    if re.search(r"[;&|\n]", text) and any(w.rsplit("/", 1)[-1] in _PLACES_LINKS or
                                            (w == "git" and after in ("mv", "checkout", "restore"))
                                            for w, after in zip(words, [*words[1:], ""])):
        return True
    base = os.path.normpath(os.path.join(root, cwd or "."))
    targets = [os.path.normpath(os.path.join(root, p)) for p in protected()]
    targets += [os.path.realpath(t) for t in targets]
    for word in words:
        for piece in {word, word.lstrip("-"), word[2:] if word.startswith("-") else "", *_PIECES.split(word)}:
            if piece and _touches(os.path.normpath(os.path.join(base, piece)), targets):
                return True
    return False


def _touches(path: str, targets: list[str]) -> bool:
    if path == "/" or path.startswith(("/proc/", "/dev/fd/")) or path in ("/proc", "/dev/fd", "/dev"):
        return True
    try:
        st = os.lstat(path)
        if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
            return True  # a file with other names: a write to it writes them all
    except OSError:
        pass
    resolved = os.path.realpath(path)
    return any(t == p or t.startswith(p + "/") or p.startswith(t + "/") for t in targets for p in (path, resolved))


def own_rule(root: str | None = None) -> RuleDump:
    """The built-in rule for calls located in `root` (a repository, or the directory of a call in none). Each
    protected path P matches itself and everything below it; a command writing a directory above it (`rm -r
    .claude`) meets it through the `P/**` pattern (sentinel.policy.gate.scope). "." (the root lies inside a
    protected place) matches every path relative to the root."""
    scope_c: list[PatternDump] = [{"p": f"{p}/**", "c": False, "g": [rf"(?s:{re.escape(p)}(?:/.*)?)\Z"]}
                                  if p != "." else {"p": "**", "c": False, "g": [r"(?s:[^/].*)\Z"]}
                                  for p in protected(root)]
    return {"id": RULE_ID, "kind": "scope", "trigger": "file_write", "severity": "ask", "description": DESCRIPTION,
            "scope": [e["p"] for e in scope_c], "exclude": [], "known_only": True, "source": "(built in)",
            "scope_c": scope_c, "exclude_c": []}
