"""Evaluation: scope first, then one judge call per matching rule, all in parallel (docs/gate.md).

    Gate(config, rules, paths, judges).pre(action, ...)   -> Verdict   before the tool runs
    Gate(...).post(action, ...)                            -> Verdict   after it ran (info rules with post: true)

No rule in scope means no model call and no thread. Severities: `block` denies with
the judge's reason, `ask` holds the action for a person's decision (the hook files an
approval: sentinel/hooks/ask.py; a run pauses), `warn` lets the action through with the reason as a warning,
`info` adds context: the rendered prompt (no model call) before the tool, or a
synthesized message after it (`post: true`). A violation counts only at or above
`confidence_threshold`. A `kind: scope` rule calls no judge: being in scope is the finding. A failed judge call is skipped when `fail_open` (the default)
and otherwise applies the rule's own severity with the error as the reason. Every
evaluation appends a telemetry line.

Every judge call ends: each has a wall-clock deadline (`timeout_ms`, cut to what is left of
`deadline_ms` for the action), enforced by its backend (a watchdog cuts a connection that still
trickles bytes, a CLI judge is killed) and again here: the calls run on daemon threads that are
waited for only until the deadline plus MARGIN_S; a call still running then is a failed call,
skipped (fail_open) or applying its rule's severity (strict).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Callable, TypeVar

from sentinel.jsontypes import JSONObject
from sentinel.policy.gate import alignment, telemetry
from sentinel.policy.gate.action import Action, template_vars
from sentinel.policy.gate.config import GateConfig, GatePaths
from sentinel.policy.gate.judges import JudgeError, JudgeSource, Request
from sentinel.policy.gate.lock import LockTimeout, priority_lock
from sentinel.policy.gate.prompts import CONTEXT, JUDGE_SYSTEM, SYNTH_SYSTEM, VERDICT, check, render, rule_verdict
from sentinel.policy.gate.rules import GPU_BACKENDS, Rule, applicable


class Finding:
    """One rule's outcome worth reporting: a block, a warning or some context."""

    __slots__ = ("rule_id", "severity", "reason", "confidence", "kind")

    def __init__(self, rule_id: str, severity: str, reason: str, confidence: float | None = None,
                 kind: str = "judge"):
        self.rule_id = rule_id
        self.severity = severity
        self.reason = reason
        self.confidence = confidence
        self.kind = kind

    def __repr__(self) -> str:
        return f"Finding({self.rule_id!r}, {self.severity!r}, {self.reason!r})"


class Verdict:
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.errors: list[str] = []   # failed evaluations that were skipped (fail_open)
        self.held: list[str] = []     # warnings found before the tool ran, delivered after it (hooks)
        self.calls = 0                # model calls made

    def merge(self, other: "Verdict") -> "Verdict":
        """Fold in the verdict of another action of the same call (a patch touching several files)."""
        self.findings.extend(other.findings)
        self.errors.extend(other.errors)
        self.held.extend(other.held)
        self.calls += other.calls
        return self

    def _of(self, severity: str) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity]

    @property
    def blocks(self) -> list[Finding]:
        return self._of("block")

    @property
    def asks(self) -> list[Finding]:
        return self._of("ask")

    @property
    def warnings(self) -> list[Finding]:
        return self._of("warn")

    @property
    def contexts(self) -> list[Finding]:
        return self._of("info")

    @property
    def silent(self) -> bool:
        return not self.findings and not self.held

    def block_reason(self) -> str:
        return "; ".join(f"[{f.rule_id}] {f.reason}" for f in self.blocks)

    def ask_reason(self) -> str:
        return "; ".join(f"[{f.rule_id}] {f.reason}" for f in self.asks)

    def warning_text(self) -> str:
        return "; ".join(f"[{f.rule_id}] {f.reason}" for f in self.warnings)

    def context_text(self) -> str:
        return "\n\n".join(f.reason for f in self.contexts)


NO_ANSWER = "no answer before the deadline"
MARGIN_S = 0.25  # past the deadline, what a backend gets to report its own timeout before the call counts as failed


T = TypeVar("T")
R = TypeVar("R")
Judged = tuple[JSONObject, float, str]  # a checked answer, the call's milliseconds, the model that answered


def run_parallel(fn: Callable[[T], R], items: list[T], max_parallel: int, deadline_s: float,
                 inline_one: bool = True) -> list[R | JudgeError]:
    """fn over items on daemon threads (never joined at exit), at most max_parallel at once.
    An item still running at the deadline yields a JudgeError. A single item runs inline, with no
    deadline but its own timeout, unless `inline_one` is false."""
    if len(items) == 1 and inline_one:
        return [_guarded(fn, items[0])]
    results: list[R | JudgeError] = [JudgeError(NO_ANSWER)] * len(items)
    gate = threading.BoundedSemaphore(max(1, max_parallel))

    def work(i: int) -> None:
        with gate:
            results[i] = _guarded(fn, items[i])

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(items))]
    for t in threads:
        t.start()
    end = time.monotonic() + deadline_s
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    return results


def _guarded(fn: Callable[[T], R], item: T) -> R | JudgeError:
    try:
        return fn(item)
    except Exception as exc:  # surfaced as a failed evaluation (fail_open decides), never lost in a thread
        return exc if isinstance(exc, JudgeError) else JudgeError(f"{type(exc).__name__}: {exc}")


class Gate:
    def __init__(self, config: GateConfig, rules: list[Rule], paths: GatePaths, judges: JudgeSource):
        self.cfg = config
        self.rules = rules
        self.paths = paths
        self.judges = judges

    # -- before the tool runs --------------------------------------------------------------

    def pre(self, action: Action, *, session_id: str = "", intent: alignment.Intent | None = None) -> Verdict:
        verdict = Verdict()
        matching = applicable(self.rules, action, "pre")
        if not matching:
            return verdict
        lines = [self._static(r, action, verdict) for r in matching if r.static]
        lines += [self._scoped(r, action, verdict) for r in matching if r.kind == "scope"]
        judged = [r for r in matching if r.judged]
        if intent is None or intent.empty:
            judged = [r for r in judged if r.kind != "alignment"]
        if judged:
            lines += self._judge_all(judged, action, intent, session_id, verdict)
        telemetry.append(self.paths.log_file, lines, self.paths.root)
        return verdict

    def _static(self, rule: Rule, action: Action, verdict: Verdict) -> JSONObject:
        text = render(rule.prompt, template_vars(action, self.cfg.content_max_chars)).strip()
        verdict.findings.append(Finding(rule.id, "info", text, kind="static"))
        return telemetry.record(rule.id, action.trigger, action.target, violation=False, confidence=None,
                                reason="static context", elapsed_ms=0, model="", backend="none",
                                severity="info", static=True)

    def _scoped(self, rule: Rule, action: Action, verdict: Verdict) -> JSONObject:
        """A rule decided by its scope alone (no judge): the call is in scope, so the severity applies."""
        reason = rule.description.strip() or f"{action.trigger} {action.target} is in the scope of rule {rule.id}"
        verdict.findings.append(Finding(rule.id, rule.severity, reason, kind="scope"))
        return telemetry.record(rule.id, action.trigger, action.target, violation=True, confidence=None,
                                reason=reason, elapsed_ms=0, model="", backend="none", severity=rule.severity,
                                kind="scope")

    def _judge_all(self, rules: list[Rule], action: Action, intent: alignment.Intent | None, session_id: str,
                   verdict: Verdict) -> list[JSONObject]:
        uses_gpu = any(self.backend_of(r) in GPU_BACKENDS for r in rules)
        lock_path = self.paths.lock_file(session_id) if uses_gpu else None
        waves = -(-len(rules) // max(1, self.cfg.max_parallel))
        self._prepare({self.backend_of(r) for r in rules})
        budget_s = min(waves * self.cfg.timeout_ms, self.deadline_ms) / 1000
        end = time.monotonic() + budget_s
        with priority_lock(lock_path, "judge", beneath=self.paths.root):
            outcomes = run_parallel(lambda r: self._judge_one(r, action, intent, end), rules, self.cfg.max_parallel,
                                    budget_s + MARGIN_S, inline_one=False)
        return [self._settle(rule, out, action, verdict) for rule, out in zip(rules, outcomes, strict=True)]

    def backend_of(self, rule: Rule) -> str:
        return rule.backend or self.cfg.backend

    def _prepare(self, backends: set[str]) -> None:
        """Build the backends and import their client libraries before the clock starts: the deadline bounds the
        judge, not a cold `import openai`. A backend that cannot be built fails in its call, with its rule."""
        for name in sorted(backends):
            try:
                prepare = getattr(self.judges.get(name), "prepare", None)
                if prepare is not None:
                    prepare()
            except Exception:
                pass

    @property
    def deadline_ms(self) -> float:
        return float(self.cfg.data.get("deadline_ms") or 20000)

    def shown(self, rule: Rule, action: Action) -> dict[str, str]:
        """The template values the judge reads: a write's content from where the rule's `when` found something,
        when that lies past the first `content_max_chars` (the judge is shown what made the rule apply)."""
        most = self.cfg.content_max_chars
        values = template_vars(action, most)
        if action.trigger == "file_write" and rule.when and (at := rule.found(action)) is not None and at >= most:
            start = max(0, at - most // 4)
            values["content_snippet"] = f"…{action.content[start:start + most]}"
        return values

    def _judge_one(self, rule: Rule, action: Action, intent: alignment.Intent | None,
                   end: float | None = None) -> Judged:
        backend = self.backend_of(rule)
        model = self.cfg.model_for(backend, rule.model)
        began = time.monotonic()
        if rule.kind == "alignment":
            if rule.skip_read_only and alignment.category(action) == "read_only":
                return {"decision": "approve", "reason": "read-only action (skipped)", "skipped": True}, 0.0, model
            req = alignment.request(action, intent or alignment.Intent(None, None), model, guidance=rule.prompt,
                                    timeout_s=self.cfg.timeout_ms / 1000,
                                    content_max_chars=self.cfg.content_max_chars)
        else:
            user = render(rule.prompt, self.shown(rule, action))
            req = Request(JUDGE_SYSTEM, user, VERDICT, model, timeout_s=self.cfg.timeout_ms / 1000,
                          temperature=0.0, max_tokens=200, think=bool(self.cfg.think))
        if req.start(end).remaining() <= 0:
            raise JudgeError(NO_ANSWER)  # waited its turn past the action's deadline
        answer = self.judges.get(backend).complete(req)
        try:
            answer = check(req.schema, answer)
        except ValueError as exc:
            raise JudgeError(f"{backend}: {exc}") from None
        return answer, (time.monotonic() - began) * 1000, model

    def _settle(self, rule: Rule, outcome: Judged | JudgeError, action: Action, verdict: Verdict) -> JSONObject:
        backend = self.backend_of(rule)
        if isinstance(outcome, JudgeError):
            return self._failed(rule, str(outcome), action, verdict)
        answer, elapsed, model = outcome
        verdict.calls += 0 if answer.get("skipped") else 1
        if rule.kind == "alignment":
            rejected, reason = alignment.decision(answer)
            confidence = None
            if rejected:
                verdict.findings.append(Finding(rule.id, rule.severity, reason or "not aligned with the request",
                                                kind="alignment"))
            violation = rejected
        else:
            violation, confidence, reason = rule_verdict(answer)
            if violation and confidence >= self.cfg.confidence_threshold:
                verdict.findings.append(Finding(rule.id, rule.severity, reason or f"violates rule {rule.id}",
                                                confidence))
        return telemetry.record(rule.id, action.trigger, action.target, violation=violation, confidence=confidence,
                                reason=reason, elapsed_ms=elapsed, model=model, backend=backend,
                                severity=rule.severity, kind=rule.kind if rule.kind != "judge" else None)

    def _failed(self, rule: Rule, error: str, action: Action, verdict: Verdict) -> JSONObject:
        backend = self.backend_of(rule)
        if self.cfg.fail_open:
            judge = f"{backend}/{self.cfg.model_for(backend, rule.model)}"
            verdict.errors.append(f"rule {rule.id} skipped: judge {judge} failed: {error} (skipped: fail_open)")
        else:
            verdict.findings.append(Finding(rule.id, rule.severity, f"could not be evaluated ({error}); strict mode",
                                            kind="error"))
        return telemetry.record(rule.id, action.trigger, action.target, violation=None, confidence=None,
                                reason="", elapsed_ms=0, model=self.cfg.model_for(backend, rule.model),
                                backend=backend, severity=rule.severity, error=error,
                                unchecked=True if self.cfg.fail_open else None)

    # -- after the tool ran ------------------------------------------------------------------

    def post(self, action: Action, *, session_id: str = "") -> Verdict:
        """Info rules with `post: true`: context synthesized from prompt + tool output + session summary."""
        verdict = Verdict()
        matching = applicable(self.rules, action, "post")
        if not matching:
            return verdict
        summary = read_summary(self.paths.session_dir(session_id))
        uses_gpu = any(self.backend_of(r) in GPU_BACKENDS for r in matching)
        lines: list[JSONObject] = []
        try:
            with priority_lock(self.paths.lock_file(session_id) if uses_gpu else None, "synthesizer",
                               beneath=self.paths.root):
                lines = [self._synthesize(r, action, summary, verdict) for r in matching]
        except LockTimeout as exc:
            verdict.errors.append(str(exc))
        telemetry.append(self.paths.log_file, lines, self.paths.root)
        return verdict

    def _synthesize(self, rule: Rule, action: Action, summary: str, verdict: Verdict) -> JSONObject:
        backend = self.backend_of(rule)
        model = self.cfg.model_for(backend, rule.model)
        values = template_vars(action, self.cfg.content_max_chars, session_context=summary or "(none yet)")
        req = Request(SYNTH_SYSTEM, render(rule.prompt, values), CONTEXT, model,
                      timeout_s=self.cfg.timeout_ms / 1000, temperature=0.0, max_tokens=200, think=bool(self.cfg.think))
        began = time.monotonic()
        try:
            answer = run_parallel(lambda r: self.judges.get(backend).complete(r.start()), [req], 1,
                                  req.timeout_s + MARGIN_S, inline_one=False)[0]
            if isinstance(answer, Exception):
                raise answer
            answer = check(CONTEXT, answer)
        except (JudgeError, ValueError) as exc:
            verdict.errors.append(f"rule {rule.id}: {exc}")
            return telemetry.record(rule.id, action.trigger, action.target, violation=None, confidence=None,
                                    reason="", elapsed_ms=0, model=model, backend=backend, severity="info",
                                    error=str(exc))
        verdict.calls += 1
        text = str(answer["context"]).strip()
        if text:
            verdict.findings.append(Finding(rule.id, "info", text, kind="synthesis"))
        return telemetry.record(rule.id, action.trigger, action.target, violation=False, confidence=None,
                                reason=text[:200], elapsed_ms=(time.monotonic() - began) * 1000, model=model,
                                backend=backend, severity="info", kind="synthesis")


def read_summary(session_dir: str) -> str:
    try:
        with open(os.path.join(session_dir, "summary.json"), encoding="utf-8") as fh:
            return str(json.load(fh).get("summary") or "")
    except (OSError, ValueError, AttributeError):
        return ""
