"""The internal action: what every agent's tool call becomes before the gate looks at it.

    classify(tool_name, tool_input, tool_map, mcp_prefix, mcp_separator) -> Action
    patch(tool_name, tool_input, text) -> [Action]     one file_write per file of an apply_patch envelope
    each_file(action) -> Action | [Action]             a file_write naming several paths: one action per path
    files(found, *bases) -> Action | [Action]          each_file over a call's actions, relative paths from `bases`

An Action has a trigger (file_write | bash | mcp | other) and a target (where the file
write lands, relative to the repository with symlinks followed (sentinel.policy.landing);
the command string; or `server:tool`), plus the fields the gate's prompt templates use
(docs/gate.md). `aliases` are further names scopes match: the written path as text when a
symlink sends it elsewhere, and every other path the same call may write.

A file tool's input may name several files (a list of edits, or two path keys of which the client
uses one): every path-like value at any depth is collected (`paths`), and the call is in scope of a
path rule when any of them is. A file tool whose input names no path at all may write anything: it is
`unbounded`, in scope of every path rule. Relative paths are taken from the payload's `cwd` (where
the clients resolve them), else from the repository root.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook imports this module: no `typing` at run time
    from typing import TypeGuard

    from sentinel.jsontypes import JSONObject
    from sentinel.policy.writes import Writes

FILE_PATH_KEYS = ("file_path", "path", "filePath", "notebook_path", "target_file", "TargetFile", "absolute_path")
# every key whose value (a string, or a list of strings) names a file a file tool may write, at any depth:
# FILE_PATH_KEYS first (their order picks `file_path`, as before), then the spellings of renames and lists
PATH_KEYS = FILE_PATH_KEYS + ("filename", "fileName", "file", "files", "paths", "file_paths", "filePaths",
                              "target_path", "targetPath", "new_path", "newPath", "old_path", "oldPath",
                              "destination", "destination_path", "move_to", "moveTo")
CONTENT_KEYS = ("content", "file_text", "new_string", "new_str", "new_text", "new_source", "code_edit",
                "CodeContent", "diff", "text", "newString", "newText")
# The clients' own tools that only read or search (a path they name is read, never written): every other call
# that is neither a file tool nor a shell (an MCP tool, a tool of a name the map does not know) may write any
# file its arguments name, so the path rules see those names (`Action.named`). Kept here, beside the map's
# other names the hook reads, so the hook's path never imports the settings module (pydantic).
READ_ONLY_TOOLS = frozenset({
    "Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch",  # Claude Code (and Codex, Cursor)
    "view", "glob", "grep", "read_file", "list_dir", "file_search", "grep_search", "codebase_search",  # Copilot, Cursor
    "read_many_files", "search_file_content", "list_directory",  # Gemini CLI
    "list_files", "search_files", "list_code_definition_names",  # Cline
    "fs_read",  # Amazon Q
})
SHELL_DIR_KEYS = ("dir_path", "directory", "workdir", "working_directory", "cwd")  # a shell tool's own directory
PATH_MAX = 4096   # a string longer than this names no file
WALK_MAX = 2000   # values looked at for paths in one tool input: past it the call may write anything
WALK_DEPTH = 8    # nesting levels looked into, the same
# The apply_patch envelope (Codex, Cline): "*** Begin Patch", then per file a header and its lines.
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


class Action:
    """One proposed tool call, normalised. `target` is what rule scopes match."""

    __slots__ = ("trigger", "tool_name", "tool_input", "file_path", "content", "command", "server", "mcp_tool",
                 "target", "aliases", "tool_output", "agent_id", "read_only", "root", "cwd", "_writes",
                 "others", "unbounded", "paths", "contents", "named")

    def __init__(self, trigger: str, tool_name: str, tool_input: JSONObject | None = None, *, file_path: str = "",
                 content: str = "", command: str = "", server: str = "", mcp_tool: str = "",
                 tool_output: str = "", agent_id: str = "", read_only: bool = False):
        self.trigger = trigger
        self.tool_name = tool_name
        self.tool_input = tool_input if isinstance(tool_input, dict) else {}
        self.file_path = file_path
        self.content = content
        self.command = command
        self.server = server
        self.mcp_tool = mcp_tool
        self.tool_output = tool_output
        self.agent_id = agent_id
        self.read_only = read_only
        self.target = ""
        self.aliases: tuple[str, ...] = ()
        self.unbounded = False
        self.others: tuple[str, ...] = ()  # a file write's other names of the same file (hard links)
        # a file write's every path (file_path first) and what each gets; None: the paths could not all be read
        self.paths: tuple[str, ...] | None = (file_path,) if file_path else ()
        self.contents: tuple[str, ...] = (content,) if file_path else ()
        # an MCP call's or another tool's every argument that may name a file, where each lands (`locate`)
        self.named: tuple[str, ...] = ()
        self.root: str | None = None
        self.cwd: str | None = None
        self._writes: Writes | None = None

    def locate(self, root: str | None, cwd: str | None = None) -> "Action":
        """Set `target`: file paths become where the write lands, relative to `root` when inside it; a relative
        file path and a bash command's writes are taken from `cwd` (default: the root)."""
        self.root, self.cwd = root, cwd if isinstance(cwd, str) and cwd else None
        if self.trigger == "file_write":
            self.target, lexical, others = landing_path(self._from_cwd(self.file_path), root)
            # the path as written, and the file's other names (hard links): a write to one writes them all
            self.others = others or ()
            names = [lexical, *self.others]
            self.unbounded = others is None  # a name of the file could not be found: it may land anywhere
            for path in (self.paths or ())[1:]:  # the other files the same call names: any may be written
                target, lexical, others = landing_path(self._from_cwd(path), root)
                names += [target, lexical, *(others or ())]
                self.unbounded = self.unbounded or others is None
            self.aliases = tuple(dict.fromkeys(p for p in names if p and p != self.target))
            if not self.file_path or self.paths is None:
                self.unbounded = True  # a file tool whose paths cannot be read may write anything
        elif self.trigger == "bash":
            self.target = self.command.strip()
            where = first_str(self.tool_input, SHELL_DIR_KEYS)  # the tool's own directory (Gemini's dir_path)
            if where and "\x00" not in where:
                self.cwd = os.path.join(self.cwd or root or "", where) if self.cwd or root else where
        else:
            self.target = (f"{self.server}:{self.mcp_tool}" if self.server else self.mcp_tool) \
                if self.trigger == "mcp" else self.tool_name
            if not self.read_only and (self.trigger == "mcp" or self.tool_name not in READ_ONLY_TOOLS):
                self._name_paths(root)  # a tool declared read-only (Sentinel's own, an MCP read_only) writes nothing
        return self

    def _name_paths(self, root: str | None) -> None:
        """`named`: where each argument that may name a file lands. A tool Sentinel does not know as a file tool
        may still write, move or delete the files it names (an MCP filesystem server's write_file, a client's
        Delete); a path rule is about the file, whatever tool reaches it. Unbounded when the arguments are too
        large to read whole or a name goes through /proc."""
        found, complete = path_like(self.tool_input)
        names: list[str] = []
        for path in found:
            target, lexical, others = landing_path(self._from_cwd(path), root)
            names += [target, lexical, *(others or ())]
            self.unbounded = self.unbounded or others is None
        self.named = tuple(dict.fromkeys(n for n in names if n))
        self.unbounded = self.unbounded or not complete

    def _from_cwd(self, path: str) -> str:
        """A relative file path as the client resolves it: from the call's working directory."""
        if not path or not self.cwd or os.path.isabs(path) or "\x00" in path:
            return path
        return os.path.join(self.cwd if os.path.isabs(self.cwd) or not self.root else os.path.join(self.root, self.cwd),
                            path)

    def writes(self) -> Writes:
        """What a bash command may write (sentinel.policy.writes.Writes), computed once; unknown without a root."""
        if self._writes is None:
            from sentinel.policy.writes import Writes, written

            if self.unbounded:  # a shell call whose command could not be read
                self._writes = Writes()
                self._writes.unknown("the call's command could not be read")
            elif self.root:
                self._writes = written(self.command, self.root, self.cwd)
            else:
                self._writes = Writes()
                self._writes.unknown("no repository root to resolve paths against")
        return self._writes

    def __repr__(self) -> str:
        return f"Action({self.trigger!r}, {self.tool_name!r}, target={self.target!r})"


def landing_path(path: str, root: str | None) -> tuple[str, str, tuple[str, ...] | None]:
    """(where the write lands, the path as written, the file's other names or None when not all were found), the
    paths relative to root when inside it."""
    if not path or not root or "\x00" in path:
        return relative_path(path, root), relative_path(path, root), ()
    from sentinel.policy.landing import land

    landing = land(root, path)
    return landing.path, landing.lexical, landing.others


def relative_path(path: str, root: str | None) -> str:
    """The path as text, normalised (no symlink followed)."""
    if not path:
        return ""
    if root:
        full = os.path.normpath(os.path.join(root, path))
        rel = os.path.relpath(full, root)
        if not rel.startswith(".." + os.sep) and rel != "..":
            return rel.replace(os.sep, "/")
        return full
    return os.path.normpath(path)


def first_str(data: JSONObject, keys: tuple[str, ...]) -> str:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def path_like(tool_input: JSONObject) -> tuple[list[str], bool]:
    """Every string in a call's arguments, at any depth, that could be a file's name: one line, at most PATH_MAX
    long (a `file://` URI as its path); False when the arguments were too large or deep to read whole."""
    found: list[str] = []
    budget = [WALK_MAX]

    def walk(value: object, depth: int) -> bool:
        budget[0] -= 1
        if budget[0] < 0 or depth > WALK_DEPTH:
            return False
        if isinstance(value, str):
            name = value[len("file://"):] if value.startswith("file://") else value
            if name.strip() and len(name) <= PATH_MAX and "\n" not in name:
                found.append(name)
            return True
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        return all([walk(v, depth + 1) for v in items])

    complete = walk(tool_input, 0)
    return list(dict.fromkeys(found)), complete


def content_of(tool_input: JSONObject) -> str:
    text = first_str(tool_input, CONTENT_KEYS)
    if text:
        return text
    edits = tool_input.get("edits")
    if isinstance(edits, list):  # MultiEdit, Windsurf edits
        parts = [e.get("new_string", "") for e in edits if isinstance(e, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def file_write(tool_name: str, tool_input: JSONObject, path: str = "") -> Action:
    """One action for the call, naming every path it may write (`paths`; `each_file` splits them)."""
    found, complete = written_paths(tool_input)
    if path:
        found.insert(0, (path, content_of(tool_input)))
    act = Action("file_write", tool_name, tool_input, file_path=path or first_str(tool_input, FILE_PATH_KEYS)
                 or (found[0][0] if found else ""), content=content_of(tool_input))
    byname: dict[str, list[str]] = {act.file_path: []} if act.file_path else {}
    for name, text in found:
        byname.setdefault(name, [])
        if text and text not in byname[name]:
            byname[name].append(text)
    act.paths = tuple(byname) if complete else None
    act.contents = tuple("\n".join(texts) for texts in byname.values())
    if not act.content and len(byname) > 1:
        act.content = "\n".join(t for t in act.contents if t)
    return act


def written_paths(tool_input: JSONObject) -> tuple[list[tuple[str, str]], bool]:
    """(path, what the entry naming it writes) for every path-like value in a file tool's input, at any depth
    (a list of edits names a file per entry); False when the input was too large or deep to read whole."""
    found: list[tuple[str, str]] = []
    budget = [WALK_MAX]

    def walk(value: object, depth: int) -> bool:
        budget[0] -= 1
        if budget[0] < 0 or depth > WALK_DEPTH:
            return False
        if isinstance(value, list):
            return all([walk(v, depth + 1) for v in value if isinstance(v, (dict, list))])
        if not isinstance(value, dict):
            return True
        text = ""
        ok = True
        for key, item in value.items():
            if key in PATH_KEYS:
                names = [item] if isinstance(item, str) else [i for i in item if isinstance(i, str)] \
                    if isinstance(item, list) else []
                for name in names:
                    if name.strip():
                        text = text or content_of(value)
                        found.append((name, text))
            if isinstance(item, (dict, list)):
                ok = walk(item, depth + 1) and ok
        return ok

    complete = walk(tool_input, 0)
    order = {k: i for i, k in enumerate(PATH_KEYS)}
    if found and isinstance(tool_input, dict):  # the top level's own keys in FILE_PATH_KEYS order, as before
        top = [(k, v) for k, v in tool_input.items() if k in order and isinstance(v, str) and v.strip()]
        first = [v for _, v in sorted(top, key=lambda kv: order[kv[0]])]
        found.sort(key=lambda pc: first.index(pc[0]) if pc[0] in first else len(first))
    return found, complete


def each_file(act: Action) -> Action | list[Action]:
    """A file write naming several paths as one action per path, each with what it writes there (a rule on any
    of them sees that path, and an approval of one is no approval of another); any other action as it is."""
    if act.trigger != "file_write" or act.paths is None or len(act.paths) < 2:
        return act
    return [Action("file_write", act.tool_name, act.tool_input, file_path=path, content=content or act.content,
                   tool_output=act.tool_output, agent_id=act.agent_id, read_only=act.read_only)
            for path, content in zip(act.paths, act.contents)]


def files(found: "Action | list[Action] | None", *bases: str | None) -> "Action | list[Action]":
    """The actions of one call, each file write split per path (`each_file`). With `bases`, the directories the
    client may resolve a relative path from (its workspace root when the payload has no `cwd`), each relative path
    is taken from every one of them: where the client's choice is not known, the write may land at any. One action
    comes back as itself."""
    out: list[Action] = []
    dirs = list(dict.fromkeys(b for b in bases if b))
    for act in found if isinstance(found, list) else [found] if found is not None else []:
        if act.trigger == "file_write" and dirs:
            pairs = list(zip(act.paths or (act.file_path,), act.contents or (act.content,)))
            moved = [(_joined(d, path), text) for path, text in pairs for d in (dirs if _relative(path) else [""])]
            act.file_path = _joined(dirs[0], act.file_path) if _relative(act.file_path) else act.file_path
            if act.paths is not None:
                act.paths = tuple(dict.fromkeys(p for p, _ in moved))
                act.contents = tuple(dict(reversed(moved)).get(p, "") for p in act.paths)
        split = each_file(act)
        out += split if isinstance(split, list) else [split]
    return out[0] if len(out) == 1 else out


def _relative(path: str) -> bool:
    return bool(path) and not os.path.isabs(path) and "\x00" not in path


def _joined(base: str, path: str) -> str:
    return os.path.join(base, path) if base else path


COMMAND_KEYS = ("command", "cmd", "command_line", "CommandLine")


def bash(tool_name: str, tool_input: JSONObject, command: str = "") -> Action:
    """A shell call. A call whose input holds no command Sentinel can read (no string under a command key, no
    argv of strings, no list of command strings: a string, number or object sent where the client's command
    goes) is `unbounded`: it may run anything, so every shell and path rule is in scope of it and it is shown
    and judged as the JSON it was sent as, never as an empty command."""
    cmd = command or first_str(tool_input, COMMAND_KEYS)
    argv, several = tool_input.get("command"), tool_input.get("commands")
    readable = bool(cmd) or any(isinstance(tool_input.get(k), str) for k in COMMAND_KEYS)
    if not cmd and _strings_only(argv):  # an argv: quoted, so the parse sees each word
        import shlex

        cmd, readable = shlex.join(argv), True
    if not cmd and _strings_only(several):  # Cline's run_commands: several at once
        cmd, readable = "\n".join(several), True
    if readable:
        return Action("bash", tool_name, tool_input, command=cmd)
    act = Action("bash", tool_name, tool_input, command=json.dumps(tool_input, ensure_ascii=False, default=str))
    act.unbounded = True
    return act


def _strings_only(value: object) -> "TypeGuard[list[str]]":
    return isinstance(value, list) and bool(value) and all(isinstance(p, str) for p in value)


def parse_patch(text: str) -> list[tuple[str, str]]:
    """(path, added text) per file an apply_patch envelope touches; a move counts for both paths."""
    files: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        bare = line.lstrip()  # a header past leading blanks is read too: the safe side
        header = next((h for h in PATCH_HEADERS if bare.startswith(h)), None)
        if header is not None:
            files.append((bare[len(header):].strip(), []))
        elif files and line.startswith("+"):
            files[-1][1].append(line[1:])
    return [(path, "\n".join(lines)) for path, lines in files if path]


def patch(tool_name: str, tool_input: JSONObject, text: str) -> list[Action]:
    """One file_write per file of the patch, so a rule on any of its paths sees that path."""
    return [Action("file_write", tool_name, tool_input, file_path=path, content=content)
            for path, content in parse_patch(text)]


def mcp(tool_name: str, tool_input: JSONObject, server: str, tool: str) -> Action:
    return Action("mcp", tool_name, tool_input, server=server, mcp_tool=tool)


def classify(tool_name: str, tool_input: JSONObject | None, tool_map: dict[str, str], mcp_prefix: str,
             mcp_separator: str) -> Action:
    """The tool name decides the trigger via tool_map, then the MCP prefix."""
    data = tool_input if isinstance(tool_input, dict) else {} if tool_input is None else {"input": tool_input}
    trigger = tool_map.get(tool_name)
    if trigger == "file_write":
        return file_write(tool_name, data)
    if trigger == "bash":
        return bash(tool_name, data)
    if trigger == "mcp" or (mcp_prefix and tool_name.startswith(mcp_prefix)):
        server, tool = split_mcp(tool_name, mcp_prefix, mcp_separator)
        return mcp(tool_name, data, server, tool)
    return Action("other", tool_name, data)


def split_mcp(tool_name: str, prefix: str, separator: str) -> tuple[str, str]:
    rest = tool_name[len(prefix):] if prefix and tool_name.startswith(prefix) else tool_name
    server, sep, tool = rest.partition(separator)
    return (server, tool) if sep else ("", rest)


def arguments_json(action: Action, limit: int) -> str:
    text = json.dumps(action.tool_input, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def summary(action: Action) -> str:
    """{{action_summary}}: one line saying what the agent is about to do."""
    if action.trigger == "file_write":
        return f"{action.tool_name}: write {len(action.content)} characters to {action.target or action.file_path}"
    if action.trigger == "bash":
        return f"{action.tool_name}: run shell command `{action.command}`"
    if action.trigger == "mcp":
        return f"{action.tool_name}: call MCP tool {action.mcp_tool} on server {action.server or '(unknown)'}"
    return f"call tool {action.tool_name} with {arguments_json(action, 200)}"


def written_summary(action: Action) -> str:
    """{{file_path}} of a bash command judged by a path rule: the paths it writes, or why they are unknown."""
    if not action.root:
        return ""
    writes = action.writes()
    if not writes.known:
        return f"(unknown: {writes.why})"
    return ", ".join(sorted(writes.paths))


def template_vars(action: Action, content_max_chars: int, *, session_context: str = "") -> dict[str, str]:
    """The gate's template variables (docs/gate.md) for one action."""
    values = {"action_summary": summary(action), "tool_name": action.tool_name, "trigger": action.trigger,
              "file_path": "", "content_snippet": "", "content_length": "", "command": "", "server_name": "",
              "mcp_tool": "", "mcp_arguments": "", "tool_output": action.tool_output[:content_max_chars],
              "session_context": session_context, "target": action.target}
    if action.trigger == "file_write":
        values.update(file_path=_named(action), content_snippet=action.content[:content_max_chars],
                      content_length=str(len(action.content)))
    elif action.trigger == "bash":
        values.update(command=action.command, file_path=written_summary(action), content_snippet=action.command)
    elif action.trigger == "mcp":
        values.update(server_name=action.server, mcp_tool=action.mcp_tool,
                      mcp_arguments=arguments_json(action, content_max_chars))
    return values


def _named(action: Action) -> str:
    """A file write's path as the judge reads it, with the file's other names: a hard link writes them too."""
    path = action.target or action.file_path
    if action.trigger == "file_write" and not action.file_path:
        return "(unknown: no path found in the tool's input; the write may change any file)"
    if action.paths is None:
        return f"{path} (and paths in an input too large to read whole; the write may change any file)"
    if len(action.paths) > 1:
        path = ", ".join([path, *action.aliases])
    if action.unbounded:
        return f"{path} (where it lands cannot be told: a path through /proc or /dev/fd, or a hard link whose other " \
               "names were not all found; the write may change any file)"
    if action.others:
        return f"{path} (a hard link: the same file as {', '.join(action.others)}; the write changes every name)"
    return path


TEMPLATE_VARS = frozenset({"action_summary", "tool_name", "trigger", "file_path", "content_snippet", "content_length",
                           "command", "server_name", "mcp_tool", "mcp_arguments", "tool_output", "session_context",
                           "target"})
