"""The internal action: what every agent's tool call becomes before the gate looks at it.

    classify(tool_name, tool_input, tool_map, mcp_prefix, mcp_separator) -> Action
    patch(tool_name, tool_input, text) -> [Action]     one file_write per file of an apply_patch envelope

An Action has a trigger (file_write | bash | mcp | other) and a target (where the file
write lands, relative to the repository with symlinks followed (sentinel.policy.landing);
the command string; or `server:tool`), plus the fields the gate's prompt templates use
(docs/gate.md). `aliases` are further names scopes match: the written path as text when a
symlink sends it elsewhere.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook imports this module: no `typing` at run time
    from sentinel.jsontypes import JSONObject
    from sentinel.policy.writes import Writes

FILE_PATH_KEYS = ("file_path", "path", "filePath", "notebook_path", "target_file", "TargetFile", "absolute_path")
CONTENT_KEYS = ("content", "file_text", "new_string", "new_str", "new_text", "new_source", "code_edit",
                "CodeContent", "diff", "text")
# The apply_patch envelope (Codex, Cline): "*** Begin Patch", then per file a header and its lines.
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


class Action:
    """One proposed tool call, normalised. `target` is what rule scopes match."""

    __slots__ = ("trigger", "tool_name", "tool_input", "file_path", "content", "command", "server", "mcp_tool",
                 "target", "aliases", "tool_output", "agent_id", "read_only", "root", "cwd", "_writes",
                 "others", "unbounded")

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
        self.root: str | None = None
        self.cwd: str | None = None
        self._writes: Writes | None = None

    def locate(self, root: str | None, cwd: str | None = None) -> "Action":
        """Set `target`: file paths become where the write lands, relative to `root` when inside it; a bash
        command's writes are taken relative to `cwd` (default: the root)."""
        self.root, self.cwd = root, cwd if isinstance(cwd, str) and cwd else None
        if self.trigger == "file_write":
            self.target, lexical, others = landing_path(self.file_path, root)
            # the path as written, and the file's other names (hard links): a write to one writes them all
            self.others = others or ()
            self.aliases = tuple(dict.fromkeys(p for p in (lexical, *self.others) if p != self.target))
            self.unbounded = others is None  # a name of the file could not be found: it may land anywhere
        elif self.trigger == "bash":
            self.target = self.command.strip()
        elif self.trigger == "mcp":
            self.target = f"{self.server}:{self.mcp_tool}" if self.server else self.mcp_tool
        else:
            self.target = self.tool_name
        return self

    def writes(self) -> Writes:
        """What a bash command may write (sentinel.policy.writes.Writes), computed once; unknown without a root."""
        if self._writes is None:
            from sentinel.policy.writes import Writes, written

            if self.root:
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
    return Action("file_write", tool_name, tool_input, file_path=path or first_str(tool_input, FILE_PATH_KEYS),
                  content=content_of(tool_input))


def bash(tool_name: str, tool_input: JSONObject, command: str = "") -> Action:
    cmd = command or first_str(tool_input, ("command", "cmd", "command_line", "CommandLine"))
    argv, several = tool_input.get("command"), tool_input.get("commands")
    if not cmd and isinstance(argv, list):  # an argv: quoted, so the parse sees each word
        import shlex

        cmd = shlex.join(str(p) for p in argv)
    if not cmd and isinstance(several, list):  # Cline's run_commands: several at once
        cmd = "\n".join(str(p) for p in several)
    return Action("bash", tool_name, tool_input, command=cmd)


def parse_patch(text: str) -> list[tuple[str, str]]:
    """(path, added text) per file an apply_patch envelope touches; a move counts for both paths."""
    files: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        header = next((h for h in PATCH_HEADERS if line.startswith(h)), None)
        if header is not None:
            files.append((line[len(header):].strip(), []))
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
    data = tool_input if isinstance(tool_input, dict) else {}
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
    if action.unbounded:
        return f"{path} (where it lands cannot be told: a path through /proc or /dev/fd, or a hard link whose other " \
               "names were not all found; the write may change any file)"
    if action.others:
        return f"{path} (a hard link: the same file as {', '.join(action.others)}; the write changes every name)"
    return path


TEMPLATE_VARS = frozenset({"action_summary", "tool_name", "trigger", "file_path", "content_snippet", "content_length",
                           "command", "server_name", "mcp_tool", "mcp_arguments", "tool_output", "session_context",
                           "target"})
