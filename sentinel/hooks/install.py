"""`sentinel hook install AGENT`: the agent's hook config plus a starter .claude/sentinel/ in the repo.

Installing twice replaces Sentinel's own entries and keeps everyone else's hooks.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from sentinel.errors import UsageError

STARTER_CONFIG = """\
# Sentinel rule gate (docs/gate.md). Every key is optional; defaults shown.
# backend: ollama            # ollama | claude | copilot | local | a named OpenAI-compatible backend
# model: gemma3:4b
# backends:
#   ollama: {url: http://localhost:11434}
#   claude: {model: haiku}
#   copilot: {model: gpt-5-mini}
# timeout_ms: 5000
# confidence_threshold: 0.7
# max_parallel: 4
# ollama_concurrency: 1
# fail_open: true
# content_max_chars: 800
# rules_dir: rules
"""


def hook_command() -> str:
    """What agents run on every tool call: this interpreter on the lean launcher (`launch.py`), which
    skips `site` and the editable install's path finder; `sentinel` itself elsewhere."""
    launcher = Path(__file__).with_name("launch.py")
    if launcher.is_file() and " " not in sys.executable + str(launcher):
        return f"{sys.executable} -I -S {launcher}"
    return default_command()


def default_command() -> str:
    beside = Path(sys.executable).with_name("sentinel")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("sentinel")
    return found or f"{sys.executable} -m sentinel"


def scaffold(root: Path) -> list[str]:
    base = root / ".claude" / "sentinel"
    (base / "rules").mkdir(parents=True, exist_ok=True)
    written = []
    config = base / "config.yaml"
    if not config.exists():
        config.write_text(STARTER_CONFIG)
        written.append(str(config))
    return written


def install_agent(agent: str, root: Path, command: str | None = None) -> list[str]:
    from sentinel.hooks import agents

    adapter = agents.get(agent)
    if adapter is None:
        raise UsageError(f"unknown agent {agent!r} (known: {', '.join(sorted(agents.AGENTS))})")
    if not root.is_dir():
        raise UsageError(f"--repo: {root} is not a directory")
    try:
        written = adapter.install(str(root), command or hook_command())
    except ValueError as exc:  # an existing hook config that is not a JSON object
        raise UsageError(str(exc).splitlines()[0]) from None
    return written + scaffold(root)
