"""The system-mode done-when, with no other step: the operator configures a provider in /etc/sentinel/config.yaml,
then `sentinel setup --name "Bars Agent"`, `sentinel supervisor` (which starts Muzzle itself: no systemd here),
`sentinel run ... --agent bars_agent` pauses with exit 3; the run survives kill -9 of the supervisor and a
restart, the agent's own approve is refused, root's approve finishes the run. Tools run sandboxed (the default)."""

from __future__ import annotations

import json
import pwd
from pathlib import Path

import pytest

from sx_helpers import as_user, operator_config, scripted_bash

pytestmark = pytest.mark.root


def test_bars_agent_end_to_end(system, make_agent, sentinel_cmd, supervisor, scripted_server):
    if _exists("bars_agent"):
        pytest.skip("a user bars_agent already exists on this machine")
    server = scripted_server(scripted_bash("echo ran >> counter.txt; id -u; id -G"))
    operator_config(system.etc, {"providers": {"fake": {"base_url": server.base_url}}, "default_model": "fake/m"})
    name = make_agent("Bars Agent")
    assert name == "bars_agent"
    pw = pwd.getpwnam(name)
    sup = supervisor()

    assert sentinel_cmd("status", "--json", check=0) and json.loads(sentinel_cmd("status", "--json").stdout)["mode"] == "system"
    out = json.loads(sentinel_cmd("run", "write notes.txt", "--agent", "bars_agent", "--json", check=3).stdout)
    assert out["status"] == "waiting_approval" and out["approval_id"]
    ws = Path(pw.pw_dir) / ".sentinel" / "workspace"
    assert (ws / "notes.txt").stat().st_uid == pw.pw_uid  # written by the worker, as the agent
    assert not (ws / "counter.txt").exists()

    sup.kill9()
    supervisor()
    pending = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert [(a["id"], a["tool"]) for a in pending] == [(out["approval_id"], "bash")]

    refused = as_user(name, _python(), "-m", "sentinel", "approve", out["approval_id"],
                      env={"SENTINEL_SOCKET": system.env["SENTINEL_SOCKET"], "PYTHONPATH": _repo()})
    assert refused.returncode == 2 and "permission denied" in refused.stderr and "Traceback" not in refused.stderr
    assert len(json.loads(sentinel_cmd("approvals", "--json").stdout)) == 1

    done = json.loads(sentinel_cmd("approve", out["approval_id"], "--json", check=0).stdout)
    assert done == {"id": out["id"], "status": "done", "output": "All done."}
    assert (ws / "counter.txt").read_text() == "ran\n"
    shown = json.loads(sentinel_cmd("show", out["id"], "--json", check=0).stdout)
    bash_result = [m["content"] for m in shown["messages"] if m["role"] == "tool"][-1]
    assert f"{pw.pw_uid}\n{pw.pw_gid}" in bash_result  # the tool ran as the agent, with no other groups
    assert shown["decisions"][1]["approval"]["by"] == "root"


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _python() -> str:
    import sys

    return sys.executable


def _repo() -> str:
    from sentinel import paths

    return str(paths.REPO_DIR)
