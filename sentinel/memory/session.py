"""The live session file `runs/<id>/session-live.md`: a run's goal, plan, decisions, checkpoints, current state
and errors-and-fixes, kept by the scribe from the run's journal.

    log = SessionLog()
    log.feed(record)                 # journal records, in order (the scribe feeds them as they come)
    log.render(pressure="Low")       -> the file's text (under MAX_LINES: oldest checkpoints go first)
    log.progress()                   -> (done, total) of the plan
    log.learnings()                  -> what the curator may keep: decisions, error -> fix pairs

Everything is derived from journal records, so the file is the same whichever process writes it and a
resumed run rebuilds it exactly. The plan comes from the agent's `update_plan` calls (its `explanation`
is a decision); checkpoints are `checkpoint` records the scribe journals; files touched are the paths
of file tools that succeeded; an error is a failed tool result, its fix the next success of that tool.
An `archived` record starts a fresh file (a chat session whose plan was complete).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from sentinel.jsontypes import JSON, JSONObject

from sentinel.engine import records
from sentinel.tools import Tool, ToolContext, ToolError
from sentinel.tools import object_schema as _schema

LIVE = "session-live.md"
MAX_LINES = 200
STATUSES = ("pending", "in-progress", "done", "blocked")
PLAN_MAX = 50
FILE_TOOLS = {"write_file": "path", "edit_file": "path"}
KEEP_ERRORS = 10
KEEP_DECISIONS = 20


@dataclass
class Checkpoint:
    n: int
    t: float
    title: str
    completed: list[int]
    files: list[str]


@dataclass
class SessionLog:
    started: float | None = None
    goal: str = ""
    plan: list[dict[str, str]] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)       # "tool: error → fix"
    status: str = "running"
    last_request: str = ""
    files: list[str] = field(default_factory=list)        # touched since the last checkpoint
    done_at_checkpoint: set[int] = field(default_factory=set)
    changes: int = 0                                      # meaningful changes since the last checkpoint
    _calls: dict[str, JSONObject] = field(default_factory=dict)
    _failed: dict[str, str] = field(default_factory=dict)  # tool -> its last unfixed error

    # -- the journal, record by record ------------------------------------------------------------

    def feed(self, r: records.Record) -> None:
        handler = getattr(self, f"_on_{r.type}", None)
        if handler:
            handler(r)

    def _on_created(self, r: records.Created) -> None:
        self.started, self.goal = r.t, " ".join(r.task.split())

    def _on_archived(self, r: records.Archived) -> None:
        fresh = SessionLog(started=r.t, goal=self.goal)
        self.__dict__.update(fresh.__dict__)

    def _on_message(self, r: records.Message) -> None:
        msg = r.message
        if msg.get("role") == "user" and not r.skill and not r.note:
            self.last_request = " ".join(str(msg.get("content") or "").split())

    def _on_decision(self, r: records.Decision) -> None:
        if r.outcome != "deny":
            self._calls[r.call_id] = {"tool": r.tool if r.has("tool") else None, "arguments": r.arguments}

    def _on_finished(self, r: records.Finished) -> None:
        call = self._calls.pop(r.call_id, None)
        if call is None or r.interrupted or r.result.startswith("Denied"):
            return
        tool, args, result = str(call["tool"]), call["arguments"], r.result
        if failed(result):
            self._failed[tool] = first_line(result)
            return
        if tool in self._failed:
            self.errors = [*self.errors, f"{tool}: {self._failed.pop(tool)} → {describe(tool, args)}"][-KEEP_ERRORS:]
        if tool == "update_plan" and isinstance(args, dict):
            self._plan(args)
        elif tool in FILE_TOOLS and isinstance(args, dict) and args.get(FILE_TOOLS[tool]):
            path = str(args[FILE_TOOLS[tool]])
            self.files = [*[f for f in self.files if f != path], path]
            self.changes += 1

    def _plan(self, args: JSONObject) -> None:
        plan = args.get("plan")
        self.plan = [{"task": str(i.get("task", "")), "status": str(i.get("status", "pending"))}
                     for i in (plan if isinstance(plan, list) else []) if isinstance(i, dict)]
        if args.get("explanation"):
            line = " ".join(str(args["explanation"]).split())
            if line not in self.decisions:
                self.decisions = [*self.decisions, line][-KEEP_DECISIONS:]
        self.changes += 1

    def _on_checkpoint(self, r: records.Checkpoint) -> None:
        done = {i for i, item in enumerate(self.plan, 1) if item["status"] == "done"}
        self.checkpoints.append(Checkpoint(len(self.checkpoints) + 1, float(r.t or 0), r.title,
                                           sorted(done - self.done_at_checkpoint), self.files))
        self.done_at_checkpoint, self.files, self.changes = done, [], 0

    def _on_status(self, r: records.Status) -> None:
        self.status = r.status or self.status

    def _on_paused(self, r: records.Paused) -> None:
        self.status = "waiting_approval"

    def _on_resolved(self, r: records.Resolved) -> None:
        self.status = "running"

    # -- queries ----------------------------------------------------------------------------------

    def progress(self) -> tuple[int, int]:
        return sum(1 for item in self.plan if item["status"] == "done"), len(self.plan)

    def active(self) -> bool:
        """A plan with work left: a resumed session picks it up; a complete one is archived."""
        done, total = self.progress()
        return done < total

    def learnings(self) -> list[str]:
        return [f"Decision: {d}" for d in self.decisions] + [f"Error → fix: {e}" for e in self.errors]

    # -- the file ---------------------------------------------------------------------------------

    def render(self, pressure: str = "Low", keep_checkpoints: int | None = None) -> str:
        """The file's text; `keep_checkpoints`: the curator's tidy-up keeps only the last few."""
        checkpoints = self.checkpoints[-keep_checkpoints:] if keep_checkpoints else list(self.checkpoints)
        while True:
            lines = self._lines(checkpoints, pressure)
            if len(lines) < MAX_LINES or not checkpoints:
                return "\n".join(lines[:MAX_LINES - 1]) + "\n"
            checkpoints = checkpoints[1:]  # the oldest checkpoint goes first; the plan never does

    def _lines(self, checkpoints: list[Checkpoint], pressure: str) -> list[str]:
        started = _clock(self.started, "%Y-%m-%dT%H:%M") if self.started else "?"
        done, total = self.progress()
        out = ["# Active Session", f"**Started:** {started}", f"**Goal:** {_cut(self.goal, 300)}",
               f"**Status:** {self.status}", "", "## Plan", "| # | Task | Status | Agent |",
               "|---|------|--------|-------|"]
        out += [f"| {i} | {_cell(item['task'])} | {item['status']} | main |" for i, item in enumerate(self.plan, 1)]
        if not self.plan:
            out.append("| - | (no plan yet: the agent records one with update_plan) | - | - |")
        out += ["", "## Decisions", *(f"- {d}" for d in self.decisions or ["None yet"]), "", "## Checkpoints"]
        for cp in checkpoints:
            completed = ", ".join(f"#{i}" for i in cp.completed) or "none"
            files = ", ".join(cp.files[:20]) + (f" (+{len(cp.files) - 20} more)" if len(cp.files) > 20 else "")
            out += ["", f"### CP-{cp.n} ({_clock(cp.t, '%H:%M')}) — {cp.title}", f"- Completed: {completed}",
                    f"- Files: {files or 'none'}"]
        active = next((i for i, item in enumerate(self.plan, 1) if item["status"] == "in-progress"), None)
        nxt = next((i for i, item in enumerate(self.plan, 1) if item["status"] == "pending"), None)
        blockers = "waiting for an operator's approval" if self.status == "waiting_approval" else "None"
        out += ["", "## Current State",
                f"- **Active task:** {self._task(active)}",
                f"- **Progress:** {done} of {total} tasks complete",
                f"- **Blockers:** {blockers}",
                f"- **Next:** {self._task(nxt)}",
                f"- **Last request:** {_cut(self.last_request, 200) or 'none'}",
                f"- **Context pressure:** {pressure}",
                "", "## Errors & Fixes (This Session)", *(f"- {e}" for e in self.errors or ["None"])]
        return out

    def _task(self, n: int | None) -> str:
        return f"#{n} {_cut(self.plan[n - 1]['task'], 120)}" if n else "none"


def failed(result: str) -> bool:
    if result.startswith("Error"):
        return True
    head = first_line(result)
    return head.startswith("exit code: ") and head != "exit code: 0"


def first_line(text: str) -> str:
    return _cut(text.strip().splitlines()[0] if text.strip() else "", 160)


def describe(tool: str, args: JSON) -> str:
    """How a fix is named: the call that worked, in short."""
    if isinstance(args, dict):
        shown = ", ".join(f"{k}={_cut(str(v), 60)!s}" for k, v in args.items() if k not in ("content", "new_string"))
        return f"{tool}({shown}) worked"
    return f"{tool} worked"


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _cell(text: str) -> str:
    return _cut(text, 120).replace("|", "/")


def _clock(t: float | None, fmt: str) -> str:
    return time.strftime(fmt, time.localtime(t or 0))


# -- the agent's tool ---------------------------------------------------------------------------


def plan_tool() -> Tool:
    item: JSONObject = {"type": "object", "properties": {"task": {"type": "string"},
                                                         "status": {"type": "string", "enum": [*STATUSES]}},
            "required": ["task", "status"], "additionalProperties": False}
    return Tool("update_plan", "Record or update your plan for this task: the whole list of steps, each with its "
                               "status. Use it when you make a plan and whenever a step is done; it is your "
                               "checkpoint if the run is interrupted or its history compacted.",
                _schema({"plan": {"type": "array", "items": item},
                         "explanation": {"type": "string", "description": "A decision you made and why (optional)."}},
                        ["plan"]), update_plan)


def update_plan(args: JSONObject, ctx: ToolContext) -> str:
    plan = args.get("plan")
    if not isinstance(plan, list) or not plan:
        raise ToolError("plan must be a non-empty list of {task, status}")
    if len(plan) > PLAN_MAX:
        raise ToolError(f"plan has {len(plan)} steps; keep it to {PLAN_MAX}")
    steps = [step if isinstance(step, dict) else {} for step in plan]
    for i, step in enumerate(steps):
        if not str(step.get("task", "")).strip():
            raise ToolError(f"plan[{i}].task must not be empty")
    done = sum(1 for step in steps if step.get("status") == "done")
    return f"Plan recorded: {done} of {len(plan)} tasks complete."
