"""MCP in system mode: the operator adds and pins a server (config in /etc/sentinel, the pin in the supervisor's
database); the agent's run starts it from its worker, as the agent's Linux user under the Leash tool profile;
an approval over the operator socket names the server and tool."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
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

    done = json.loads(sentinel_cmd("approve", out["approval_id"], "--json", check=4, timeout=120).stdout)
    assert done["status"] == "done_unverified"
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"][-1] == \
        "wrote 1 characters to n.txt"


def _code_for(kind: str, base: Path) -> tuple[Path, list[str], dict[str, str]]:
    """(the trusted code file, the `mcp add` arguments after its options, extra environment for `mcp add`):
    the demo server for `python -m` and a relative script, the node echo server installed for `npx`."""
    if kind == "npx":
        package = base / "npm" / "lib" / "node_modules" / "echo-mcp"
        shutil.copytree(HERE / "echo_node", package)
        for path in (base / "npm", base / "npm" / "lib", package.parent, package):
            os.chmod(path, 0o755)
        return package / "server.js", ["--read", str(base / "npm"), "--", "npx", "-y", "echo-mcp"], \
            {"NPM_CONFIG_PREFIX": str(base / "npm")}
    srv = base / "srv"
    srv.mkdir(mode=0o755)
    shutil.copy(HERE / "demo_server.py", srv / "demo_server.py")
    os.chmod(srv / "demo_server.py", 0o644)
    if kind == "module":
        return srv / "demo_server.py", ["--read", str(srv), "--env", f"PYTHONPATH={srv}", "--", sys.executable, "-m",
                                        "demo_server"], {}
    return srv / "demo_server.py", ["--read", str(srv), "--", sys.executable, "demo_server.py"], {}


def _plant(kind: str, name: str, workspace: Path, trusted: Path, marker: Path) -> None:
    """The agent's shadow of the trusted code in its own workspace, written as its own user: it marks that
    it ran, then serves the trusted server's listing (so nothing looks off)."""
    if kind == "npx":
        write_as(name, workspace / "node_modules" / ".bin" / "echo-mcp",
                 f"#!/bin/sh\necho ran > {marker}\nexec node {trusted}\n")
        os.chmod(workspace / "node_modules" / ".bin" / "echo-mcp", 0o755)
        return
    write_as(name, workspace / "demo_server.py",
             f"import pathlib, runpy\npathlib.Path({str(marker)!r}).write_text('agent code ran')\n"
             f"runpy.run_path({str(trusted)!r}, run_name='__main__')\n")


@pytest.mark.parametrize("kind", ["module", "script", "npx"])
def test_a_shadow_in_the_agents_workspace_never_runs_and_a_changed_code_file_pauses(
        kind, system, make_agent, sentinel_cmd, supervisor, scripted_server):  # noqa: F811
    """As the agent's user: its own shadow (a demo_server.py for `python -m demo_server` and for the relative
    script `demo_server.py`, a node_modules/.bin/echo-mcp for `npx echo-mcp`) is never run; the operator's
    code is, without a pause; after the operator changes that code the next call pauses, its diff naming it."""
    if kind == "npx" and shutil.which("node") is None:
        pytest.skip("node is not installed (apt-get install nodejs npm)")
    name = make_agent()
    home = Path(pwd.getpwnam(name).pw_dir)
    trusted, args, add_env = _code_for(kind, system.base)
    workspace = home / ".sentinel" / "workspace"
    marker = workspace / "SHADOW_RAN"
    if kind == "npx":
        as_user(name, "mkdir", "-p", str(workspace / "node_modules" / ".bin"))
    _plant(kind, name, workspace, trusted, marker)
    model = scripted_server([call("mcp__files__echo", text="hi"), "done", call("mcp__files__echo", text="again"),
                             "done"])
    agent_config(name, model, {"leash": {"tools": "sandboxed"}})
    write_as(name, home / ".sentinel" / "agents" / f"{name}.yaml", yaml.safe_dump({"mcp": ["files"]}))
    added = subprocess.run([sys.executable, "-m", "sentinel", "mcp", "add", "files", "--read-only", "echo", *args],
                           env={**os.environ, **system.env, "SENTINEL_MODE": "system", **add_env},
                           cwd=trusted.parent, capture_output=True, text=True, timeout=60)
    assert added.returncode == 0, added.stderr
    assert "--agent USER" in added.stdout and "restart the supervisor" in added.stdout
    command = yaml.safe_load((system.etc / "config.yaml").read_text())["mcp_servers"]["files"]["command"]
    assert str(trusted) in command or kind == "module"  # resolved at add time: what runs is fixed here
    supervisor()
    sentinel_cmd("mcp", "trust", "files", "--agent", name, check=0, timeout=120)
    listed = sentinel_cmd("mcp", "list", check=0).stdout
    assert "the pin covers: its command" in listed and str(trusted) in listed
    assert (system.etc / "mcp" / "files").stat().st_uid == 0  # its directory is root's, not the agent's

    out = json.loads(sentinel_cmd("run", "echo", "--agent", name, "--json", check=4, timeout=120).stdout)
    assert out["status"] == "done_unverified"
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"] == ["echo: hi"]
    assert not marker.exists(), "the agent's shadow ran"

    with trusted.open("a") as fh:
        fh.write("\n// changed by the operator\n" if kind == "npx" else "\n# changed by the operator\n")
    out = json.loads(sentinel_cmd("run", "echo again", "--agent", name, "--json", check=3, timeout=120).stdout)
    assert out["status"] == "waiting_approval"
    [pending] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert str(trusted) in pending["code"]["changes.diff"]
    assert not marker.exists(), "the agent's shadow ran"
