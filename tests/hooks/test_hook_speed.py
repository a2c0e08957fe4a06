"""The hook imports only what a decision needs: no typer, rich, pydantic, yaml, wcmatch or openai on a warm
cache; no HTTP or thread machinery when no rule is in scope."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sentinel.policy.gate.loader import load_repo

HEAVY = ("typer", "rich", "pydantic", "yaml", "wcmatch", "openai", "httpx", "jsonschema")
PROBE = """
import io, json, sys
sys.stdin = io.StringIO(sys.argv[1])
from sentinel.cli import main
try:
    main(["hook", "claude-code", "pre-tool-use"])
except SystemExit as exc:
    code = exc.code
mods = [m for m in {heavy} if m in sys.modules]
print(json.dumps({{"code": code, "heavy": mods, "http": "http.client" in sys.modules,
                  "engine": "sentinel.policy.gate.engine" in sys.modules}}), file=sys.stderr)
"""


def probe(payload):
    code = PROBE.format(heavy=HEAVY)
    proc = subprocess.run([sys.executable, "-c", code, payload], capture_output=True, text=True, timeout=30)
    return json.loads(proc.stderr.strip().splitlines()[-1]), proc.stdout


def test_no_rule_in_scope_imports_nothing_heavy(repo):
    root = repo({"b": {"trigger": "file_write", "scope": ["src/core/billing/**"], "prompt": "x"}})
    load_repo(str(root))  # warm the cache
    payload = json.dumps({"cwd": str(root), "tool_name": "Write",
                          "tool_input": {"file_path": str(root / "README.md"), "content": ""}})
    info, out = probe(payload)
    assert info == {"code": 0, "heavy": [], "http": False, "engine": False} and out == ""


def test_rule_in_scope_uses_stdlib_http_only(repo, judge):
    j = judge({"": {"violation": True, "confidence": 1, "reason": "no"}})
    root = repo({"b": {"trigger": "file_write", "scope": ["src/**"], "prompt": "x"}},
                {"backends": {"ollama": {"url": j.url}}})
    load_repo(str(root))
    payload = json.dumps({"cwd": str(root), "tool_name": "Write",
                          "tool_input": {"file_path": str(root / "src/a.py"), "content": ""}})
    info, out = probe(payload)
    assert info["heavy"] == [] and info["http"] and "deny" in out


def test_installed_command_skips_site_and_still_decides(repo, judge):
    """The command `hook install` writes runs without `site` (no editable finder) and still blocks."""
    import os

    from sentinel.hooks.install import hook_command

    j = judge({"": {"violation": True, "confidence": 1, "reason": "no"}})
    root = repo({"b": {"trigger": "file_write", "scope": ["src/**"], "prompt": "x"}},
                {"backends": {"ollama": {"url": j.url}}})
    argv = hook_command().split()
    assert argv[1:3] == ["-I", "-S"]
    payload = json.dumps({"cwd": str(root), "tool_name": "Write",
                          "tool_input": {"file_path": str(root / "src/a.py"), "content": ""}})
    env = {k: v for k, v in os.environ.items() if k != "SENTINEL_GATE_JUDGE"}
    for _ in range(2):  # cold (rules cache built: yaml, pydantic from site-packages), then warm
        proc = subprocess.run(argv + ["hook", "claude-code", "pre-tool-use"], input=payload, capture_output=True,
                              text=True, timeout=30, env=env)
        assert proc.returncode == 0 and "deny" in proc.stdout, proc.stderr


@pytest.mark.parametrize("agent, payload", [
    ("claude-code", {"tool_name": "Write", "tool_input": {"file_path": "README.md", "content": ""}}),
    ("claude-code", {"tool_name": "Bash", "tool_input": {"command": "ls -la && git status"}}),
    # a client's own read tool, and an MCP call naming a file out of every scope (Action.named)
    ("claude-code", {"tool_name": "Read", "tool_input": {"file_path": "README.md"}}),
    ("claude-code", {"tool_name": "mcp__files__write_file", "tool_input": {"path": "README.md", "content": "x"}}),
    ("codex", {"tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\n*** Add File: README.md\n+x\n"
                                                                    "*** End Patch\n"}}),
    ("cline", {"hookName": "PreToolUse", "preToolUse": {"toolName": "write_to_file",
                                                        "parameters": {"path": "README.md", "content": "x"}}}),
])
def test_the_installed_command_imports_no_typing_when_no_rule_is_in_scope(repo, agent, payload):
    """Types are the checker's: the adapters and the gate name them under TYPE_CHECKING only, so a call no
    rule is in scope of never pays for `typing` (nor the gate's engine)."""
    import os

    from sentinel.hooks.install import hook_command

    root = repo({"b": {"trigger": "file_write", "scope": ["src/core/**"], "prompt": "x"},
                 "p": {"trigger": "bash", "scope": ["git push --force*"], "prompt": "x"}})
    load_repo(str(root))  # warm the cache
    argv = hook_command().split()
    argv[1:1] = ["-X", "importtime"]
    event = "PreToolUse" if agent == "cline" else "pre-tool-use"
    env = {k: v for k, v in os.environ.items() if k != "SENTINEL_GATE_JUDGE"}
    proc = subprocess.run(argv + ["hook", agent, event], input=json.dumps({"cwd": str(root), **payload}),
                          capture_output=True, text=True, timeout=30, env=env)
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert "sentinel.hooks.common" in imported  # the probe saw the hook's own imports
    assert {"typing", "sentinel.jsontypes", "sentinel.hooks.adapter", "sentinel.policy.gate.engine",
            "pydantic"} & imported == set()
