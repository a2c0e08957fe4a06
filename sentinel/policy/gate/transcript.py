"""Agent transcripts: reading them incrementally and compacting them into short events.

Understands Claude Code's JSONL transcript (one entry per line: user / assistant
messages with text, tool_use and tool_result blocks) and, as a fallback, a JSON
document with a `messages` list (Gemini CLI). Compaction keeps what a summary or the
scribe needs (what the user said, what the agent did, which tools failed) and drops
meta entries, meta-tools and raw payloads.
"""

from __future__ import annotations

import json
import os
from typing import Iterable, Iterator

from sentinel.jsontypes import JSON, JSONObject

META_TOOLS = frozenset({"TodoWrite", "TodoRead", "ExitPlanMode", "Task", "TaskOutput", "KillShell", "BashOutput",
                        "ListMcpResourcesTool", "ReadMcpResourceTool", "SlashCommand", "Skill"})
TARGET_KEYS = ("file_path", "path", "command", "pattern", "url", "query", "notebook_path")
TAIL_BYTES = 256 * 1024


def read_entries(path: str | None, start: int = 0) -> tuple[list[JSONObject], int]:
    """Entries from index `start` on, and the index to continue from next time."""
    if not path or not os.path.exists(path):
        return [], start
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    entries = _parse(text)
    return entries[start:], len(entries)


def _parse(text: str) -> list[JSONObject]:
    stripped = text.lstrip()
    if stripped.startswith("{") and "\n{" not in stripped.rstrip():
        try:
            doc = json.loads(stripped)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
            return [m for m in doc["messages"] if isinstance(m, dict)]
    from sentinel.policy.gate.telemetry import parse_jsonl

    return parse_jsonl(text.splitlines())


def _blocks(entry: JSONObject) -> tuple[str, list[JSON]]:
    message = entry.get("message")
    msg = message if isinstance(message, dict) else entry
    role = str(msg.get("role") or entry.get("type") or "")
    content = msg.get("content")
    if isinstance(content, str):
        return role, [{"type": "text", "text": content}]
    if isinstance(content, list):
        return role, content
    parts = msg.get("parts")
    if isinstance(parts, list):  # Gemini-style
        return role, [{"type": "text", "text": p.get("text", "")} for p in parts if isinstance(p, dict)]
    return role, []


def _target(data: JSON) -> str:
    if isinstance(data, dict):
        for key in TARGET_KEYS:
            value = data.get(key)
            if isinstance(value, str):
                return value[:160]
    return ""


def _result_text(block: JSONObject) -> str:
    content = block.get("content")
    if isinstance(content, list):
        content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content or "").strip().splitlines()[0][:160] if content else ""


def compact(entries: list[JSONObject]) -> list[str]:
    """One short line per meaningful event."""
    events: list[str] = []
    for entry in entries:
        if entry.get("isMeta") or entry.get("type") in ("summary", "system", "file-history-snapshot"):
            continue
        role, blocks = _blocks(entry)
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and str(block.get("text", "")).strip():
                limit = 500 if role == "user" else 300
                who = "USER" if role == "user" else "AGENT"
                events.append(f"{who}: {' '.join(str(block['text']).split())[:limit]}")
            elif kind == "tool_use" and block.get("name") not in META_TOOLS:
                events.append(f"TOOL {block.get('name')}: {_target(block.get('input'))}".rstrip(": "))
            elif kind == "tool_result" and block.get("is_error"):
                events.append(f"TOOL ERROR: {_result_text(block)}")
    return events


def budget(events: list[str], max_chars: int) -> str:
    """The newest events that fit in max_chars (older ones are dropped first)."""
    kept: list[str] = []
    used = 0
    for line in reversed(events):
        if used + len(line) + 1 > max_chars:
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join(reversed(kept))


def user_requests(path: str | None) -> tuple[str | None, str | None]:
    """(first, latest) typed user request of the transcript: the session's mission and the request
    being served now (the alignment rule kind). Only the head and the tail of the file are read."""
    if not path or not os.path.exists(path):
        return None, None
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(0)
        head = fh.read(TAIL_BYTES).decode("utf-8", errors="replace")
        fh.seek(max(0, size - TAIL_BYTES))
        tail = fh.read().decode("utf-8", errors="replace")
    if size > TAIL_BYTES:  # a torn last line of the head is skipped by the parser
        first = next(_typed_requests(_parse(head)), None)
    else:
        first = next(_typed_requests(_parse(tail)), None)
    last = next(_typed_requests(reversed(_parse(tail))), None)
    return first, last or first


def last_user_prompt(path: str | None) -> str | None:
    """The user's latest typed message."""
    return user_requests(path)[1]


def _typed_requests(entries: Iterable[JSONObject]) -> Iterator[str]:
    for entry in entries:
        if entry.get("isMeta"):
            continue
        role, blocks = _blocks(entry)
        if role != "user":
            continue
        texts = [str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        joined = " ".join(t for t in texts if t.strip()).strip()
        if joined and not joined.startswith("<"):
            yield joined[:2000]
