"""The curator: durable learnings of a session, distilled into `memory/<scope>/MEMORY.md`.

    curate(scope_dir, ["Decision: ...", "Error → fix: ..."]) -> Curated(added, flagged)

MEMORY.md is one bullet a learning under a short header, newest last, under MAX_LINES (the oldest
bullets go first). A learning already there (ignoring case, spacing and punctuation) is not added
again; session state (plans, checkpoints, statuses, progress) never is; and every learning passes
the injection scanner, like any memory bound for a system prompt: a flagged one is left out and
reported. The file is the agent's to edit; the curator keeps whatever bullets it finds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sentinel import paths
from sentinel.memory.scan import scan

MEMORY_MD = "MEMORY.md"
MAX_LINES = 200
HEADER = ["# MEMORY", "", "Durable learnings from past sessions (curated; one bullet a learning, edit freely).", ""]
# Session state belongs in session-live.md, never here.
SESSION_STATE = re.compile(r"\bCP-\d+\b|\b\d+ of \d+ tasks\b|\b(in-progress|pending)\b|^\s*\|.*\|\s*$"
                           r"|\bsession-live\b|\bcheckpoint\b", re.IGNORECASE)


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
        if finding := scan(text):
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
