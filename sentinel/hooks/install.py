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
# Sentinel rule gate (docs/gate.md). Every key is optional.
# The judge: the embedded local model (no server, no key; `pip install 'sentinel-harness[local]'`,
# which Sentinel's installer does). `sentinel hook status` asks it a test question.
backend: local
model: qwen2.5-coder-1.5b
timeout_ms: 30000           # a 1.5B model on a laptop CPU takes seconds per verdict
# Other judges: ollama (backends.ollama.url, e.g. model: gemma3:4b after `ollama pull gemma3:4b`),
# claude (model: haiku), copilot (model: gpt-5-mini), or a named OpenAI-compatible backend.
# backends:
#   ollama: {url: http://localhost:11434}
# confidence_threshold: 0.7
# max_parallel: 4
# fail_open: true           # a judge that fails skips its rule (the agent and `rules stats` are told)
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
    return found or f"{sys.executable} -I -m sentinel"


def scaffold(root: Path) -> list[str]:
    base = root / ".claude" / "sentinel"
    (base / "rules").mkdir(parents=True, exist_ok=True)
    written = []
    config = base / "config.yaml"
    if not config.exists():
        config.write_text(STARTER_CONFIG)
        written.append(str(config))
    return written


def judge_note(root: Path) -> str:
    """One line after install: the judge the repository's rules use, and what to install if it is missing."""
    from importlib.util import find_spec

    from sentinel.policy.gate.loader import load_repo

    bundle = load_repo(str(root), use_cache=False)
    if bundle.config_error:
        return f"to do: {bundle.config_error}"
    backend, model = bundle.config.backend, bundle.config.model_for(bundle.config.backend)
    judge = f"{backend}/{model}"
    if backend == "local" and find_spec("llama_cpp") is None:
        return f"to do: the judge {judge} needs llama.cpp: pip install 'sentinel-harness[local]'"
    if backend == "ollama":
        return (f"judge: {judge}: needs Ollama running with the model (`ollama pull {model}`);"
                " `sentinel hook status` checks that it answers")
    return f"judge: {judge} (`sentinel hook status` checks that it answers)"


def ask_note(agent: str) -> str:
    """One line after install: how long a person has to decide a call an `ask` rule holds (docs/hooks.md)."""
    from sentinel.hooks import agents, common

    adapter = agents.get(agent)
    timeout = getattr(adapter, "HOOK_TIMEOUT_S", 30)
    fixed = " (the client's own, fixed)" if agent == "cline" else " (UNVERIFIED)" if agent == "windsurf" else ""
    return (f"asks: a person has {common.ask_window(timeout)} s to decide a call an `ask` rule holds; "
            f"{agent}'s pre-tool hook timeout is {timeout} s{fixed}; unanswered, the call is denied")


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
