"""Draft rules proposed by the scribe, and their review: list, promote, dismiss.

    <config>/drafts/<id>.yaml          a draft: the rule's fields plus a `draft:` block of provenance
    <state>/scribe/observations.jsonl  every convention the scribe extracted, with provenance
    <state>/scribe/dismissed.jsonl     dismissed conventions: never proposed again

Promoting moves a draft (without its `draft:` block) into the rules directory, where
it takes part in the next evaluation; dismissing deletes it and blocklists it.
"""

from __future__ import annotations

import builtins
import json
import os
import re
import time
from pathlib import Path
from typing import Mapping, TypedDict

from sentinel.errors import ConfigError, NotFound, UsageError
from sentinel.jsontypes import JSONObject
from sentinel.pathwalk import open_beneath, replace_beneath
from sentinel.policy.gate import telemetry
from sentinel.policy.gate.config import GatePaths

class DraftRow(TypedDict):
    """One draft as `sentinel rules drafts` lists it."""
    id: str
    trigger: str
    severity: str
    scope: list[str]
    source: str
    evidence: str
    statement: str
    age_days: float
    path: str


_WORDS = re.compile(r"[a-z0-9]+")


def normalize(statement: str) -> str:
    return " ".join(_WORDS.findall(statement.lower()))


def _jsonl(path: str) -> list[JSONObject]:
    from sentinel.policy.gate.telemetry import read_jsonl

    return read_jsonl(path)


def _append(path: str, item: Mapping[str, object], beneath: str | None) -> None:
    """One line appended, following no link in the repository (sentinel/pathwalk.py `open_beneath`)."""
    fd = open_beneath(beneath, path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(item, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace"))
    finally:
        os.close(fd)


class DraftStore:
    def __init__(self, paths: GatePaths):
        self.paths = paths

    @property
    def observations_file(self) -> str:
        return os.path.join(self.paths.scribe_dir, "observations.jsonl")

    @property
    def dismissed_file(self) -> str:
        return os.path.join(self.paths.scribe_dir, "dismissed.jsonl")

    def observe(self, item: Mapping[str, object]) -> None:
        _append(self.observations_file, {"ts": telemetry.now_iso(), **item}, self.paths.root)

    def dismissed(self) -> builtins.list[JSONObject]:
        return _jsonl(self.dismissed_file)

    def _path(self, draft_id: str) -> str:
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", draft_id):
            raise NotFound(f"no draft {draft_id!r}")
        return os.path.join(self.paths.drafts_dir, f"{draft_id}.yaml")

    def _read(self, path: str) -> JSONObject:
        from sentinel.config import read_yaml

        data = read_yaml(Path(path))
        if not isinstance(data, dict):
            raise ConfigError(path, "a draft holds one rule (a mapping)")
        return data

    def list(self) -> list[DraftRow]:
        out: list[DraftRow] = []
        if not os.path.isdir(self.paths.drafts_dir):
            return out
        for name in sorted(os.listdir(self.paths.drafts_dir)):
            if not name.endswith((".yaml", ".yml")):
                continue
            path = os.path.join(self.paths.drafts_dir, name)
            try:
                data = self._read(path)
            except ConfigError:
                continue
            draft = data.get("draft")
            meta = draft if isinstance(draft, dict) else {}
            age = (time.time() - os.path.getmtime(path)) / 86400
            scope = data.get("scope") or []
            out.append({"id": str(data.get("id") or Path(name).stem), "trigger": str(data.get("trigger", "any")),
                        "severity": str(data.get("severity", "block")),
                        "scope": [str(s) for s in scope] if isinstance(scope, list) else [str(scope)],
                        "source": str(meta.get("source", "unknown")), "evidence": str(meta.get("evidence", "")),
                        "statement": str(meta.get("statement", "")), "age_days": round(age, 1), "path": path})
        return out

    def exists(self, draft_id: str) -> bool:
        return os.path.exists(self._path(draft_id))

    def write(self, rule: JSONObject, meta: JSONObject) -> str:
        import yaml

        path = self._path(str(rule["id"]))
        kept = ("id", "trigger", "severity", "scope", "exclude", "prompt")
        body: JSONObject = {k: rule[k] for k in kept if rule.get(k)}
        body["draft"] = {"created": telemetry.now_iso(), **meta}
        text = yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
        replace_beneath(self.paths.root, path, text.encode("utf-8", "backslashreplace"))  # no link followed in the repository
        return path

    def promote(self, draft_id: str) -> str:
        from sentinel.policy.gate.schema import validate

        import yaml

        path = self._path(draft_id)
        if not os.path.exists(path):
            raise NotFound(f"no draft {draft_id!r} in {self.paths.drafts_dir}")
        data = self._read(path)
        data.pop("draft", None)
        target = os.path.join(self.paths.rules_dir, f"{draft_id}.yaml")
        validate(data, Path(target))
        if os.path.exists(target):
            raise UsageError(f"{target} already exists; remove it or dismiss the draft")
        os.makedirs(self.paths.rules_dir, exist_ok=True)
        with open(target, "w", encoding="utf-8") as fh:
            yaml.safe_dump(data, fh, sort_keys=False, allow_unicode=True)
        os.unlink(path)
        return target

    def dismiss(self, draft_id: str) -> None:
        path = self._path(draft_id)
        if not os.path.exists(path):
            raise NotFound(f"no draft {draft_id!r} in {self.paths.drafts_dir}")
        meta = self._read(path).get("draft") or {}
        os.unlink(path)
        _append(self.dismissed_file, {"ts": telemetry.now_iso(), "id": draft_id,
                                      "statement": meta.get("statement", "") if isinstance(meta, dict) else ""},
                self.paths.root)

    def blocked(self, rule_id: str, statement: str, active_ids: set[str]) -> str | None:
        """Structural dedup: why this convention must not become a draft, or None."""
        norm = normalize(statement)
        for item in self.dismissed():
            if item.get("id") == rule_id or (norm and normalize(str(item.get("statement", ""))) == norm):
                return "dismissed before"
        if rule_id in active_ids:
            return "a rule with this id exists"
        for draft in self.list():
            if draft["id"] == rule_id or (norm and normalize(draft["statement"]) == norm):
                return "already drafted"
        return None

    def fresh(self, max_age_days: float) -> builtins.list[DraftRow]:
        """Drafts young enough to announce."""
        return [d for d in self.list() if d["age_days"] <= max_age_days]
