"""JSONL telemetry: one line per evaluation (the fields docs/gate.md lists), and `rules stats` over it.

    {"ts", "rule_id", "trigger", "target", "violation", "confidence", "reason",
     "elapsed_ms", "model", "backend"}  (+ "severity", "kind", and "error" when the call failed,
                                          with "unchecked": true when fail_open let the action through)
"""

from __future__ import annotations

import json
import os
import time
from typing import Iterable

from sentinel.jsontypes import JSON, JSONObject
from sentinel.pathwalk import open_beneath


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def record(rule_id: str, trigger: str, target: str, *, violation: bool | None, confidence: float | None,
           reason: str, elapsed_ms: float, model: str, backend: str, **extra: JSON) -> JSONObject:
    line: JSONObject = {
            "ts": now_iso(), "rule_id": rule_id, "trigger": trigger, "target": target, "violation": violation,
            "confidence": confidence, "reason": reason, "elapsed_ms": round(elapsed_ms), "model": model,
            "backend": backend}
    line.update({k: v for k, v in extra.items() if v is not None})
    return line


def append(path: str | None, lines: Iterable[JSONObject], beneath: str | None = None) -> None:
    """Append lines in one write (O_APPEND keeps concurrent hook processes from interleaving). `beneath`: the
    repository the log lies in, where no link is followed (sentinel/pathwalk.py `open_beneath`)."""
    if not path:
        return
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    if not text:
        return
    try:
        fd = open_beneath(beneath, path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            # a target or reason quotes the payload, which may hold a lone surrogate: escaped, still valid JSON
            os.write(fd, text.encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
    except OSError:
        pass  # telemetry never breaks a decision


def parse_jsonl(lines: Iterable[str]) -> list[JSONObject]:
    """The JSON objects among lines; torn or foreign lines are skipped."""
    out = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


def read_jsonl(path: str | None) -> list[JSONObject]:
    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as fh:
        return parse_jsonl(fh)


def read(path: str | None) -> list[JSONObject]:
    return [item for item in read_jsonl(path) if item.get("rule_id")]


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (p50 of [10, 20, 30, 40] is 20)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return float(ordered[int(rank) - 1])


def stats(lines: list[JSONObject], threshold: float = 0.7) -> list[JSONObject]:
    """Per rule: evaluations, violations (at or above `threshold`: what blocked or warned), low-confidence
    answers (a violation below it: let through, worth a look when tuning), errors, actions let through
    unchecked (a failed judge under fail_open) with the last error, p50 and p95 latency."""
    by_rule: dict[str, list[JSONObject]] = {}
    for line in lines:
        by_rule.setdefault(str(line["rule_id"]), []).append(line)
    out: list[JSONObject] = []
    for rule_id in sorted(by_rule):
        items = by_rule[rule_id]
        latencies = [_number(i.get("elapsed_ms")) for i in items if not i.get("static")]
        out.append({"rule_id": rule_id, "evaluations": len(items),
                    "violations": sum(1 for i in items if i.get("violation") is True and not _low(i, threshold)),
                    "low_confidence": sum(1 for i in items if i.get("violation") is True and _low(i, threshold)),
                    "errors": sum(1 for i in items if i.get("error")),
                    "unchecked": sum(1 for i in items if i.get("unchecked")),
                    "last_error": next((str(i["error"]) for i in reversed(items) if i.get("error")), None),
                    "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95)})
    return out


def _number(value: JSON) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _low(line: JSONObject, threshold: float) -> bool:
    confidence = line.get("confidence")
    return isinstance(confidence, (int, float)) and confidence < threshold
