"""A trusted MCP server runs the code that was trusted (issue 39): the agent plants a shadow of the server's code in
its workspace (a `demo_server.py` for `python -m demo_server` and for a relative script, a
`node_modules/.bin/echo-mcp` for `npx echo-mcp`) that would write a marker file and then serve the same listing;
the shadow never runs, the trusted server answers without a pause, and a legitimate change of the trusted code
file pauses the next call for approval, its diff naming the file."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.timeout(400)


def call(tool, **arguments):
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def results(server):
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


@pytest.fixture
def demo(tmp_path):
    folder = tmp_path / "demo-server"
    folder.mkdir()
    shutil.copy(HERE / "demo_server.py", folder / "demo_server.py")
    return folder


@pytest.fixture
def workspace(sentinel_home):
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    return ws


def python_shadow(real: Path, marker: Path) -> str:
    """What the agent writes: mark that it ran, then serve the real server's listing (so nothing looks off)."""
    return (f"import pathlib, runpy\npathlib.Path({str(marker)!r}).write_text('agent code ran')\n"
            f"runpy.run_path({str(real)!r}, run_name='__main__')\n")


@pytest.fixture
def go(cli, configure, scripted_server, sentinel_home, workspace):
    """go(server, trust=, check=) -> (model, outcome): one run whose model calls mcp__files__echo once."""

    def run(server, *, trust=True, check=4, add=False):
        model = scripted_server([call("mcp__files__echo", text="hi"), "ok"])
        if add:  # keep the `mcp_servers` that `sentinel mcp add` wrote
            servers = yaml.safe_load((sentinel_home / "config.yaml").read_text())["mcp_servers"]
            configure({"leash": {"tools": "sandboxed"}, "mcp_servers": servers}, server=model)
        else:
            configure({"leash": {"tools": "sandboxed"}, "mcp_servers": {"files": server}}, server=model)
        (sentinel_home / "agents").mkdir(exist_ok=True)
        (sentinel_home / "agents" / "sentinel.yaml").write_text(yaml.safe_dump({"mcp": ["files"]}))
        if trust:
            cli("mcp", "trust", "files", check=0, timeout=120)
        return model, cli.json("run", "echo hi", "--json", check=check, timeout=120)

    return run


def trusted_then_changed(go, cli, server, trusted_file: Path, marker: Path, add=False):
    """Trusted, the server runs its read-only tool without a pause and the shadow stays dormant; after an
    operator-side change of `trusted_file` the next call pauses, the approval's diff naming that file."""
    model, out = go(server, add=add)
    assert out["status"] == "done_unverified" and results(model) == ["echo: hi"]
    assert not marker.exists(), "the agent's shadow ran"
    listed = cli.json("mcp", "list", "--json", check=0)[0]["covers"]
    assert str(trusted_file.resolve()) in listed["code"]["files"]

    with trusted_file.open("a") as fh:
        fh.write("\n// changed\n" if trusted_file.suffix == ".js" else "\n# changed\n")
    model, out = go(server, trust=False, check=3, add=add)
    assert out["status"] == "waiting_approval"
    [pending] = cli.json("approvals", "--json", check=0)
    assert "not the ones trusted" in pending["reason"]
    assert str(trusted_file.resolve()) in pending["code"]["changes.diff"]
    assert not marker.exists(), "the agent's shadow ran"


def test_python_m_imports_the_operators_module_not_the_agents(go, cli, demo, workspace):
    marker = workspace / "SHADOW_RAN"
    (workspace / "demo_server.py").write_text(python_shadow(demo / "demo_server.py", marker))
    server = {"command": [sys.executable, "-m", "demo_server"], "env": {"PYTHONPATH": str(demo)},
              "read": [str(demo)], "read_only": ["echo"]}
    trusted_then_changed(go, cli, server, demo / "demo_server.py", marker)


def test_a_relative_script_is_resolved_at_add_time_against_the_operators_directory(go, cli, demo, workspace):
    marker = workspace / "SHADOW_RAN"
    (workspace / "demo_server.py").write_text(python_shadow(demo / "demo_server.py", marker))
    out = cli("mcp", "add", "files", "--read", str(demo), "--read-only", "echo", "--", sys.executable,
              "demo_server.py", cwd=demo, check=0).stdout
    server = {"command": [sys.executable, str(demo / "demo_server.py")], "read": [str(demo)], "read_only": ["echo"]}
    assert f"resolved {sys.executable} demo_server.py to {sys.executable} {demo / 'demo_server.py'}" in out
    trusted_then_changed(go, cli, server, demo / "demo_server.py", marker, add=True)


def test_a_relative_script_in_a_hand_written_config_is_refused_not_looked_up(cli, configure, demo, workspace):
    marker = workspace / "SHADOW_RAN"
    (workspace / "demo_server.py").write_text(python_shadow(demo / "demo_server.py", marker))
    configure({"leash": {"tools": "sandboxed"}, "mcp_servers": {"files": {
        "command": [sys.executable, "demo_server.py"], "read": [str(demo)]}}})
    err = cli("mcp", "tools", "files", "--workspace", str(workspace), check=2).stderr
    assert err.strip() == ("error: MCP server 'files': its script 'demo_server.py' is a relative path; give an "
                           "absolute one (`sentinel mcp add` resolves a relative one against the directory you run "
                           "it from)")
    assert not marker.exists()


@pytest.fixture
def node_package(tmp_path, monkeypatch):
    """echo-mcp installed where npm's global root is ($NPM_CONFIG_PREFIX/lib/node_modules), by copying."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed (apt-get install nodejs npm); the npx resolution is tested without it")
    prefix = tmp_path / "npm-prefix"
    package = prefix / "lib" / "node_modules" / "echo-mcp"
    shutil.copytree(HERE / "echo_node", package)
    monkeypatch.setenv("NPM_CONFIG_PREFIX", str(prefix))
    return package


def test_npx_runs_the_installed_package_never_the_workspaces_node_modules(go, cli, workspace, node_package):
    marker = workspace / "SHADOW_RAN"
    bin_dir = workspace / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "echo-mcp").write_text(f"#!/bin/sh\necho ran > {marker}\nexec node {node_package / 'server.js'}\n")
    (bin_dir / "echo-mcp").chmod(0o755)
    shadow_pkg = workspace / "node_modules" / "echo-mcp"
    shadow_pkg.mkdir()
    (shadow_pkg / "package.json").write_text(json.dumps({"name": "echo-mcp", "bin": "server.js"}))
    (shadow_pkg / "server.js").write_text(f"require('fs').writeFileSync({json.dumps(str(marker))}, 'ran');\n"
                                          f"require({json.dumps(str(node_package / 'server.js'))});\n")
    server = {"command": ["npx", "-y", "echo-mcp"], "read": [str(node_package.parent.parent.parent)],
              "read_only": ["echo"]}
    trusted_then_changed(go, cli, server, node_package / "server.js", marker)


def test_mcp_add_resolves_npx_to_node_and_the_installed_bin_file(cli, workspace, node_package, sentinel_home):
    out = cli("mcp", "add", "files", "--", "npx", "echo-mcp", check=0).stdout
    saved = yaml.safe_load((sentinel_home / "config.yaml").read_text())["mcp_servers"]["files"]["command"]
    assert saved == [shutil.which("node", path="/usr/local/bin:/usr/bin:/bin"), str(node_package / "server.js")]
    assert "resolved npx echo-mcp to " in out
    err = cli("mcp", "add", "other", "--", "npx", "not-installed-here", check=2).stderr
    assert err.startswith("error: MCP server 'other': npx package 'not-installed-here' is not installed in ")
    assert len(err.strip().splitlines()) == 1


def test_add_names_a_missing_executable_and_an_unreadable_script_in_one_line(cli, demo, sentinel_home):
    err = cli("mcp", "add", "files", "--", "python", "-m", "some_server", check=2).stderr
    assert err.strip() == ("error: MCP server 'files': executable 'python' not found on /usr/local/bin:/usr/bin:/bin "
                           "(Debian and Ubuntu have no `python`: use `python3`, or a virtualenv's bin/python); give "
                           "its absolute path")
    err = cli("mcp", "add", "files", "--", sys.executable, "nope.py", cwd=demo, check=2).stderr
    assert f"its script {demo / 'nope.py'} is not an existing file" in err and len(err.strip().splitlines()) == 1
    out = cli("mcp", "add", "files", "--", sys.executable, str(demo / "demo_server.py"), check=0).stdout
    assert f"add `--read {demo}`" in out


def test_a_server_whose_code_the_agent_could_rewrite_is_refused(cli, configure, demo, workspace):
    """A script inside the workspace (a path the agent's tools write) is not started: hashing it would prove
    nothing, since the agent could change it between the check and the start; its neighbour outside runs."""
    shutil.copy(demo / "demo_server.py", workspace / "server.py")
    configure({"leash": {"tools": "sandboxed"}, "mcp_servers": {
        "inside": {"command": [sys.executable, str(workspace / "server.py")]},
        "outside": {"command": [sys.executable, str(demo / "demo_server.py")], "read": [str(demo)]}}})
    err = cli("mcp", "tools", "inside", "--workspace", str(workspace), check=2).stderr
    assert err.startswith("error: MCP server 'inside': its script could be rewritten by the agent (")
    assert "which the agent's tools may write" in err and len(err.strip().splitlines()) == 1
    assert "mcp__outside__echo" in cli("mcp", "tools", "outside", "--workspace", str(workspace), check=0).stdout
