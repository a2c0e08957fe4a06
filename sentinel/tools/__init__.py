"""The tool registry: each tool is a JSON schema plus a function returning a string.

Model mistakes become observations: a bad argument, an unknown tool or a failing
tool comes back as an "Error: ..." result the model can read and correct.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, Mapping

from sentinel.errors import SentinelError
from sentinel.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator


class ToolError(Exception):
    """A tool failed in a way the model should hear about (not a harness bug)."""


@dataclass
class ToolContext:
    workspace: Path
    run_id: str = ""
    agent: str = ""
    bash_timeout_s: float = 120.0
    output_max_chars: int = 20000
    sandbox: str = "enforce"
    tools_mode: str = "sandboxed"
    extra: dict[str, int] = field(default_factory=dict)  # per-run numbers other layers hand the tools (agent_uid)


@dataclass(frozen=True)
class Pinned:
    """Content a tool will run, read once: decisions and approvals bind `sha256`, `run` executes exactly
    `files`. Tools whose code can change between the decision and the call (authored tools) pin it."""

    sha256: str
    files: dict[str, str]
    run: Callable[[JSONObject, ToolContext], str]


@dataclass
class Tool:
    name: str
    description: str
    parameters: JSONObject
    func: Callable[[JSONObject, ToolContext], str]
    read_only: bool = False
    trigger: str = "any"  # what the rule gate sees: file_write | bash | read | any
    pin: Callable[[], Pinned] | None = None  # set for tools that run pinned content (see Pinned)
    # a tool whose call becomes a child run (delegate, spawn): its arguments completed into the exact plan
    # (agent, model, grants) the decision and any approval bind; raises ToolError to refuse the call
    plan: Callable[[JSONObject], JSONObject] | None = None
    mcp: dict[str, str] | None = None  # an MCP server's tool: {"server": ..., "tool": ...} (decisions name both)

    def schema(self) -> JSONObject:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def object_schema(props: Mapping[str, JSON], required: list[str]) -> JSONObject:
    """The JSON schema of a tool's arguments: an object with these properties and no others."""
    return {"type": "object", "properties": dict(props), "required": [*required], "additionalProperties": False}


def arg_str(args: JSONObject, key: str) -> str:
    """A string argument the tool's schema requires (checked before the call; KeyError when it is missing)."""
    value = args[key]
    if not isinstance(value, str):
        raise ToolError(f"{key!r} must be a string")
    return value


def decode_arguments(raw: str | JSONObject) -> JSON:
    """A call's arguments as the model meant them: JSON text decoded (blank is {}), and decoded once more when a
    small model encoded them twice. Raises json.JSONDecodeError when the text is not JSON. The tool and the
    checks made before a call (worker/loop.py) both read arguments through this."""
    args: JSON = raw
    if isinstance(raw, str):
        args = json.loads(raw) if raw.strip() else {}
    if isinstance(args, str):  # doubly-encoded by a small model
        try:
            args = json.loads(args)
        except ValueError:
            pass
    return args


def parse_arguments(raw: str | JSONObject, tool: Tool) -> JSONObject:
    """Normalize and validate arguments; raises ToolError with a correction for the model."""
    try:
        args = decode_arguments(raw)
    except json.JSONDecodeError as exc:
        raise ToolError(f"arguments for {tool.name} are not valid JSON ({exc.msg} at char {exc.pos}); "
                        f"send a JSON object matching {json.dumps(tool.parameters)}") from None
    if not isinstance(args, dict):
        raise ToolError(f"arguments for {tool.name} must be a JSON object, got {type(args).__name__}")
    args = _coerce(args, tool.parameters)
    _validate(args, tool)
    return args


def _coerce(args: JSONObject, schema: JSONObject) -> JSONObject:
    props = schema.get("properties")
    out = dict(args)
    for key, value in args.items():
        prop = props.get(key) if isinstance(props, dict) else None
        want = prop.get("type") if isinstance(prop, dict) else None
        if isinstance(value, str) and want in ("integer", "number"):
            try:
                out[key] = int(value) if want == "integer" else float(value)
            except ValueError:
                pass
        elif want == "string" and isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            out[key] = "\n".join(str(v) for v in value)  # a small model's lines as a list: the text they spell
    return out


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> "Draft202012Validator":
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def _validate(args: JSONObject, tool: Tool) -> None:
    validator = _validator(json.dumps(tool.parameters, sort_keys=True))
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.path)
        field_note = f"field {where!r}: " if where else ""
        raise ToolError(f"invalid arguments for {tool.name}: {field_note}{err.message}. "
                        f"Expected: {json.dumps(tool.parameters)}")


class Registry:
    def __init__(self, tools: list[Tool] | None = None):
        self.tools: dict[str, Tool] = {}
        for tool in tools or []:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        self.tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def names(self) -> set[str]:
        return set(self.tools)

    def schemas(self, only: Collection[str] | None = None) -> list[JSONObject]:
        return [t.schema() for n, t in self.tools.items() if only is None or n in only]

    def run(self, name: str, args: JSONObject, ctx: ToolContext, pinned: Pinned | None = None) -> str:
        tool = self.tools[name]
        try:
            return pinned.run(args, ctx) if pinned is not None else tool.func(args, ctx)
        except ToolError as exc:
            return f"Error: {exc}"
        except SentinelError as exc:
            return f"Error: {exc}"
        except OSError as exc:
            return f"Error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
