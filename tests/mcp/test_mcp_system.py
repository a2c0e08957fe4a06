"""MCP in system mode: the operator adds and pins a server (config in /etc/sentinel, the pin in the supervisor's
database); the agent's run starts it from its worker, as the agent's Linux user under the Leash tool profile;
an approval over the operator socket names the server and tool."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "supervisor"))

from sx_helpers import agent_config, as_user, make_agent, sentinel_cmd, supervisor, system, write_as  # noqa: E402,F401

pytestmark = pytest.mark.root
HERE = Path(__file__).resolve().parent


def call(tool, **arguments):
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def test_an_agents_mcp_server_runs_as_the_agent_and_its_calls_go_to_the_operator(
        system, make_agent, sentinel_cmd, supervisor, scripted_server):  # noqa: F811
    name = make_agent()
    uid = pwd.getpwnam(name).pw_uid
    srv = system.base / "srv"
    srv.mkdir(mode=0o755)
    shutil.copy(HERE / "demo_server.py", srv / "demo_server.py")
    os.chmod(srv / "demo_server.py", 0o644)
    model = scripted_server([call("mcp__files__whoami"), call("mcp__files__write_note", name="n.txt", text="x"),
                             "done"])
    agent_config(name, model, {"leash": {"tools": "sandboxed"}})
    write_as(name, Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "agents" / f"{name}.yaml",
             yaml.safe_dump({"mcp": ["files"]}))
    env = {"SENTINEL_MODE": "system"}
    sentinel_cmd("mcp", "add", "files", "--read", str(srv), "--read-only", "whoami", "--", sys.executable,
                 str(srv / "demo_server.py"), env=env, check=0)
    assert "files" in yaml.safe_load((system.etc / "config.yaml").read_text())["mcp_servers"]
    supervisor()
    # the documented grant keeps the agent's own `agent show` working (the servers are the operator's)
    shown = as_user(name, sys.executable, "-m", "sentinel", "agent", "show", name,
                    env={"SENTINEL_SOCKET": str(system.socket)})
    assert shown.returncode == 0 and "mcp: files" in shown.stdout, shown.stderr
    trusted = json.loads(sentinel_cmd("mcp", "trust", "files", "--agent", name, "--json", check=0,
                                      timeout=120).stdout)
    assert "whoami" in trusted["tools"]
    assert json.loads(sentinel_cmd("mcp", "list", "--json", check=0).stdout)[0]["trusted_sha256"] == trusted["sha256"]

    out = json.loads(sentinel_cmd("run", "who are you", "--agent", name, "--json", check=3, timeout=120).stdout)
    assert out["status"] == "waiting_approval"
    [pending] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert pending["mcp"] == {"server": "files", "tool": "write_note"}
    who = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert who[0].startswith(f"uid {uid} ")  # the server ran as the agent, not as root or the supervisor

    done = json.loads(sentinel_cmd("approve", out["approval_id"], "--json", check=0, timeout=120).stdout)
    assert done["status"] == "done"
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"][-1] == \
        "wrote 1 characters to n.txt"


def test_a_shadow_in_the_agents_workspace_never_runs_and_a_changed_module_pauses(
        system, make_agent, sentinel_cmd, supervisor, scripted_server):  # noqa: F811
    """`python -m demo_server` as the agent's user: the agent's own demo_server.py in its workspace (which
    would write a marker, then serve the same listing) is not imported; the operator's module is, without a
    pause; after the operator changes that module the next call pauses, the diff naming the file."""
    name = make_agent()
    home = Path(pwd.getpwnam(name).pw_dir)
    srv = system.base / "srv"
    srv.mkdir(mode=0o755)
    shutil.copy(HERE / "demo_server.py", srv / "demo_server.py")
    os.chmod(srv / "demo_server.py", 0o644)
    workspace = home / ".sentinel" / "workspace"
    marker = workspace / "SHADOW_RAN"
    write_as(name, workspace / "demo_server.py",
             f"import pathlib, runpy\npathlib.Path({str(marker)!r}).write_text('agent code ran')\n"
             f"runpy.run_path({str(srv / 'demo_server.py')!r}, run_name='__main__')\n")
    model = scripted_server([call("mcp__files__echo", text="hi"), "done", call("mcp__files__echo", text="again"),
                             "done"])
    agent_config(name, model, {"leash": {"tools": "sandboxed"}})
    write_as(name, home / ".sentinel" / "agents" / f"{name}.yaml", yaml.safe_dump({"mcp": ["files"]}))
    env = {"SENTINEL_MODE": "system"}
    added = sentinel_cmd("mcp", "add", "files", "--read", str(srv), "--read-only", "echo", "--env",
                         f"PYTHONPATH={srv}", "--", sys.executable, "-m", "demo_server", env=env, check=0).stdout
    assert "--agent USER" in added and "restart the supervisor" in added
    supervisor()
    sentinel_cmd("mcp", "trust", "files", "--agent", name, check=0, timeout=120)
    assert "the pin covers: its command" in sentinel_cmd("mcp", "list", check=0).stdout
    assert (system.etc / "mcp" / "files").stat().st_uid == 0  # its directory is root's, not the agent's

    out = json.loads(sentinel_cmd("run", "echo", "--agent", name, "--json", check=0, timeout=120).stdout)
    assert out["status"] == "done"
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"] == ["echo: hi"]
    assert not marker.exists(), "the agent's shadow ran"

    with (srv / "demo_server.py").open("a") as fh:
        fh.write("\n# changed by the operator\n")
    out = json.loads(sentinel_cmd("run", "echo again", "--agent", name, "--json", check=3, timeout=120).stdout)
    assert out["status"] == "waiting_approval"
    [pending] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert str(srv / "demo_server.py") in pending["code"]["changes.diff"]
    assert not marker.exists(), "the agent's shadow ran"
