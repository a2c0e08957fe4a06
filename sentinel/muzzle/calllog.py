"""Muzzle's call log: one JSON line per model call, appended with a single write (O_APPEND).

Fields: time, agent, run, model, upstream, stream, status, decision, latency_ms,
ttft_ms, tokens_in, tokens_out, usage_estimated, redactions_out, redactions_in
(secrets the model echoed), redaction_kinds, tool_calls, error. Every text in
it has passed the redactor, so the log never holds a raw secret.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from sentinel.jsontypes import JSONObject

_ARGS_MAX = 2000


@dataclass
class CallRecord:
    started: float = field(default_factory=time.perf_counter)
    agent: str | None = None
    run: str | None = None
    model: str | None = None
    upstream: str | None = None
    stream: bool = False
    status: int = 200
    decision: str = "allowed"
    ttft_ms: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    usage_estimated: bool = False
    redactions_out: int = 0
    redactions_in: int = 0
    redaction_kinds: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None

    def mark_first_token(self) -> None:
        if self.ttft_ms is None:
            self.ttft_ms = round((time.perf_counter() - self.started) * 1000, 3)

    def line(self) -> JSONObject:
        data: JSONObject = asdict(self)
        del data["started"]
        data["latency_ms"] = round((time.perf_counter() - self.started) * 1000, 3)
        data["tool_calls"] = [{**c, "arguments": c.get("arguments", "")[:_ARGS_MAX]} for c in self.tool_calls]
        return {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **data}


class CallLog:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def write(self, record: CallRecord) -> JSONObject:
        line = record.line()
        os.write(self._fd, (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
        return line

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read(path: Path, *, run: str | None = None, last: int | None = None) -> Iterator[JSONObject]:
    """Lines of a call log, optionally of one run and only the last N."""
    if not path.exists():
        return iter(())
    rows: list[JSONObject] = []
    with path.open() as fh:
        for raw in fh:
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            if isinstance(row, dict) and (run is None or row.get("run") == run):
                rows.append(row)
    return iter(rows[-last:] if last else rows)
