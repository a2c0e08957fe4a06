"""The agent loop for one run: call the model, decide each tool call, run it, repeat.

    AgentLoop(run, deps).execute() -> final status

`execute` loops over `step`; control leaves the loop through one exception family
(sentinel/worker/exits.py), each exit saying the status the run is left in. Every effect is journaled before and after it happens:

- a tool call is journaled `started` before it runs and `finished` after; on
  resume a call that started but never finished is not re-run (read-only tools
  excepted): the model is told it was interrupted;
- every tool call id gets exactly one result before the next model call;
- a call that needs approval pauses the run there; calls before it have run,
  calls after it are decided on resume;
- an approval is consumed exactly once, and only for the exact payload approved;
- a tool that pins its code (an agent-authored tool) is read and hashed once before it is decided;
  the call runs exactly that text, and an approval binds its hash too, so code changed after the
  decision or the approval never runs;
- before each model call the system prompt is rebuilt from the agent's files; a change is journaled;
- before each model call the keeper (sentinel/worker/compact.py) may checkpoint the session file and
  compact the middle of the conversation; when the run stops it checkpoints and curates;
- a call's decision and its resolution come from the store (the supervisor's in
  system mode), never from the journal, which the agent's user can write: a
  decision is recorded there once and taken from there on resume.

A chat session (`kind: chat`) does not end with its answer: it becomes `idle`
and the next user message (`sentinel.worker.turn`) starts another turn.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypedDict

from sentinel.agents.selfstate import SOUL_REFUSED
from sentinel.engine import records as rec
from sentinel.engine.run import Run
from sentinel.engine.runstore import RunStore
from sentinel.engine.store import call_digest
from sentinel.errors import SentinelError
from sentinel.jsontypes import JSONObject
from sentinel.models import ModelClient, ModelError, ModelUnavailable, ToolCall
from sentinel.models.base import tool_calls
from sentinel.models.toolcalls import recover
from sentinel.policy import landing
from sentinel.policy.decide import CallContext, Layer, decide
from sentinel.tools import Pinned, Registry, Tool, ToolContext, ToolError, parse_arguments
from sentinel.worker import deletes
from sentinel.worker.safeguards import answer
from sentinel.worker.compact import ContextKeeper
from sentinel.worker.children import CHILD_TOOLS, Children, result_text
from sentinel.worker.exits import (CodeChanged, Corrected, Failed, Finished, Paused, Stopped, Unavailable,
                                    Unverified, Waiting, WaitingChild)
from sentinel.worker.stream import CallStream
from sentinel.worker.safeguards import contract, draft, guards
from sentinel.worker.undo import Checkpoints
from sentinel.engine.status import ANSWERED, TERMINAL, ApprovalStatus, RunStatus


@dataclass
class Deps:
    model: ModelClient
    registry: Registry
    layers: list[Layer]
    store: RunStore
    tool_ctx: ToolContext
    max_steps: int
    max_wall_s: float
    granted: frozenset[str] | None = None
    approval_ttl_s: float | None = None
    prompt: Callable[[], str] | None = None  # the system prompt as the agent's files make it now
    keeper: ContextKeeper | None = None  # compaction, session file, curator
    children: Children | None = None  # child runs (delegate, spawn, run_workflow), when the engine offers them
    draft: bool = False  # a task run's model drafts its contract first (sentinel/worker/safeguards/draft.py)


MAX_CORRECTIONS = 2  # replies sent back as no answer, a turn, before the run fails
SELF_EDITS = {"edit_soul": "soul", "update_user": "user.md"}  # self-state tools whose edits the operator sees
INTERRUPTED = ("Error: this call was interrupted before it finished (the process running it stopped) and was "
               "not re-run, because it may have had side effects. Check its effects before trying again.")


class Shown(TypedDict, total=False):
    """What an approval of a pinned tool shows the operator: its files and their hash."""

    code: dict[str, str]
    code_sha256: str


class AgentLoop:
    def __init__(self, run: Run, deps: Deps):
        self.run = run
        self.deps = deps
        self.state = run.state
        self._pins: dict[str, Pinned] = {}  # call id -> the code its decision hashed (this process only)
        self._points = Checkpoints(run.dir, deps.tool_ctx.workspace)  # what each call changed, for undo

    # -- the loop -----------------------------------------------------------

    def execute(self) -> str:
        self.run.record(rec.Session(pid=os.getpid()))
        self.deps.store.set_status(self.state.id, RunStatus.RUNNING)
        try:
            self.make_contract()
            while True:
                self.step()
        except Waiting as wait:  # an operator, or a child run (whose end resumes this run)
            self.state.status = wait.status
            self.deps.store.set_status(self.state.id, wait.status)
        except Stopped as stop:  # a chat session survives its turn's end, failed or not: the next message goes on
            self._finish(RunStatus.IDLE if self.chat else stop.status, output=stop.output, error=stop.error)
        finally:
            self.run.snapshot()
        if self.deps.keeper is not None:
            self.deps.keeper.at_end(self.run)
        return self.state.status

    @property
    def chat(self) -> bool:
        return self.state.kind == "chat"

    def step(self) -> None:
        if calls := self.state.open_calls():
            for call in calls:
                self.settle(call)
            return
        if (answer := self.state.answer()) is not None:  # answered before the process stopped: never ask twice
            self.finish(answer, self.record_verdict(self.turn()))
        self.check_limits()
        try:
            self.call_model()
        except Corrected:
            pass

    def _finish(self, status: str, *, output: str | None = None, error: str | None = None) -> None:
        self.run.record(rec.Status(status=status, output=output, error=error))
        self.deps.store.set_status(self.state.id, status, output=output, error=error)

    def check_limits(self) -> None:
        """Limits count from the last user message: a run's task, or a chat session's latest message."""
        if self.state.steps - self.state.turn_steps >= self.deps.max_steps:
            raise Failed(f"step limit reached ({self.deps.max_steps} model calls; limits.max_steps)")
        if self.state.elapsed_s(time.time()) - self.state.turn_s > self.deps.max_wall_s:
            raise Failed(f"time limit reached ({self.deps.max_wall_s:g}s of work; limits.max_wall_s)")

    # -- the model ------------------------------------------------------------

    def call_model(self) -> None:
        if self.deps.keeper is not None:
            self.deps.keeper.before_call(self.run)  # may checkpoint and compact the conversation
        self.refresh_prompt()
        tools = self.deps.registry.schemas(self.deps.granted)
        hooks = CallStream(self.run, self.state.model, self.state.steps + 1).hooks()  # live views' events
        began = time.monotonic()
        try:
            completion = self.deps.model.complete(self.state.messages, tools, **hooks)
        except ModelUnavailable as exc:
            raise Unavailable(str(exc)) from None
        except ModelError as exc:
            raise Failed(str(exc)) from None
        calls, recovered = completion.tool_calls, False
        if not calls and completion.content:
            calls = recover(completion.content, self.known(), self.state.steps)
            recovered = bool(calls)
        completion.tool_calls = calls
        turn = None if calls else self.turn()
        problem = None if turn is None else answer.check(completion.content, turn) or self.unmet(turn)
        record = rec.Assistant(message=completion.to_message(), model=completion.model,
                               latency_ms=round((time.monotonic() - began) * 1000, 1), usage=dict(completion.usage),
                               recovered=recovered, rejected=problem.kind if problem else None)
        if recovered:
            self.run.record(record, self.safeguard("recovered_tool_call", "recovered",
                                                   f"a tool call written as text became a real call to "
                                                   f"{', '.join(c.name for c in calls)}"))
        elif problem is None:
            self.run.record(record)
        else:
            self.send_back(record, problem)
        if not calls:
            self.finish(completion.content, self.record_verdict(turn))
        self.break_loop()

    # -- the contract -------------------------------------------------------------

    def make_contract(self) -> None:
        """Once per task run, before its first model call: what the task asks for, from the task and the workspace
        as the run finds it (sentinel/worker/safeguards/contract.py)."""
        if self.state.kind != "task" or self.state.contract is not None or self.state.steps:
            return
        workspace = self.deps.tool_ctx.workspace
        made = contract.derive(self.state.request, workspace)
        why = None
        if self.deps.draft:
            try:
                drafted, why = draft.ask(self.deps.model, self.state.request, workspace)
            except ModelUnavailable as exc:
                raise Unavailable(str(exc)) from None
            made = draft.merge(made, drafted, workspace) if drafted is not None else made
        terms: JSONObject = made.to_dict() | ({"draft_error": why} if why else {})
        self.run.record(rec.ContractMade(terms=terms, clauses=[*made.words()]),
                        *([self.safeguard("contract_draft", "flagged", why)] if why else []))

    def terms(self) -> contract.Contract | None:
        if self.state.contract is None or self.state.kind != "task":
            return None
        return contract.Contract.from_dict(self.state.contract.get("terms") or {})

    def unmet(self, turn: answer.Turn) -> answer.Problem | None:
        """The contract's clauses the workspace does not meet, as a reply to send back (then a failure)."""
        terms = self.terms()
        if terms is None or turn.denied:
            return None
        terms = terms.part(drafted=False)  # the model is never sent back to satisfy its own draft
        missing = contract.check(terms, self.deps.tool_ctx.workspace, self._passed(terms, turn), self.printed(),
                                 self.typed())
        if not missing:
            return None
        listed = "; ".join(missing)
        return answer.Problem("contract_unmet", f"the task is not done: {listed}",
                              f"[sentinel] The task is not done yet: {listed}. Do it with a tool call, then answer.",
                              f"the task is not done: {listed}")

    def standing(self) -> str:
        """For a model repeating itself: where the task's contract stands now, checked on the workspace (a small
        model that redoes finished work is told the harness's checks hold; one that is stuck, what is missing)."""
        terms = self.terms()
        terms = None if terms is None else terms.part(drafted=False)
        if terms is None or not (terms.create or terms.change or terms.delete):
            return ""
        missing = contract.check(terms, self.deps.tool_ctx.workspace, True, self.printed(), self.typed())
        if missing:
            return f"\n[sentinel note] Still to do for this task: {'; '.join(missing)}."
        files = [c for c in terms.clauses() if not c.startswith(("pass `", "answer: "))]
        return (f"\n[sentinel note] The workspace now meets the task's file checks ({'; '.join(files)}). If the "
                "work is complete, give your final answer now.")

    def typed(self) -> set[str]:
        """The workspace files whose last change in this run was a file tool's content (the model's own words),
        not a command's output."""
        last: dict[str, str] = {}
        for step in self.state.workspace_steps:
            for path in step["changes"]:
                last[path] = str(step.get("tool") or "")
        return {path for path, tool in last.items() if tool in guards.FILE_TOOLS}

    def printed(self) -> str:
        """The request and what the tools printed (a command's `exit code: N` line left out), never the model's
        own words or call arguments: what a number in a deliverable can come from."""
        results = [_EXIT_LINE.sub("", str(m.get("content") or "")) for m in self.state.messages
                   if m.get("role") == "tool"]
        return "\n".join([self.state.request, *results])

    @staticmethod
    def _passed(terms: contract.Contract, turn: answer.Turn) -> bool:
        return terms.command is None or answer.passed(terms.command, turn.since_change)

    def record_verdict(self, turn: answer.Turn | None) -> list[str]:
        """`verified` when every clause of the contract was checked and held: the answer's word is not the check.
        Returns what was not checked (empty for a run without a contract: a chat, a watcher's session)."""
        terms = self.terms()
        if terms is None or turn is None:
            return []
        workspace, passed, printed, typed = self.deps.tool_ctx.workspace, self._passed(terms, turn), self.printed(), \
            self.typed()
        unmet = contract.check(terms.part(drafted=False), workspace, passed, printed, typed)
        # a drafted clause that does not hold fails nothing (it is the model's reading of the task), but the run
        # is not called verified while it does not hold
        unchecked = [f"{line} (a clause of the model's draft)"
                     for line in contract.check(terms.part(drafted=True), workspace, passed, printed, typed)]
        unchecked += contract.unchecked(terms) + contract.copies(terms, workspace)
        self.run.record(rec.Verdict(verified=not unmet and not unchecked, checked=[*terms.clauses()], unmet=[*unmet],
                                    unchecked=[*unchecked]))
        return unchecked

    @staticmethod
    def finish(text: str, unchecked: list[str]) -> None:
        """End the task with its answer: `done` only when the harness checked everything the contract asks for."""
        if unchecked:
            raise Unverified(text, f"not verified: {'; '.join(unchecked)}")
        raise Finished(text)

    def known(self) -> set[str]:
        return self.deps.registry.names() if self.deps.granted is None else set(self.deps.granted)

    def turn(self) -> answer.Turn:
        """What the answer checks know of the turn a reply ends: its last tool result when that call failed, how
        many tool results it has (corrections don't end a turn), the conversation's text an answer may draw on
        (every message, call and result), the arguments of its calls, and whether one of them was denied."""
        request = "" if self.state.kind == "hook" else self.state.request  # a watcher's event asks for no file
        names: dict[str, str] = {}
        last: JSONObject | None = None
        calls = ran = 0
        evidence: list[str] = []
        call_args: list[str] = []
        denied = False
        for message in self.state.messages:
            role, content = message.get("role"), str(message.get("content") or "")
            if role != "assistant" and not content.startswith("[sentinel]"):
                evidence.append(content)  # the model's words and our corrections ground nothing; its calls do
            if role == "user" and not content.startswith("[sentinel]"):
                last, calls, ran, call_args, denied = None, 0, 0, [], False
            elif role == "assistant":
                for c in tool_calls(message):
                    names[c.id] = c.name
                    evidence.append(c.arguments)
                    call_args.append(c.arguments)
            elif role == "tool":
                last, calls = message, calls + 1
                refused = self.refused(str(message.get("tool_call_id")), content)
                denied = denied or refused
                ran += not refused
        since_change = self.since_change()
        last_error = None
        if last is not None:
            tool = self.deps.registry.get(names.get(str(last.get("tool_call_id")), ""))
            result = str(last.get("content") or "")
            last_error = result if answer.failed(result, changes_things=tool is None or not tool.read_only) else None
        # the calls' arguments from the journal's record of the turn: a compaction may have dropped early reads
        call_args = self.state.turn_args or call_args
        return answer.Turn(self.known(), self.state.changes, request, self.deps.tool_ctx.workspace, last_error,
                           calls, "\n".join(evidence), "\n".join(call_args), denied, since_change, ran)

    def refused(self, call_id: str, result: str) -> bool:
        """Whether a call's result is a denial of what it asked for: by a person, or by the policy's layers. A call
        to a tool that does not exist, or with arguments its tool rejects, is "denied" with no layer: that is a
        model's mistake, corrected by its result, not an action someone refused."""
        if result.startswith(("Denied by the operator", "Denied: the approval")):
            return True
        return result.startswith("Denied by policy") and bool((self.state.decisions.get(call_id) or {}).get("layers"))

    def since_change(self) -> tuple[tuple[str, str], ...]:
        """(command, result) of each bash call made after this turn's last change (a test run that checks it)."""
        if not self.state.last_change:
            return ()
        results = {m.get("tool_call_id"): str(m.get("content") or "") for m in self.state.messages
                   if m.get("role") == "tool"}
        calls = [c for m in self.state.messages if m.get("role") == "assistant" for c in tool_calls(m)]
        ids = [c.id for c in calls]
        after = calls[ids.index(self.state.last_change) + 1:] if self.state.last_change in ids else []
        ran = []
        for c in after:
            command = str(guards.arguments(c).get("command") or "") if c.name == "bash" else ""
            if command and c.id in results:
                ran.append((command, results[c.id]))
        return tuple(ran)

    def send_back(self, record: rec.Assistant, problem: answer.Problem) -> None:
        """A reply that is no answer: the model reads a correction and tries again, up to MAX_CORRECTIONS times
        a turn; then the run fails with one line saying why."""
        if problem.final:
            self.run.record(record, self.safeguard(problem.kind, "stopped", problem.detail))
            raise Failed(f"{problem.failure} (safeguard {problem.kind})")
        if self.state.corrections >= MAX_CORRECTIONS:
            self.run.record(record, self.safeguard(problem.kind, "stopped", problem.detail))
            raise Failed(f"{problem.failure} (safeguard {problem.kind}, after {MAX_CORRECTIONS} corrections)")
        correction = rec.Message(message={"role": "user", "content": problem.correction}, note="safeguard")
        self.run.record(record, self.safeguard(problem.kind, "retry", problem.detail), correction)
        raise Corrected()

    @staticmethod
    def safeguard(kind: str, action: str, detail: str, note: str | None = None) -> rec.Safeguard:
        return rec.Safeguard(kind=kind, action=action, detail=detail, note=note)

    def break_loop(self) -> None:
        """Stop a run that repeats itself (guards.repeating). The calls just asked for get a result saying they were
        not run."""
        why = guards.repeating(self.state.messages)
        if why is None:
            return
        results = [rec.Finished(call_id=c.id, result="Not run: the run was stopped for repeating itself.")
                   for c in self.state.open_calls()]
        self.run.record(*results, self.safeguard("loop", "stopped", why))
        raise Failed(f"stopped: the model repeated {why} (safeguard loop)")

    def refresh_prompt(self) -> None:
        """Self-state changed during the run (a skill attached, the soul rewritten): journal the new prompt."""
        messages = self.state.messages
        if self.deps.prompt is None or not messages or messages[0].get("role") != "system":
            return
        try:
            text = self.deps.prompt()
        except SentinelError:
            return  # a self-state file broken mid-run: keep the prompt the run already has
        if text != messages[0]["content"]:
            self.run.record(rec.System(content=text))

    # -- one tool call ----------------------------------------------------------

    def settle(self, call: ToolCall) -> None:
        """Give one open tool call its result, or pause the run at it."""
        call_id, name = call.id, call.name
        if call_id in self.state.started:
            if self.hands_to_child(name):  # its child run carries on: found again, never started twice
                return self.hand_to_child(call_id, name, self.decision_of(call_id))
            return self._after_crash(call)
        decision = self.decision_of(call_id)
        if decision is None and (refused := guards.before(self.seen(), call)) is not None:
            result = refused.result + (self.standing() if refused.duplicate else "")
            return self.run.record(self.safeguard(refused.kind, refused.action, refused.detail),
                                   rec.Finished(call_id=call_id, result=result, duplicate=refused.duplicate))
        decision = decision or self.decide(call)
        if decision.outcome == "deny":
            self._pins.pop(call_id, None)
            return self.result(call_id, f"Denied by policy: {decision.reason}")
        try:
            if decision.outcome == "needs_approval" and not self.approved(call, decision):
                return
            pinned = self.pinned(call_id, name, decision)
        except CodeChanged as exc:
            return self.result(call_id, f"Error: {exc}")
        self.execute_call(call_id, name, decision, pinned)

    def seen(self) -> guards.Seen:
        """What the pre-call guards know of the run (sentinel/worker/safeguards/guards.py)."""
        return guards.Seen(self.state.messages, self.state.known, self.state.request, self.state.kind,
                           self.deps.tool_ctx.workspace)

    def decision_of(self, call_id: str) -> rec.Decision | None:
        """The call's decision as the store keeps it (the first one recorded stands); None before it has one."""
        stood = self.deps.store.decision_for_call(self.state.id, call_id)
        return None if stood is None else _decision(call_id, stood)

    def decide(self, call: ToolCall) -> rec.Decision:
        call_id, name, raw = call.id, call.name, call.arguments
        tool = self.deps.registry.get(name)
        event: JSONObject = {"call_id": call_id, "tool": name}
        if tool is None:
            available = ", ".join(sorted(self.deps.registry.names()))
            event |= {"arguments": raw, "outcome": "deny", "layers": [],
                      "reason": f"unknown tool {name!r}; available tools: {available}"}
        else:
            try:
                args = parse_arguments(raw, tool)
                args = tool.plan(args) if tool.plan is not None else args
                if tool.trigger == "file_write":  # decided, approved and written where the path lands
                    args = landing.bind(args, str(self.deps.tool_ctx.workspace))
                pinned = self._pin(call_id, tool)
            except (ToolError, SentinelError) as exc:
                event |= {"arguments": raw, "outcome": "deny", "layers": [], "reason": str(exc)}
            else:
                ctx = self.context(call_id, name, args, pinned.sha256 if pinned else None)
                event |= {"arguments": args, **decide(ctx, self.deps.layers).to_dict()}
                if pinned is not None:
                    event["code_sha256"] = pinned.sha256
                if tool.mcp:
                    event["mcp"] = dict(tool.mcp)
        stood = self.deps.store.record_decision(self.state.id, call_id, event)
        decision = _decision(call_id, stood)
        self.run.record(decision)
        self.deps.store.audit("decision", {"run_id": self.state.id, "agent": self.state.agent, **stood,
                                           "sandbox": self.deps.tool_ctx.sandbox})
        return decision

    def _pin(self, call_id: str, tool: Tool) -> Pinned | None:
        """Read a pinned tool's code once, for the decision and (in this process) the call itself."""
        if tool.pin is None:
            return None
        self._pins[call_id] = pinned = tool.pin()
        return pinned

    def pinned(self, call_id: str, name: str, decision: rec.Decision, keep: bool = False) -> Pinned | None:
        """The code the call will run: exactly what the decision hashed, or CodeChanged."""
        sha = decision.code_sha256
        if sha is None:
            return None
        pinned = self._pins.get(call_id) if keep else self._pins.pop(call_id, None)
        if pinned is None:  # decided by an earlier session of this run (before a pause): read it again
            tool = self.deps.registry.get(name)
            try:
                pinned = tool.pin() if tool is not None and tool.pin is not None else None
            except SentinelError as exc:
                raise CodeChanged(f"{exc}; the call was not run") from None
        if pinned is None or pinned.sha256 != sha:
            raise CodeChanged(f"the code of tool {name} changed after this call was checked (sha256 {sha[:16]}… "
                              "was checked); it was not run. Call it again to have the new code checked.")
        if keep:
            self._pins[call_id] = pinned
        return pinned

    def approved(self, call: ToolCall, decision: rec.Decision) -> bool:
        """True when an operator approved this exact call; records the denial or pauses otherwise.
        The resolution is read from the store every time: a `resolved` line in the journal is only a record."""
        call_id, run_id = call.id, self.state.id
        store = self.deps.store
        approval = store.approval_for_call(run_id, call_id) or store.submit_approval(
            run_id, call_id, decision.tool, _args(decision), decision.reason, self.deps.approval_ttl_s,
            **self._shown_code(call_id, call.name, decision))
        store.expire()
        approval = store.get_approval(approval.id)
        if approval.status == ApprovalStatus.PENDING:
            if self.state.approvals.get(call_id) != approval.id or self.state.status != RunStatus.WAITING_APPROVAL:
                self.run.record(rec.Paused(call_id=call_id, approval_id=approval.id, tool=decision.tool,
                                           reason=decision.reason))
            raise Paused(approval.id)
        ok = approval.approved
        reason = approval.resolution_reason or ("approval expired" if approval.status == ApprovalStatus.EXPIRED else "")
        resolved = {"approval_id": approval.id, "approved": ok, "reason": reason, "by": approval.resolved_by}
        if self.state.resolved.get(call_id) != resolved:
            self.run.record(rec.Resolved(call_id=call_id, approval_id=approval.id, approved=ok, reason=reason,
                                         by=approval.resolved_by))
        if not ok:
            why = f": {reason}" if reason else ""
            self.result(call_id, f"Denied by the operator{why}")
            return False
        digest = call_digest(decision.tool, _args(decision), decision.code_sha256)
        if store.consume(approval.id, digest):
            return True
        consumed = approval.status == ApprovalStatus.CONSUMED
        if consumed and approval.digest == digest and call_id not in self.state.started:
            return True  # consumed by this run's previous session, which stopped before starting the call
        self.result(call_id, "Denied: the approval does not match this exact call")
        return False

    def _shown_code(self, call_id: str, name: str, decision: rec.Decision) -> Shown:
        """What an approval of a pinned tool shows the operator: the files the decision hashed."""
        pinned = self.pinned(call_id, name, decision, keep=True)
        return {"code": pinned.files, "code_sha256": pinned.sha256} if pinned is not None else {}

    def execute_call(self, call_id: str, name: str, decision: rec.Decision, pinned: Pinned | None = None) -> None:
        tool = self.deps.registry.get(name)
        assert tool is not None  # decide() denies unknown tools
        if self.hands_to_child(name):
            return self.hand_to_child(call_id, name, decision)
        self.run.record(rec.Started(call_id=call_id, tool=name))
        before = _fingerprint(self.deps.tool_ctx.workspace) if name == "bash" else None
        args = _args(decision)
        checkpoint = not tool.read_only and self.checkpoint_before(name, args)
        output = self.deps.registry.run(name, args, self.deps.tool_ctx, pinned)
        notes = [str(layer["note"]) for layer in decision.layers if isinstance(layer, dict) and layer.get("note")]
        notes += self.after_notes(call_id, name, args, output)
        changed = not tool.read_only and not output.startswith("Error:")
        if changed and before is not None and _fingerprint(self.deps.tool_ctx.workspace) == before:
            changed = False  # a command that left every workspace file as it was (a sed that matched nothing)
        records = self.verify(call_id, name, args, output, changed)
        notes += [r.note for r in records if isinstance(r, rec.Safeguard) and r.note]
        if notes:
            output += "".join(f"\n\n[sentinel note] {n}" for n in notes)
        known = _known_after(self.deps.tool_ctx.workspace, name, args, output)
        step = self.checkpoint_after(call_id, name) if checkpoint else []
        self.run.record(rec.Finished(call_id=call_id, result=output, changed=changed, known=list(known)), *records,
                        *step)

    def checkpoint_before(self, name: str, args: JSONObject) -> bool:
        """Keep what a call that may change files could overwrite (sentinel/worker/undo.py); False when the
        checkpoint store cannot be written (the call still runs: undo will say what it cannot restore)."""
        recorded = {p for s in self.state.workspace_steps for p in s["changes"]}
        try:
            self._points.before(name, args, recorded)
        except OSError:
            return False
        return True

    def checkpoint_after(self, call_id: str, name: str) -> list[rec.Record]:
        try:
            changes, complete = self._points.after()
        except OSError:
            changes, complete = {}, False
        if not changes and complete:
            return []
        return [rec.WorkspaceStep(call_id=call_id, tool=name, changes=dict(changes), complete=complete)]

    def verify(self, call_id: str, name: str, args: JSONObject, output: str,
               changed: bool) -> list[rec.Record]:
        """What the loop checks after a call: a written file exists; a self-state edit is recorded for the
        operator to see (with the soul version that undoes it), a refused soul edit too."""
        if name == "edit_soul" and output.startswith(f"Error: {SOUL_REFUSED}"):
            return [self.safeguard("soul_edit_refused", "refused", answer.short(output[len("Error: "):], 160))]
        if not changed:
            return []
        if name in guards.FILE_TOOLS:
            path = str(args.get("path") or "")
            if path and not (self.deps.tool_ctx.workspace / path).exists():
                note = f"{path} does not exist after this {name} call: check the path and write it again."
                return [self.safeguard("write_unverified", "flagged", f"{name}: {path} missing after the write", note)]
        if checked := self.check_content(name, args):
            return checked
        if name in SELF_EDITS:
            content = str(args.get("content") or "")
            return [rec.SelfEdit(agent=self.state.agent, call_id=call_id, tool=name, file=SELF_EDITS[name],
                                 chars=len(content), version=_version(output), excerpt=answer.short(content, 160))]
        return []

    def check_content(self, name: str, args: JSONObject) -> list[rec.Record]:
        """After a call changed files: a JSON, YAML or TOML file it wrote (or, after a command, one the request
        names) that no longer parses gets a note at
        once, so the model can mend it before it answers."""
        request, workspace = self.state.request, self.deps.tool_ctx.workspace
        if self.state.kind == "hook" or not answer.asks_for_change(request):
            return []
        paths = [str(args.get("path") or "")] if name in guards.FILE_TOOLS else answer.named_files(request)
        for path in filter(None, paths):
            if why := answer.unparsable(workspace, path):
                return [self.safeguard(answer.INVALID, "flagged", why, f"{why}. Write it again whole and valid.")]
        return []

    def context(self, call_id: str, name: str, args: JSONObject, code_sha256: str | None = None) -> CallContext:
        tool = self.deps.registry.get(name)
        return CallContext(run_id=self.state.id, agent=self.state.agent, tool=name, arguments=args, call_id=call_id,
                           task=self.state.task, mission=self.state.mission or self.state.task,
                           workspace=self.deps.tool_ctx.workspace, read_only=bool(tool and tool.read_only),
                           granted=self.deps.granted, code_sha256=code_sha256)

    def after_notes(self, call_id: str, name: str, args: JSONObject, output: str) -> list[str]:
        """Context that layers synthesize once the tool ran (the gate's `post: true` info rules)."""
        ctx = self.context(call_id, name, args)
        return [note for layer in self.deps.layers if hasattr(layer, "after") for note in layer.after(ctx, output)]

    # -- a call handed to a child run ----------------------------------------------------

    def hands_to_child(self, name: str) -> bool:
        return self.deps.children is not None and name in CHILD_TOOLS

    def hand_to_child(self, call_id: str, name: str, decision: rec.Decision | None) -> None:
        """Start the call's child run once, advance it, and give the call the child's answer when it ends;
        WaitingChild while it has not."""
        children = self.deps.children
        assert children is not None
        if decision is None:  # started but never decided: cannot happen, as a decision precedes `started`
            return self.result(call_id, INTERRUPTED, interrupted=True)
        if call_id not in self.state.started:
            self.run.record(rec.Started(call_id=call_id, tool=name))
        plan = _args(decision)
        child = children.child_for_call(self.state.id, call_id)
        if child is None:
            if self.deps.keeper is not None:  # the session file holds where this run stood before it hands off
                self.deps.keeper.before_children(self.run)
            granted = self.deps.granted if self.deps.granted is not None else frozenset(self.deps.registry.names())
            try:
                child_id = children.start(self.state, call_id, name, plan, granted)
            except (ToolError, SentinelError) as exc:
                return self.result(call_id, f"Error: {exc}")
            self.run.record(rec.ChildStarted(child_id=child_id, call_id=call_id,
                                             agent=str(plan.get("agent") or plan.get("workflow") or ""),
                                             task=str(plan.get("task") or plan.get("input") or "")))
        else:
            child_id = str(child["id"])
        ended = children.advance(child_id)
        self._points.forget()  # the child's changes are in its own checkpoints, never in this run's next step
        if ended["status"] not in TERMINAL:
            raise WaitingChild(child_id)
        output = ended.get("output")
        self.run.record(rec.ChildFinished(child_id=child_id, call_id=call_id, status=str(ended["status"]),
                                          output=output if isinstance(output, str) else None))
        self.result(call_id, result_text(ended), changed=ended["status"] in ANSWERED)

    def _after_crash(self, call: ToolCall) -> None:
        tool = self.deps.registry.get(call.name)
        decision = self.decision_of(call.id)
        if tool is not None and tool.read_only and decision is not None:
            return self.execute_call(call.id, tool.name, decision)
        step = [] if tool is not None and tool.read_only else self._interrupted_step(call)
        changed = [p.replace("\0", "\\x") for s in step for p in s.changes]  # a byte not UTF-8 as \xff
        note = f" It changed {', '.join(changed[:20])}{' …' if len(changed) > 20 else ''}." if changed else ""
        self.run.record(rec.Finished(call_id=call.id, result=INTERRUPTED + note, changed=bool(changed),
                                     interrupted=True), *step)

    def _interrupted_step(self, call: ToolCall) -> list[rec.WorkspaceStep]:
        """The checkpoint of a call its process never finished (killed mid call): what the workspace holds now
        against what the checkpoints last recorded (sentinel/worker/undo_record.py `recover`), so undo reverts it."""
        try:
            changes, complete = self._points.recover(self.state.workspace_steps)
        except OSError:
            changes, complete = {}, False
        if not changes and complete:
            return []
        return [rec.WorkspaceStep(call_id=call.id, tool=call.name, changes=changes, complete=complete)]

    def result(self, call_id: str, text: str, *, changed: bool = False, interrupted: bool = False) -> None:
        self.run.record(rec.Finished(call_id=call_id, result=text, changed=changed, interrupted=interrupted))


FINGERPRINT_MAX = 500  # workspace entries: beyond this a command counts as a change without looking


HASH_MAX = 256 * 1024  # files up to this size are compared by content (`sed -i` rewrites a file it left as it was)
HASHED_MAX = 8 * 1024 * 1024  # bytes read per look: beyond this a command counts as a change without looking


TOOL_CACHES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def _fingerprint(workspace: Path) -> dict[str, tuple[int, int | bytes]] | None:
    """Each workspace entry's size and content digest (modification time for a large file), caches the tools keep
    for themselves left out (running a test writes __pycache__: that is no change to the work); None: too many
    entries to look at cheaply, or unreadable."""
    seen: dict[str, tuple[int, int | bytes]] = {}
    stack, hashed = [workspace], 0
    try:
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.name in TOOL_CACHES:
                        continue
                    st = entry.stat(follow_symlinks=False)
                    if entry.is_dir(follow_symlinks=False):
                        seen[entry.path] = (0, 0)  # its entries are listed; its mtime moves with any rename in it
                    elif entry.is_file(follow_symlinks=False) and st.st_size <= HASH_MAX:
                        hashed += st.st_size
                        if hashed > HASHED_MAX:
                            return None
                        with open(entry.path, "rb") as f:
                            seen[entry.path] = (st.st_size, hashlib.blake2b(f.read(), digest_size=16).digest())
                    else:
                        seen[entry.path] = (st.st_size, st.st_mtime_ns)
                    if len(seen) > FINGERPRINT_MAX:
                        return None
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
    except OSError:
        return None
    return seen


_EXIT_LINE = re.compile(r"\Aexit code: -?\d+\n?")
_TRUNCATED = re.compile(r"\n\[\.\.\. \d+ characters truncated \.\.\.\]\n")


def _known_after(workspace: Path, name: str, args: JSONObject, output: str) -> list[str]:
    """Workspace paths a call showed whole (read_file, `cat FILE` with nothing truncated) or wrote whole (write_file,
    a command's `> FILE`, which replaces the file whether the command then works or not): the run knows what they
    hold, so replacing them loses nothing it has not seen."""
    paths: list[str] = []
    if name == "bash":
        command = str(args.get("command") or "")
        paths = guards.REDIRECT.findall(command)
        if output.startswith("exit code: 0") and not _TRUNCATED.search(output) and "|" not in command:
            paths += [w for words in deletes.commands(command) if words[0] == "cat" for w in words[1:]
                      if not w.startswith("-") and not set(w) & set("<>")]  # not `cat f | head`: part of f
    elif (name == "read_file" and not _TRUNCATED.search(output) or name == "write_file" and not args.get("append")) \
            and not output.startswith("Error:"):
        paths = [str(args.get("path") or "")]
    return [key for p in paths if (key := guards.workspace_path(workspace, p)) is not None]


def _version(output: str) -> int | None:
    """The soul version an edit_soul result names ("... the previous version is kept as version 3")."""
    found = re.search(r"\bversion (\d+)\b", output)
    return int(found.group(1)) if found else None


def _decision(call_id: str, stood: JSONObject) -> rec.Decision:
    """A decision as the store keeps it, typed as its journal record (one declaration for both). The store is
    the harness's own (the supervisor's in system mode): a decision of another shape is a bug, never run."""
    found = rec.from_dict({**stood, "type": "decision", "call_id": call_id})
    if not isinstance(found, rec.Decision):
        raise Failed(f"the decision recorded for call {call_id} is not one this version reads")
    return found


def _args(decision: rec.Decision) -> JSONObject:
    """The arguments a call was decided with: an object for any call that may run (a denied call's raw text
    is no object, and is never run)."""
    return decision.arguments if isinstance(decision.arguments, dict) else {}
