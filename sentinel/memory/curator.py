"""The curator: durable learnings of a session, distilled into `memory/<scope>/MEMORY.md`.

    curate(scope_dir, ["Decision: ...", "Error → fix: ..."]) -> Curated(added, flagged)
    conventions_request(messages) -> messages    the curator model's call: conventions and patterns of a session
    conventions(reply) -> ["Convention: ...", "Pattern: ..."]

MEMORY.md is one bullet a learning under a short header, newest last, under MAX_LINES (the oldest
bullets go first). A learning already there (ignoring case, spacing and punctuation) is not added
again; session state (plans, checkpoints, statuses, progress) never is; and every learning passes
the injection scanner in strict mode (a curator model read tool results nobody reviewed): a flagged
one is left out and reported. The file is the agent's to edit; the curator keeps whatever bullets it
finds. Whatever it holds enters a prompt only fenced as data (sentinel/agents/selfstate.py,
sentinel/memory/fence.py), never as instructions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sentinel import paths
from sentinel.jsontypes import JSONObject
from sentinel.memory.scan import scan
from sentinel.models.base import call_parts

MEMORY_MD = "MEMORY.md"
MAX_LINES = 200
HEADER = ["# MEMORY", "", "Durable learnings from past sessions (curated; one bullet a learning, edit freely).", ""]
# Session state belongs in session-live.md, never here.
SESSION_STATE = re.compile(r"\bCP-\d+\b|\b\d+ of \d+ tasks\b|\b(in-progress|pending)\b|^\s*\|.*\|\s*$"
                           r"|\bsession-live\b|\bcheckpoint\b", re.IGNORECASE)


CONVENTIONS_MAX = 5
CONVENTION_CHARS = 200
TRANSCRIPT_CHARS = 3000
CURATOR_PROMPT = """You are the curator of an agent's memory. Read the session below and write the durable \
conventions and patterns worth knowing in future tasks: how files are named and laid out, formats the \
operator wants, commands and tools that worked, mistakes to avoid. Not the task itself, not one-off facts, \
not progress or status. Write at most 5 lines, each starting with "- Convention: " or "- Pattern: ", each \
under 160 characters. If nothing is durable, write exactly: - none"""
_LABEL = re.compile(r"^(?:[-*•]|\d+[.)])\s*(?:\*\*)?(convention|pattern)s?(?:\*\*)?\s*:\s*(?:\*\*)?\s*", re.IGNORECASE)


@dataclass
class Curated:
    added: list[str] = field(default_factory=list)
    flagged: list[tuple[str, str]] = field(default_factory=list)  # (learning, finding)


def memory_md(scope_dir: Path) -> Path:
    return scope_dir / MEMORY_MD


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def read_bullets(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    return [line[2:].strip() for line in text.splitlines() if line.startswith("- ") and line[2:].strip()]


def curate(scope_dir: Path, learnings: list[str]) -> Curated:
    path = memory_md(scope_dir)
    bullets = read_bullets(path)
    seen = {_key(b) for b in bullets}
    out = Curated()
    for learning in learnings:
        text = " ".join(learning.split())
        if not text or _key(text) in seen or SESSION_STATE.search(text):
            continue
        if finding := scan(text, strict=True):
            out.flagged.append((text, str(finding)))
            continue
        seen.add(_key(text))
        bullets.append(text)
        out.added.append(text)
    if out.added:
        bullets = bullets[-(MAX_LINES - len(HEADER) - 1):]
        scope_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        paths.write_atomic(path, "\n".join([*HEADER, *(f"- {b}" for b in bullets)]) + "\n", 0o644)
    return out


def transcript(messages: list[JSONObject], limit: int = TRANSCRIPT_CHARS) -> str:
    """The session as the curator model reads it: requests, tool calls and results, answers; each cut short,
    the oldest dropped first past `limit` (the system prompt is left out: it is the agent, not the session)."""
    lines = []
    for msg in messages:
        role, text = msg.get("role"), " ".join(str(msg.get("content") or "").split())
        if role == "user":
            lines.append(f"REQUEST: {text[:600]}")
        elif role == "assistant":
            for name, args in call_parts(msg):
                lines.append(f"CALL {name} {args[:300]}")
            if text and not msg.get("tool_calls"):
                lines.append(f"ANSWER: {text[:400]}")
        elif role == "tool":
            lines.append(f"RESULT: {text[:300]}")
    out, size = [], 0
    for line in reversed(lines):
        size += len(line) + 1
        if size > limit:
            break
        out.append(line)
    return "\n".join(reversed(out))


def conventions_request(messages: list[JSONObject]) -> list[JSONObject]:
    return [{"role": "system", "content": CURATOR_PROMPT},
            {"role": "user", "content": f"The session:\n\n{transcript(messages)}"}]


def conventions(reply: str) -> list[str]:
    """The labelled lines of the curator model's reply, as learnings; anything else in it is dropped."""
    out = []
    for line in reply.splitlines():
        found = _LABEL.match(line.strip())
        if not found:
            continue
        text = " ".join(line.strip()[found.end():].replace("**", "").split())
        if text and text.lower().rstrip(".") != "none" and len(text) <= CONVENTION_CHARS:
            out.append(f"{found.group(1).capitalize()}: {text}")
    return out[:CONVENTIONS_MAX]
