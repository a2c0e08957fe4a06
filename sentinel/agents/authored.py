"""Agent-authored tools: `tools/<name>/tool.yaml` (name, description, parameters, limits) and `tools/<name>/tool.py`.

    snapshot(home, name) -> Snapshot     both files read once, hashed (the trust key), parsed
    AuthoredTools(home, registry, settings, trusted)
        .register_all()                  every valid tool on disk into the run's registry, like a built-in
        .tools()                         create_tool, edit_tool, list_tools, delete_tool (all `auto`)
        .warm(ctx)                       start a confined interpreter for the first call, if there is a tool

The code must define `run(args) -> str`. A tool is checked when it is written (the schema is a JSON
schema of an object, the code parses and defines `run`, limits stay within the operator's maxima), so
mistakes reach the model at `create_tool`, not at the first call. Registered tools carry a `pin`: the
loop pins the files before deciding, the trust layer and any approval see that SHA-256, and the call
runs exactly the pinned text (sentinel/agents/execute.py), never a later version of the files.

The SHA-256 is over both files, each as `<file name> NUL <byte length> NUL <bytes>`, tool.yaml first.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from sentinel import paths
from sentinel.agents import naming
from sentinel.agents.execute import Limits, run_code, warm
from sentinel.agents.settings import AuthoredToolSettings
from sentinel.errors import UsageError, pydantic_detail
from sentinel.jsontypes import JSON, JSONObject
from sentinel.tools import Pinned, Registry, Tool, ToolContext, object_schema

FILES = ("tool.yaml", "tool.py")
NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
NAME_RULE = "use 1-48 lowercase letters, digits and underscores, starting with a letter"
DESCRIPTION_MAX = 500
PARAMETER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
FILE_MAX = 1 << 20

Trusted = Callable[[str, str], bool]  # (tool, sha256) -> trusted for this agent


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    parameters: dict[str, JsonValue]   # the JSON schema of the tool's arguments
    limits: Limits = Field(default_factory=Limits)


@dataclass(frozen=True)
class Snapshot:
    name: str
    files: dict[str, str]
    sha256: str
    manifest: Manifest

    @property
    def code(self) -> str:
        return self.files["tool.py"]


def tools_dir(home: Path | None = None) -> Path:
    return (home or paths.home()) / "tools"


def names(home: Path | None = None) -> list[str]:
    directory = tools_dir(home)
    if not directory.is_dir():
        return []
    return sorted(p.parent.name for p in directory.glob("*/tool.yaml") if NAME.match(p.parent.name))


def digest(contents: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name in FILES:
        data = contents[name]
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def snapshot(home: Path | None, name: str) -> Snapshot:
    """Read the tool's files once; a UsageError says what is missing or broken."""
    directory = tools_dir(home) / name
    raw: dict[str, bytes] = {}
    for file in FILES:
        try:
            fd = os.open(directory / file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise UsageError(f"tool {name!r} does not exist (no tools/{name}/{file})") from None
        except OSError as exc:
            raise UsageError(f"tool {name!r}: cannot read tools/{name}/{file} ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as f:
            raw[file] = f.read(FILE_MAX + 1)
        if len(raw[file]) > FILE_MAX:
            raise UsageError(f"tool {name!r}: tools/{name}/{file} is larger than {FILE_MAX} bytes")
    try:  # what an approval shows must be exactly what is hashed and run: no lossy decoding
        files = {k: v.decode("utf-8") for k, v in raw.items()}
    except UnicodeDecodeError as exc:
        raise UsageError(f"tool {name!r}: a file is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return Snapshot(name, files, digest(raw), _manifest(name, files["tool.yaml"]))


def code_digest(files: dict[str, str]) -> str:
    """The trust key of the files an approval shows (the same SHA-256 `snapshot` takes of the bytes)."""
    return digest({name: files[name].encode() for name in FILES})


@functools.lru_cache(maxsize=64)  # a pure function of the text: each call of a tool re-reads, rarely re-parses
def _manifest(name: str, text: str) -> Manifest:
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise UsageError(f"tools/{name}/tool.yaml: invalid YAML ({getattr(exc, 'problem', None) or exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"tools/{name}/tool.yaml: top level must be a mapping")
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"tools/{name}/tool.yaml: {pydantic_detail(exc)}") from None
    if manifest.name != name:
        raise UsageError(f"tools/{name}/tool.yaml: name {manifest.name!r} does not match its folder")
    return manifest


# -- checks made when a tool is written ----------------------------------------------------------------

def check_parameters(value: JSON, identifiers: bool = True) -> JSONObject:
    """The JSON schema of an object; `identifiers`: its property names too (an authored tool's; an MCP server's
    names are its own, and Muzzle redacts a secret in any key)."""
    from jsonschema import Draft202012Validator, SchemaError

    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise UsageError(f"parameters is not valid JSON ({exc.msg}); send a JSON schema object") from None
    if not isinstance(value, dict):
        raise UsageError("parameters must be a JSON schema object, e.g. "
                         '{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}')
    if value.get("type") != "object":
        raise UsageError('parameters must describe an object: its "type" must be "object"')
    if identifiers:
        _check_names(value, "parameters")
    try:
        Draft202012Validator.check_schema(value)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise UsageError(f"parameters is not a valid JSON schema{f' at {where}' if where else ''}: {exc.message}") from None
    return value


def _check_names(schema: JSON, where: str) -> None:
    """Every property name in the schema, nested ones too, is an identifier: a name is what the model sends back
    as a key, and a key is no place for text (a secret, an instruction)."""
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            _check_names(item, f"{where}/{i}")
        return
    if not isinstance(schema, dict):
        return
    props = schema.get("properties")
    for name in props if isinstance(props, dict) else ():
        if not isinstance(name, str) or not PARAMETER_NAME.fullmatch(name):
            raise UsageError(f"{where}/properties: parameter name {str(name)[:40]!r} is not an identifier: use "
                             "letters, digits and _, starting with a letter or _, at most 64 characters")
    for key, sub in schema.items():
        _check_names(sub, f"{where}/{key}")


def check_code(code: JSON, settings: AuthoredToolSettings) -> str:
    if not isinstance(code, str) or not code.strip():
        raise UsageError("code must not be empty: define run(args) returning a string")
    if len(code) > settings.code_max_chars:
        raise UsageError(f"code is {len(code)} characters; the limit is {settings.code_max_chars}")
    try:
        tree = ast.parse(code, "tool.py")
        compile(tree, "tool.py", "exec")  # compiles only: nothing of the code runs here
    except SyntaxError as exc:
        raise UsageError(f"code does not parse: {exc.msg} (tool.py line {exc.lineno})") from None
    run = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "run"),
               None)
    if run is None:
        raise UsageError("code must define run(args) at the top level, returning a string")
    if isinstance(run, ast.AsyncFunctionDef):
        raise UsageError("run must be a plain function (def run(args)), not async")
    if not (run.args.posonlyargs or run.args.args or run.args.vararg):
        raise UsageError("run must take one argument: def run(args) (args is the dict of the call's arguments)")
    return code


def check_limits(value: JSON, settings: AuthoredToolSettings) -> Limits:
    try:
        limits = Limits.model_validate(value or {})
    except ValidationError as exc:
        raise UsageError(f"limits: {pydantic_detail(exc)} (keys: cpu_s, timeout_s, memory_mb)") from None
    for key in ("cpu_s", "timeout_s", "memory_mb"):
        asked, most = getattr(limits, key), getattr(settings, f"max_{key}")
        if asked is not None and asked > most:
            raise UsageError(f"limits.{key} is {asked:g}; the operator allows at most {most:g}")
    return limits


def check_description(value: JSON) -> str:
    text = " ".join(str(value or "").split())
    if not text:
        raise UsageError("description must not be empty: say in one line what the tool does")
    if len(text) > DESCRIPTION_MAX:
        raise UsageError(f"description is {len(text)} characters; keep it under {DESCRIPTION_MAX}")
    return text


def write(home: Path | None, manifest: Manifest, code: str) -> Snapshot:
    directory = tools_dir(home) / manifest.name
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = manifest.model_dump(exclude_none=True)
    if not data.get("limits"):
        data.pop("limits", None)
    paths.write_atomic(directory / "tool.yaml", yaml.safe_dump(data, sort_keys=False, allow_unicode=True), 0o644)
    paths.write_atomic(directory / "tool.py", code if code.endswith("\n") else code + "\n", 0o644)
    return snapshot(home, manifest.name)


# -- the run's registry and the management tools ---------------------------------------------------------

class AuthoredTools:
    def __init__(self, home: Path, registry: Registry, settings: AuthoredToolSettings, trusted: Trusted | None = None):
        self.home = home
        self.registry = registry
        self.settings = settings
        self.trusted = trusted
        self.reserved = (set(registry.names()) | set(naming.SELF_TOOLS) | set(naming.SKILL_TOOLS)
                         | set(naming.AUTHORING_TOOLS))
        self.limits: dict[str, Limits] = {}  # of each tool registered

    def register_all(self) -> dict[str, str]:
        """Register every valid authored tool; returns {name: problem} for those that could not be."""
        broken = {}
        for name in names(self.home):
            try:
                self._register(snapshot(self.home, name))
            except UsageError as exc:
                broken[name] = str(exc)
        return broken

    def _register(self, snap: Snapshot) -> None:
        if snap.name in self.reserved:
            raise UsageError(f"tool {snap.name!r} has the name of a built-in tool")
        name = snap.name
        self.limits[name] = snap.manifest.limits
        self.registry.add(Tool(name, snap.manifest.description, snap.manifest.parameters, _unpinned,
                               pin=lambda: self.pin(name)))

    def warm(self, ctx: ToolContext) -> None:
        """Start the first call's interpreter ahead of it (sentinel/agents/spares.py), under the limits most
        tools ask for; nothing when the run has no authored tool."""
        if self.limits:
            asked = list(self.limits.values())
            warm(ctx, max(asked, key=asked.count), self.settings)

    def pin(self, name: str) -> Pinned:
        snap = snapshot(self.home, name)
        return Pinned(snap.sha256, dict(snap.files),
                      lambda args, ctx: run_code(snap.code, snap.manifest.limits, args, ctx, self.settings))

    def tools(self) -> list[Tool]:
        text: JSONObject = {"type": "string"}
        params: JSONObject = {"type": "object", "description": "JSON schema of the tool's arguments (an object)."}
        limits: JSONObject = {"type": "object", "description": "Optional: cpu_s, timeout_s, memory_mb (within the operator's "
                                                   "maxima).", "properties": {k: {"type": "number"} for k in
                                                                              ("cpu_s", "timeout_s", "memory_mb")}}
        code: JSONObject = {"type": "string", "description": "Python source defining run(args) -> str."}
        return [
            Tool("create_tool", "Write a new Python tool for yourself. It must define run(args) returning a string. "
                                "Its first call (and the first after any edit) waits for the operator's approval.",
                 object_schema({"name": text, "description": text, "parameters": params, "code": code,
                                "limits": limits}, ["name", "description", "parameters", "code"]), self.create_tool),
            Tool("edit_tool", "Change one of your tools: give the fields to replace.",
                 object_schema({"name": text, "description": text, "parameters": params, "code": code,
                                "limits": limits}, ["name"]), self.edit_tool),
            Tool("list_tools", "List the tools you wrote: name, description, code hash, whether trusted.",
                 object_schema({}, []), self.list_tools, read_only=True, trigger="read"),
            Tool("delete_tool", "Delete one of your tools.", object_schema({"name": text}, ["name"]), self.delete_tool),
        ]

    def create_tool(self, args: JSONObject, ctx: ToolContext) -> str:
        name = naming.check("tool", args["name"], NAME, NAME_RULE)
        if name in self.reserved:
            raise UsageError(f"{name!r} is the name of a built-in tool; choose another name")
        if (tools_dir(self.home) / name).exists():
            raise UsageError(f"tool {name!r} already exists; change it with edit_tool")
        manifest = Manifest(name=name, description=check_description(args["description"]),
                            parameters=check_parameters(args["parameters"]),
                            limits=check_limits(args.get("limits"), self.settings))
        snap = write(self.home, manifest, check_code(args["code"], self.settings))
        self._register(snap)
        return (f"Created tool {name!r} (code sha256 {snap.sha256[:16]}…). Its first call waits for the operator's "
                "approval; after that, calls of this exact code run without asking. Any edit needs approval again.")

    def edit_tool(self, args: JSONObject, ctx: ToolContext) -> str:
        name = naming.check("tool", args["name"], NAME, NAME_RULE)
        old = snapshot(self.home, name)
        if not any(k in args for k in ("description", "parameters", "code", "limits")):
            raise UsageError("nothing to change: give description, parameters, code or limits")
        manifest = Manifest(
            name=name,
            description=check_description(args["description"]) if "description" in args else old.manifest.description,
            parameters=check_parameters(args["parameters"]) if "parameters" in args else old.manifest.parameters,
            limits=check_limits(args["limits"], self.settings) if "limits" in args else old.manifest.limits)
        code = check_code(args["code"], self.settings) if "code" in args else old.code
        snap = write(self.home, manifest, code)
        self._register(snap)
        if snap.sha256 == old.sha256:
            return f"Tool {name!r} is unchanged (code sha256 {snap.sha256[:16]}…)."
        return (f"Updated tool {name!r}: code sha256 is now {snap.sha256[:16]}…; "
                f"{'it is trusted' if self._trusted(name, snap.sha256) else 'its next call waits for approval'}.")

    def list_tools(self, args: JSONObject, ctx: ToolContext) -> str:
        lines = []
        for name in names(self.home):
            try:
                snap = snapshot(self.home, name)
            except UsageError as exc:
                lines.append(f"- {name}: broken ({exc})")
                continue
            trust = "trusted" if self._trusted(name, snap.sha256) else "not trusted yet"
            lines.append(f"- {name}: {snap.manifest.description} (sha256 {snap.sha256[:16]}…, {trust})")
        return "\n".join(lines) or "You have written no tools yet; create one with create_tool."

    def delete_tool(self, args: JSONObject, ctx: ToolContext) -> str:
        name = naming.check("tool", args["name"], NAME, NAME_RULE)
        directory = tools_dir(self.home) / name
        if not (directory / "tool.yaml").exists():
            raise UsageError(f"tool {name!r} does not exist (see list_tools)")
        shutil.rmtree(directory)
        if name not in self.reserved:
            self.registry.tools.pop(name, None)
            self.limits.pop(name, None)
        return f"Deleted tool {name!r}."

    def _trusted(self, name: str, sha256: str) -> bool:
        return bool(self.trusted and self.trusted(name, sha256))


def _unpinned(args: JSONObject, ctx: ToolContext) -> str:
    raise RuntimeError("an authored tool ran without pinned code: the loop must run Tool.pin() first")
