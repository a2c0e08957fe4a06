"""Warnings held between an agent's pre-tool and post-tool hooks, for agents whose pre-tool answer
reaches only the user (Gemini CLI's BeforeTool ignores additionalContext; AfterTool hands it to the
model). One small file per session: `hold` appends a line, `take` reads and removes them all.
"""

from __future__ import annotations

import os

FILE = "held-warnings.txt"


def hold(session_dir: str, text: str, beneath: str | None = None) -> None:
    """`beneath`: the repository, where no link is followed (a link there would have the line written elsewhere)."""
    from sentinel.pathwalk import open_beneath

    try:
        fd = open_beneath(beneath, os.path.join(session_dir, FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (" ".join(text.split()) + "\n").encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
    except OSError:
        pass  # a lost warning never breaks a decision


def take(session_dir: str) -> list[str]:
    path = os.path.join(session_dir, FILE)
    taken = f"{path}.{os.getpid()}"
    try:
        os.rename(path, taken)  # atomic: a concurrent hook never delivers the same warning twice
    except OSError:
        return []
    try:
        with open(taken, encoding="utf-8", errors="replace") as fh:
            return [line.strip() for line in fh if line.strip()]
    finally:
        os.unlink(taken)
