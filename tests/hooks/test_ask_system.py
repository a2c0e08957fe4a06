"""System mode: an operator's coding agent asks in the operator's queue (the supervisor's root-only store),
through the operator socket; the supervisor's deliverer notifies; a decision there reaches the waiting hook."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "supervisor"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "notify"))

from receivers import Webhook  # noqa: E402
from sx_helpers import operator_config, sentinel_cmd, supervisor, system  # noqa: E402,F401

pytestmark = pytest.mark.root

PUSH_ASKS = {"kind": "scope", "trigger": "bash", "severity": "ask", "scope": ["git push*"]}


def test_an_operator_asks_in_the_supervisors_queue(system, sentinel_cmd, supervisor, repo, sentinel_home):
    hook = Webhook()
    try:
        operator_config(system.etc, {"notify": [{"type": "webhook", "url": hook.url, "on": ["approval"],
                                                 "one_tap": True}]})
        supervisor([])
        root = repo({"push-asks": PUSH_ASKS})
        payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "git push"}, "tool_use_id": "t1"}
        proc = subprocess.Popen([sys.executable, "-m", "sentinel", "hook", "codex", "pre-tool-use", "--ask-within",
                                 "40"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, **system.env})
        try:
            proc.stdin.write(json.dumps(payload))
            proc.stdin.close()
            (got,) = hook.wait(1, timeout=20)
            assert got["json"]["agent"] in ("codex", "root/codex") and got["json"]["decide_url"]
            assert not (sentinel_home / "state").exists()  # nothing in the user's own store
            with sqlite3.connect(system.state / "sentinel.db") as db:
                ((approval_id, user),) = db.execute("SELECT a.id, r.user FROM approvals a JOIN runs r"
                                                    " ON r.id = a.run_id").fetchall()
            assert user == "root"
            listed = sentinel_cmd("approvals", check=0)
            assert approval_id in listed.stdout and "codex" in listed.stdout
            sentinel_cmd("deny", approval_id, "--reason", "ask me tomorrow", check=0)
            proc.wait(10)
            assert proc.returncode == 2 and "ask me tomorrow" in proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            proc.stdout.close()
            proc.stderr.close()
    finally:
        hook.stop()
