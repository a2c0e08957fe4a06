"""An agent's earlier souls, kept as files: `agents/<name>.soul.history/<n>.md`, version 1 the oldest.

    keep(profile, home)               -> n    the soul as it is now becomes version n (before it is replaced)
    versions(name, home)              -> [Version]
    restore(profile, home, n=None)    -> (restored n, kept n)   the previous soul (or version n) is the soul
                                                                again; the one it replaces is kept too
    problem(text)                     -> str | None             why a text is no soul (error output, a stub)
    error_text(text)                  -> bool                   it starts like an error message

The files are the truth: a version is a plain Markdown file the operator can read, and restoring one writes
`agents/<name>.soul.md` like `edit_soul` does. The first edit of an agent still on its starter soul keeps the
starter soul as version 1, so the agent can always go back to where it began.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sentinel import paths
from sentinel.agents import profile as profiles
from sentinel.errors import NotFound, UsageError

SOUL_MIN = 40  # characters: a soul shorter than this is a stub or a mistake, never a persona
# What a tool or a shell prints when something failed: a soul that starts like this is an error message.
_ERROR_TEXT = re.compile(r"^\s*(?:error\b|traceback\b|exception\b|fatal\b|warning:|permission denied|"
                         r"no such file|command not found|bash:|sh:|\[errno|denied\b|usage:)", re.IGNORECASE)
_ERROR_ANYWHERE = re.compile(r"Traceback \(most recent call last\)|\[Errno \d+\]")


@dataclass(frozen=True)
class Version:
    n: int
    path: Path
    mtime: float
    chars: int
    first_line: str

    def public(self) -> dict[str, object]:
        return {"version": self.n, "file": str(self.path), "saved_at": self.mtime, "chars": self.chars,
                "first_line": self.first_line}


def history_dir(name: str, home: Path | None = None) -> Path:
    return profiles.agents_dir(home) / f"{name}.soul.history"


def problem(text: str) -> str | None:
    """Why `text` is not a soul (Markdown prose about who the agent is), said of "the new soul", or None."""
    stripped = text.strip()
    if _ERROR_TEXT.match(stripped) or _ERROR_ANYWHERE.search(stripped):
        return f"looks like error output ({_first_line(stripped)[:60]!r}), not a soul"
    if len(stripped) < SOUL_MIN:
        return f"is {len(stripped)} characters long; a soul is Markdown prose of at least {SOUL_MIN}"
    if stripped[0] in "{[<":
        return "looks like data or markup (JSON, XML), not Markdown prose"
    words = re.findall(r"[^\W\d_]{2,}", stripped)
    letters = sum(len(w) for w in words)
    if len(words) < 6 or letters < 0.5 * len(re.sub(r"\s", "", stripped)):
        return "is not prose: too few words for a soul"
    return None


def error_text(text: str) -> bool:
    """True when the text starts like an error message (what a poisoned soul looks like)."""
    return bool(_ERROR_TEXT.match(text))


def versions(name: str, home: Path | None = None) -> list[Version]:
    folder = history_dir(name, home)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob("*.md"):
        if path.stem.isdigit():
            text = path.read_text(encoding="utf-8", errors="replace")
            found.append(Version(int(path.stem), path, path.stat().st_mtime, len(text), _first_line(text)))
    return sorted(found, key=lambda v: v.n)


def keep(profile: profiles.AgentProfile, home: Path | None = None) -> int:
    """Save the soul as it is now as the next version; its number."""
    folder = history_dir(profile.name, home)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    kept = versions(profile.name, home)
    n = kept[-1].n + 1 if kept else 1
    paths.write_atomic(folder / f"{n}.md", profiles.soul_text(profile, home), 0o600)
    return n


def write(profile: profiles.AgentProfile, text: str, home: Path | None = None) -> int:
    """Replace the soul with `text`, keeping the current one first; the kept version's number."""
    kept = keep(profile, home)
    target = profiles.soul_path(profile.name, home)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths.write_atomic(target, text.rstrip() + "\n", 0o600)
    return kept


def restore(profile: profiles.AgentProfile, home: Path | None = None, n: int | None = None) -> tuple[int, int]:
    """Make version `n` (default: the newest kept, the soul before the last change) the soul again."""
    kept = versions(profile.name, home)
    if not kept:
        raise NotFound(f"agent {profile.name} has no earlier souls (agents/{profile.name}.soul.history/ is empty)")
    chosen = kept[-1] if n is None else next((v for v in kept if v.n == n), None)
    if chosen is None:
        raise UsageError(f"--version: agent {profile.name} has no soul version {n} "
                         f"(kept: {', '.join(str(v.n) for v in kept)})")
    return chosen.n, write(profile, chosen.path.read_text(encoding="utf-8", errors="replace"), home)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
