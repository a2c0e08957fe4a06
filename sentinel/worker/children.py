"""Child runs: `delegate`, `spawn` and `run_workflow` hand their call to a durable child run.

    tools = child_tools(children, state, lambda: parent_tools)   # registered when the engine offers child runs
    grants(parent_tools, wanted)   -> the child's tools: never one its parent lacks

A call of these tools is decided on its plan (`Children.plan`: agent, task, model and the exact grants), so an
approval shows and binds exactly what the child will be. Running the call starts the child once (the store
keys it on the parent and the call id), then advances it; while it is not over, the parent waits
(`waiting_child`, not an approval) and its process may end. On resume, at any depth, the call's child is
found again and advanced, never started twice; the child's final answer is the call's result.

`Children` is what the engine offers: local mode runs the child in the same process, system mode asks the
supervisor to start it as the child agent's user.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Protocol

from sentinel.agents.naming import CHILD_TOOLS
from sentinel.engine.state import RunState
from sentinel.tools import Tool, ToolContext, ToolError, object_schema
from sentinel.engine.status import RunStatus
from sentinel.jsontypes import JSON, JSONObject

__all__ = ["CHILD_TOOLS", "Children", "child_tools", "grants"]
TEMPORARY = "sub-"        # a spawned subagent's profile name: sub-<id>
SAVE_CALL = "save-agent"  # the call id of the approval that keeps one (orchestration.temporary: ask)


class Children(Protocol):
    def plan(self, tool: str, args: JSONObject, parent: RunState, granted: frozenset[str]) -> JSONObject:
        """The exact child a call would make; raises ToolError (or a SentinelError) to refuse it."""
        ...

    def child_for_call(self, parent_id: str, call_id: str) -> Mapping[str, object] | None:
        """The child run the call made, if any (the loop reads its `id`)."""
        ...

    def start(self, parent: RunState, call_id: str, tool: str, plan: JSONObject,
              granted: frozenset[str]) -> str:
        """Create the child run of this call (checking its grants against `granted` again); its id."""
        ...

    def advance(self, child_id: str) -> JSONObject:
        """Let the child go on until it pauses or ends: its status, output and error."""
        ...


def grants(parent: Iterable[str], wanted: Iterable[str] | None, *, strict: bool = False) -> list[str]:
    """The child's tools: the parent's granted tools ∩ what the child asks for (its profile's tools, or the
    call's `tools`; everything the parent has when None). `strict`: asking for a tool the parent lacks refuses
    the call instead of dropping the tool."""
    have = set(parent)
    if wanted is None:
        return sorted(have)
    missing = sorted(set(wanted) - have)
    if strict and missing:
        raise ToolError(f"refused: this run is not granted {', '.join(missing)}, so no child of it can be; "
                        f"ask only for tools this run has ({', '.join(sorted(have)) or 'none'})")
    return sorted(set(wanted) & have)


def check_depth(depth: int, max_depth: int) -> None:
    if depth > max_depth:
        raise ToolError(f"refused: a child run here would be {depth} levels deep and orchestration.max_depth is "
                        f"{max_depth}; do this part of the task yourself")


def handoff(task: str, request: str) -> str:
    """The child's first message: the hand-off task, with the request it is part of, so nothing is lost."""
    if not request.strip() or request.strip() == task.strip():
        return task
    return f"{task}\n\n---\nThis task is part of a larger request. The original request was:\n\n{request}"


def temporary_description(task: str) -> str:
    """A spawned subagent's profile description: what it was made for."""
    return f"temporary subagent: {task[:80]}"


def result_text(ended: JSONObject) -> str:
    """What the parent's call returns: the child's answer, or why it has none."""
    if ended["status"] == RunStatus.DONE:
        return text_of(ended.get("output"))
    if ended["status"] == RunStatus.DONE_UNVERIFIED:  # the parent hears that nobody checked it, and what
        return (f"{text_of(ended.get('output'))}\n\n[sentinel note] The child run {ended['id']} answered, but the "
                f"harness did not verify its work ({ended.get('error') or 'not verified'}): check it before relying "
                "on it.")
    return f"Error: the child run {ended['id']} {ended['status']}: {ended.get('error') or 'no answer'}"


def text_of(value: JSON) -> str:
    """A run's text column as the child's answer carries it: its text, "" when it has none (None)."""
    return value if isinstance(value, str) else ""


_STRINGS: JSONObject = {"type": "array", "items": {"type": "string"}}


def child_tools(children: Children, state: RunState, parent_tools: Callable[[], frozenset[str]]) -> list[Tool]:
    def tool(name: str, description: str, props: Mapping[str, JSON], required: list[str]) -> Tool:
        def plan(args: JSONObject) -> JSONObject:
            return children.plan(name, args, state, parent_tools())

        def never(args: JSONObject, ctx: ToolContext) -> str:  # the loop starts a child run instead
            raise ToolError(f"{name} runs as a child run")

        return Tool(name, description, object_schema(props, required), never, plan=plan)

    text: JSONObject = {"type": "string"}
    return [
        tool("delegate", "Have one of the agents that work for you (listed in your instructions) do a task: "
                         "`agent` is its name, `task` says everything it needs; returns its final answer.",
             {"agent": text, "task": text}, ["agent", "task"]),
        tool("spawn", "Compose a temporary subagent for one task: its soul (who it is, how it works), optionally "
                      "its model, skills and tools (a subset of yours); returns its final answer.",
             {"task": text, "soul": text, "model": text, "skills": _STRINGS, "tools": _STRINGS}, ["task", "soul"]),
        tool("run_workflow", "Run a saved workflow (each step a supervised run) on an input; returns the last "
                             "step's output.", {"name": text, "input": text}, ["name", "input"]),
    ]
