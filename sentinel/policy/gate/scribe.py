"""The scribe (docs/gate.md): conventions from sessions and documentation become draft rules for review.

    reflect(...)   on Stop: the compacted transcript -> extraction -> validation -> drafts
    learn(...)     `sentinel rules learn`: files matching scribe.doc_globs -> the same pipeline

Extraction is one model call classifying the text for human-stated rules ("never do
X", "always do Y") and agent self-corrections. Each convention above the confidence
threshold is stored as an observation; then structural dedup (dismissed list,
existing rules and drafts) and one validation call per convention that judges
semantic redundancy against the active rules and, if new, writes the draft rule.
Drafts are validated as rules before they are written. Priority P3 on the GPU lock
(waits up to 10 s, then skips).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import ContextManager, TypedDict

from sentinel.jsontypes import JSONObject
from sentinel.policy.gate import transcript as tx
from sentinel.policy.gate.config import GateConfig, GatePaths
from sentinel.policy.gate.drafts import DraftStore
from sentinel.policy.gate.judges import JudgeError, JudgeSource, Request
from sentinel.policy.gate.lock import LockTimeout, priority_lock
from sentinel.policy.gate.prompts import check
from sentinel.policy.gate.rules import GPU_BACKENDS, Rule

_STR: JSONObject = {"type": "string"}
_TRIGGER: JSONObject = {"type": "string", "enum": ["file_write", "bash", "mcp", "any"]}
CONVENTION: JSONObject = {"type": "object", "additionalProperties": False,
              "required": ["statement", "source", "evidence", "trigger", "scope", "confidence"],
              "properties": {"statement": _STR, "evidence": _STR, "trigger": _TRIGGER,
                             "source": {"type": "string", "enum": ["user_feedback", "agent_self_correction",
                                                                   "documentation"]},
                             "scope": {"type": "array", "items": _STR}, "confidence": {"type": "number"}}}
EXTRACTION: JSONObject = {"name": "sentinel_conventions", "schema": {
    "type": "object", "additionalProperties": False, "required": ["conventions"],
    "properties": {"conventions": {"type": "array", "items": CONVENTION}}}}
DRAFT_RULE: JSONObject = {"type": "object", "additionalProperties": False,
              "required": ["id", "trigger", "severity", "scope", "exclude", "prompt"],
              "properties": {"id": _STR, "trigger": _TRIGGER, "prompt": _STR,
                             "severity": {"type": "string", "enum": ["block", "warn", "info"]},
                             "scope": {"type": "array", "items": _STR}, "exclude": {"type": "array", "items": _STR}}}
VALIDATION: JSONObject = {"name": "sentinel_draft", "schema": {
    "type": "object", "additionalProperties": False, "required": ["redundant", "reason", "rule"],
    "properties": {"redundant": {"type": "boolean"}, "reason": _STR, "rule": DRAFT_RULE}}}

EXTRACT_SYSTEM = (
    "You find durable project conventions for an AI coding agent. Report only: (1) rules a human states as "
    "permanent (\"never do X\", \"always do Y\"); (2) agent self-corrections that reveal a convention (a tool "
    "error then a fix, a write then a revision, a failing test then a code fix). Ignore one-off task "
    "instructions. For each: a one-sentence statement, the source, short evidence quoted from the text, the "
    "trigger (file_write, bash, mcp or any), scope glob patterns, and your confidence 0.0-1.0. "
    "Answer only with JSON: {\"conventions\": [...]}; an empty list when there are none."
)
VALIDATE_SYSTEM = (
    "You turn one convention into a Sentinel rule unless an active rule already covers it. A rule has an id "
    "(kebab-case), a trigger (file_write, bash, mcp, any), a severity (start with warn), scope and exclude glob "
    "patterns, and a prompt that shows a judge the action with template variables ({{action_summary}}, "
    "{{file_path}}, {{content_snippet}}, {{command}}, {{mcp_tool}}, {{mcp_arguments}}), states the rule, and ends "
    "with: Respond ONLY with JSON: {\"reason\": \"one line\", \"violation\": true/false, \"confidence\": 0.0-1.0}. "
    "Answer only with JSON: {\"redundant\": bool, \"reason\": \"...\", \"rule\": {...}}."
)
_SLUG = re.compile(r"[^a-z0-9]+")


class Convention(TypedDict):
    """One convention extraction found (the CONVENTION schema, checked)."""
    statement: str
    source: str
    evidence: str
    trigger: str
    scope: list[str]
    confidence: float


def _conventions(answer: JSONObject) -> list[Convention]:
    items = answer.get("conventions")
    out: list[Convention] = []
    for item in items if isinstance(items, list) else []:
        try:
            out.append(_convention(check({"schema": CONVENTION}, item)))
        except ValueError:
            continue
    return out


def _convention(checked: JSONObject) -> Convention:
    scope, confidence = checked["scope"], checked["confidence"]
    return {"statement": str(checked["statement"]), "source": str(checked["source"]),
            "evidence": str(checked["evidence"]), "trigger": str(checked["trigger"]),
            "scope": [str(s) for s in scope] if isinstance(scope, list) else [],
            "confidence": float(confidence) if isinstance(confidence, (int, float)) else 0.0}


class Scribe:
    def __init__(self, cfg: GateConfig, paths: GatePaths, rules: list[Rule], judges: JudgeSource):
        self.cfg = cfg
        self.s = cfg.scribe
        self.paths = paths
        self.rules = rules
        self.judges = judges
        self.store = DraftStore(paths)

    def _call(self, step: str, system: str, user: str, schema: JSONObject) -> JSONObject:
        extraction = step == "extraction"
        timeout_ms = self.s["extraction_timeout_ms"] if extraction else self.s["synthesis_timeout_ms"]
        num_predict = self.s["extraction_num_predict"] if extraction else self.s["synthesis_num_predict"]
        request = Request(system, user, schema, self.cfg.scribe_model(step),
                          timeout_s=timeout_ms / 1000, temperature=self.s["temperature"],
                          max_tokens=num_predict, think=bool(self.s["think"]) and not extraction)
        return check(schema, self.judges.get(self.cfg.backend).complete(request))

    def extract(self, text: str, source_hint: str) -> list[Convention]:
        guidance = f"\n\nPRIORITY GUIDANCE: {self.s['guidance']}" if self.s.get("guidance") else ""
        user = f"SOURCE: {source_hint}{guidance}\n\nTEXT:\n{text}"
        return _conventions(self._call("extraction", EXTRACT_SYSTEM, user, EXTRACTION))

    def _active(self) -> str:
        lines = [f"- {r.id} ({r.trigger}, {', '.join(r.scope) or 'any scope'}): {r.prompt.strip()[:200]}"
                 for r in self.rules]
        return "\n".join(lines) or "(none)"

    def draft(self, convention: Convention, provenance: dict[str, str]) -> str | None:
        """Validate one convention; write its draft rule when it is new. Returns the draft id or None."""
        slug = _SLUG.sub("-", convention["statement"].lower()).strip("-")[:48] or "convention"
        active_ids = {r.id for r in self.rules}
        if self.store.blocked(slug, convention["statement"], active_ids):
            return None
        user = (f"CONVENTION: {convention['statement']}\nSOURCE: {convention['source']}\nEVIDENCE: "
                f"{convention['evidence']}\nSUGGESTED TRIGGER: {convention['trigger']}\nSUGGESTED SCOPE: "
                f"{', '.join(convention['scope']) or '(any)'}\n\nACTIVE RULES:\n{self._active()}")
        answer = self._call("synthesis", VALIDATE_SYSTEM, user, VALIDATION)
        if answer["redundant"]:
            return None
        proposed = answer["rule"]
        rule = dict(proposed) if isinstance(proposed, dict) else {}
        rule["id"] = _SLUG.sub("-", str(rule.get("id") or slug).lower()).strip("-") or slug
        if self.store.blocked(str(rule["id"]), convention["statement"], active_ids):
            return None
        from sentinel.errors import ConfigError
        from sentinel.policy.gate.schema import validate

        try:
            validate({k: v for k, v in rule.items() if v not in (None, "", [])}, Path(f"{rule['id']}.yaml"))
        except ConfigError:
            return None
        meta: JSONObject = {"source": convention["source"], "statement": convention["statement"],
                "evidence": convention["evidence"], "confidence": convention["confidence"], **provenance}
        self.store.write(rule, meta)
        return str(rule["id"])

    def _pipeline(self, text: str, source_hint: str, threshold: float, provenance: dict[str, str]) -> list[str]:
        created = []
        for conv in self.extract(text, source_hint):
            if conv["confidence"] < threshold:
                continue
            self.store.observe({**provenance, **conv})
            draft_id = self.draft(conv, provenance)
            if draft_id:
                created.append(draft_id)
        return created

    def _locked(self, session_id: str) -> ContextManager[bool]:
        gpu = self.cfg.backend in GPU_BACKENDS
        return priority_lock(self.paths.lock_file(session_id) if gpu else None, "scribe", beneath=self.paths.root)

    def reflect(self, session_id: str, transcript_path: str | None) -> list[str]:
        """On Stop: the session's compacted transcript through extraction and validation."""
        if not self.s["enabled"]:
            return []
        entries, _ = tx.read_entries(transcript_path)
        text = tx.budget(tx.compact(entries), self.s["transcript_budget_chars"])
        if not text.strip():
            return []
        threshold = self.s["thresholds"]["extraction_confidence"]
        try:
            with self._locked(session_id):
                return self._pipeline(text, "agent session transcript", threshold, {"session_id": session_id})
        except (LockTimeout, JudgeError, ValueError):
            return []

    def learn(self, root: str) -> list[str]:
        """Documentation files matching scribe.doc_globs through the same pipeline."""
        if not self.s["sources"]["documentation"]:
            return []
        threshold = self.s["thresholds"]["draft_confidence"]
        created = []
        for path in doc_files(root, self.s["doc_globs"]):
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read(self.s["transcript_budget_chars"])
            rel = os.path.relpath(path, root)
            with self._locked("scribe-learn"):
                created += self._pipeline(text, f"documentation file {rel}", threshold,
                                          {"session_id": "learn", "file": rel})
        return created


def doc_files(root: str, patterns: list[str]) -> list[str]:
    """The repository's files the patterns match, each a regular file inside it once links are followed: the
    patterns are the repository's, and what is read goes to a judge (`../`, a link to ~/.ssh: not read)."""
    from wcmatch import glob

    flags = glob.GLOBSTAR | glob.BRACE | glob.NODIR
    found = glob.glob(patterns, root_dir=root, flags=flags, exclude=[".git/**", "node_modules/**", ".sentinel/**"])
    real_root = os.path.realpath(root)
    inside = []
    for p in sorted(set(found)):
        real = os.path.realpath(os.path.join(root, p))
        if real.startswith(real_root + os.sep) and os.path.isfile(real):
            inside.append(os.path.join(root, p))
    return inside
