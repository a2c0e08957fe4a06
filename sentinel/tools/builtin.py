"""The built-in tools: read_file, write_file, edit_file, list_dir, bash.

File tools resolve every path beneath the run's workspace in the kernel
(openat2 RESOLVE_BENEATH); writes also refuse any symlink on the way (RESOLVE_NO_SYMLINKS): the
decision already replaced a path through a symlink by where it lands (sentinel.policy.landing),
so the file written is the one decided, and a link planted after the decision fails the write. bash runs in a fresh process under the Leash tool
profile, and its whole process tree dies on timeout.
"""

from __future__ import annotations

import errno
import re
import subprocess
from sentinel.jsontypes import JSONObject
from sentinel.tools import Registry, Tool, ToolContext, ToolError, arg_str, object_schema
from sentinel.tools.fs import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, Confined, OutsideRoot

MAX_BASH_TIMEOUT_S = 3600.0


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """Keep the head and the tail; say how much was cut."""
    if len(text) <= limit:
        return text, False
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters truncated ...]\n{text[-tail:]}", True


def _confined(ctx: ToolContext) -> Confined:
    return Confined(ctx.workspace)


def _writable(ctx: ToolContext) -> Confined:
    return Confined(ctx.workspace, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS)


def _linked(path: str) -> ToolError:
    return ToolError(f"path {path!r} now passes through a symlink that was not there when the call was checked; "
                     "it was not written. Call it again to have the new path checked.")


def _outside(path: str) -> ToolError:
    return ToolError(f"path {path!r} is outside the workspace; use a path inside it")


def read_file(args: JSONObject, ctx: ToolContext) -> str:
    path = arg_str(args, "path")
    try:
        data = _confined(ctx).read_bytes(path, ctx.output_max_chars * 4 + 1)
    except OutsideRoot:
        raise _outside(path) from None
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory; use list_dir") from None
    text, _ = truncate(data.decode("utf-8", errors="replace"), ctx.output_max_chars)
    return text


def write_file(args: JSONObject, ctx: ToolContext) -> str:
    content, path = arg_str(args, "content"), arg_str(args, "path")
    fs = _writable(ctx)
    try:
        if args.get("append"):
            return _append(fs, path, content)
        fs.write_bytes(path, content.encode())
    except OutsideRoot:
        raise _outside(path) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _linked(path) from None
        raise
    return f"Wrote {len(content)} characters to {path}"


def _append(fs: Confined, path: str, content: str) -> str:
    """Add `content` at the end of `path` (on a line of its own), creating the file when it is missing."""
    try:
        before = fs.read_bytes(path)
    except FileNotFoundError:
        before = b""
    joint = b"\n" if before and not before.endswith(b"\n") else b""
    fs.write_bytes(path, before + joint + content.encode())
    return f"Appended {len(content)} characters to {path} (it now has {len(before) + len(joint) + len(content.encode())} bytes)"


def edit_file(args: JSONObject, ctx: ToolContext) -> str:
    path, old, new = arg_str(args, "path"), arg_str(args, "old_string"), arg_str(args, "new_string")
    if not old:
        raise ToolError("old_string must not be empty: to add text at the end of a file, call write_file with "
                        '"append": true; to create a file, call write_file')
    fs = _writable(ctx)
    try:
        text = fs.read_bytes(path).decode("utf-8", errors="replace")
    except OutsideRoot:
        raise _outside(path) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _linked(path) from None
        raise
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string not found in {path}; read the file and copy the exact text")
    every = bool(args.get("replace_all"))
    if count > 1 and not every:
        raise ToolError(f"old_string appears {count} times in {path}; include more surrounding text so it is "
                        'unique, or set "replace_all": true to replace every occurrence')
    try:
        fs.write_bytes(path, text.replace(old, new, -1 if every else 1).encode())
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _linked(path) from None
        raise
    return f"Edited {path}: replaced {count if every else 1} occurrence{'s' if every and count > 1 else ''}"


def list_dir(args: JSONObject, ctx: ToolContext) -> str:
    path = str(args.get("path") or ".")
    try:
        entries = _confined(ctx).listdir(path)
    except OutsideRoot:
        raise _outside(path) from None
    except NotADirectoryError:
        raise ToolError(f"{path} is not a directory") from None
    if not entries:
        return f"{path} is empty"
    return "\n".join(f"{name}/" if is_dir else f"{name}  ({size} bytes)" for name, is_dir, size in entries)


def bash(args: JSONObject, ctx: ToolContext) -> str:
    timeout = args.get("timeout_s")
    return run_argv(["/bin/bash", "-c", arg_str(args, "command")], ctx,
                    float(timeout) if isinstance(timeout, (int, float)) else None)


_NO_PYTHON = re.compile(r"\bpython: (?:command )?not found")
# Debian has python3 and no `python`: small models reach for `python` first, then give up or invent a result.
PYTHON_HINT = "\n[sentinel] There is no `python` command on this machine: use `python3`."


def run_argv(argv: list[str], ctx: ToolContext, timeout_s: float | None = None) -> str:
    """Run a command under the agent's tool profile (Leash); its exit code and output, for the model."""
    timeout = min(float(timeout_s or ctx.bash_timeout_s), MAX_BASH_TIMEOUT_S)
    if ctx.tools_mode == "plain":
        code, output, timed_out = _run_plain(argv, ctx, timeout)
    else:
        from sentinel.leash.launch import run_tool

        res = run_tool(argv, cwd=ctx.workspace, workspace=ctx.workspace, timeout_s=timeout, agent=ctx.agent or None,
                       sandbox=ctx.sandbox, output_max_chars=ctx.output_max_chars)
        code, output, timed_out = res.exit_code, res.output, res.timed_out
    output, _ = truncate(output, ctx.output_max_chars)
    if code == 127 and _NO_PYTHON.search(output):
        output += PYTHON_HINT
    if timed_out:
        return f"Error: command timed out after {timeout:g}s and was killed (with everything it started)\n{output}"
    return f"exit code: {code}\n{output}" if output else f"exit code: {code}"


def _run_plain(argv: list[str], ctx: ToolContext, timeout: float) -> tuple[int | None, str, bool]:
    """An unsandboxed subprocess in its own session (only with leash.tools: plain), with the environment a
    sandboxed tool gets. A timeout or Ctrl-C kills the command and everything it started."""
    from sentinel.leash import plain
    from sentinel.leash.launch import base_env

    try:
        proc = plain.run(argv, cwd=ctx.workspace, env=base_env(ctx.workspace), timeout=timeout,
                         stderr=subprocess.STDOUT, new_session=True, workspace=True)
        return proc.returncode, proc.stdout.decode("utf-8", errors="replace"), False
    except subprocess.TimeoutExpired as exc:
        return None, (exc.stdout or b"").decode("utf-8", errors="replace"), True


_schema = object_schema


_PATH: JSONObject = {"type": "string", "description": "Path relative to the workspace."}

BUILTINS = [
    Tool("read_file", "Read a text file from the workspace.", _schema({"path": _PATH}, ["path"]), read_file,
         read_only=True, trigger="read"),
    Tool("write_file", "Create a file in the workspace, replace a file you have read whole, or add to its end "
         "(append: true).",
         _schema({"path": _PATH, "content": {"type": "string"},
                  "append": {"type": "boolean", "description": "Add content at the end of the file (on a new line) "
                             "instead of replacing the file."}}, ["path", "content"]), write_file,
         trigger="file_write"),
    Tool("edit_file", "Replace one exact occurrence of old_string with new_string in a workspace file "
         "(every occurrence with replace_all: true).",
         _schema({"path": _PATH, "old_string": {"type": "string"}, "new_string": {"type": "string"},
                  "replace_all": {"type": "boolean", "description": "Replace every occurrence, not just one."}},
                 ["path", "old_string", "new_string"]), edit_file, trigger="file_write"),
    Tool("list_dir", "List a directory of the workspace.", _schema({"path": _PATH}, ["path"]), list_dir,
         read_only=True, trigger="read"),
    Tool("bash", "Run a shell command in the workspace.",
         _schema({"command": {"type": "string"},
                  "timeout_s": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds before it is killed."}},
                 ["command"]), bash, trigger="bash"),
]


def default_registry() -> Registry:
    """A registry of the built-in tools (the worker's wiring adds the agent's own tools to it)."""
    return Registry(list(BUILTINS))
