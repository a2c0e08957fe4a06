"""The hook imports only what a decision needs: no typer, rich, pydantic, yaml, wcmatch or openai on a warm
cache; no HTTP or thread machinery when no rule is in scope."""

from __future__ import annotations

import json
import subprocess
import sys

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
