"""A tool never holds an operator's identity: started by root it runs as a uid of its own, and the
supervisor refuses every request from inside a sandbox, even one running as an operator's uid.

Each attack approves a real paused run through the operator socket with a raw client (the tool
imports nothing of Sentinel) and checks the approval is still pending afterwards."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shlex
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "supervisor"))

from sx_helpers import agent_config, as_user, scripted_bash  # noqa: E402

from sentinel.leash import launch, privs  # noqa: E402
from sentinel.leash.launch import run_tool  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

APPROVE = """
    import json, socket, struct, sys
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
    except OSError as exc:
        sys.exit(print("connect", exc.errno))
    body = json.dumps({"op": "approve", "ident": sys.argv[2]}).encode()
    s.sendall(struct.pack("!I", len(body)) + body)
    size = struct.unpack("!I", s.recv(4))[0]
    print("reply", s.recv(size).decode())
"""


@pytest.fixture
def paused(system, make_agent, sentinel_cmd, supervisor, scripted_server):
    """A run of a fresh agent waiting for approval of `echo ran > ran.txt`; its approval id."""
    name = make_agent()
    server = scripted_server(scripted_bash("echo ran > ran.txt"))
    agent_config(name, server)
    supervisor([server.port])
    return json.loads(sentinel_cmd("run", "do it", "--agent", name, "--json", check=3).stdout)["approval_id"]


def pending(sentinel_cmd) -> list[str]:
    return [a["id"] for a in json.loads(sentinel_cmd("approvals", "--json").stdout)]


@pytest.fixture
def workspace(shared_dir):
    ws = shared_dir / "ws"
    ws.mkdir()
    os.chmod(ws, 0o777)
    return ws


def approve_argv(system, approval_id: str) -> list[str]:
    return ["/usr/bin/python3", "-I", "-c", textwrap.dedent(APPROVE), str(system.socket), approval_id]


@pytest.mark.root
def test_a_tool_started_by_root_cannot_approve(system, paused, workspace, sentinel_cmd):
    res = run_tool(approve_argv(system, paused), cwd=workspace, workspace=workspace, timeout_s=20)
    assert res.output.strip() == "connect 13", res.output  # its uid is not root's, nor in the operator group
    assert "uid" in res.applied and pending(sentinel_cmd) == [paused]


@pytest.mark.root
def test_a_tool_started_by_root_holds_no_root_identity(workspace, shared_dir):
    """The same for any root-only socket (systemd's and D-Bus's trust uid 0 the same way), and no capability."""
    path = shared_dir / "root-only.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    os.chmod(path, 0o600)
    srv.listen(1)
    try:
        res = run_tool(["/bin/sh", "-c", f"id -u; id -g; grep -E '^(CapEff|CapPrm|CapBnd)' /proc/self/status; "
                                         f"/usr/bin/python3 -c {shlex.quote(_connect(path))}"],
                       cwd=workspace, workspace=workspace, timeout_s=20)
    finally:
        srv.close()
    uid, gid, *caps, connect = res.output.split("\n")[:6]
    assert int(uid) == int(gid) == launch.tool_uid() and privs.is_tool_uid(int(uid)), res.output
    assert all(line.split()[1] == "0000000000000000" for line in caps), res.output
    assert connect == "PermissionError", res.output


def _connect(path: Path) -> str:
    return (f"import socket\ntry:\n socket.socket(socket.AF_UNIX).connect({str(path)!r}); print('CONNECTED')\n"
            "except OSError as exc: print(type(exc).__name__)")


@pytest.mark.root
def test_a_tool_running_as_an_operator_cannot_approve(system, paused, workspace, shared_dir, sentinel_cmd):
    """Local mode run by a member of the operator group: the tool has an operator's uid, and the socket's
    file mode lets it connect. Leash refuses it any unix socket; with the operator socket listed in its
    policy, the connection is made for it, and the supervisor refuses it because it is sandboxed (the
    keeper's helper that connects is no operator either); outside, the same member is heard (the control)."""
    member = f"sxm{secrets.token_hex(3)}"
    system.users.append(member)
    subprocess.run(["useradd", "--no-create-home", "-G", system.group, member], check=True)
    home = shared_dir / "member"
    (home / ".sentinel").mkdir(parents=True)
    pw = pwd.getpwnam(member)
    env = {"PYTHONPATH": str(REPO), "SENTINEL_HOME": str(home / ".sentinel"), "SENTINEL_MODE": "local"}
    argv = [sys.executable, "-m", "sentinel", "leash", "exec", "--workspace", str(workspace), "--",
            *approve_argv(system, paused)]
    for path in (home, home / ".sentinel"):
        os.chown(path, pw.pw_uid, pw.pw_gid)
    assert as_user(member, *argv, env=env).stdout.strip() == "connect 13"
    (home / ".sentinel" / "leash.yaml").write_text(f"unix_sockets: [{system.socket}]\n")
    os.chown(home / ".sentinel" / "leash.yaml", pw.pw_uid, pw.pw_gid)
    leashed = as_user(member, *argv, env=env)
    reply = json.loads(leashed.stdout.removeprefix("reply "))
    assert reply["kind"] == "denied" and "inside a sandbox" in reply["error"], leashed.stdout + leashed.stderr
    assert pending(sentinel_cmd) == [paused]
    status = textwrap.dedent(APPROVE).replace('"op": "approve", "ident": sys.argv[2]', '"op": "status"')
    outside = as_user(member, "/usr/bin/python3", "-I", "-c", status, str(system.socket), "-")
    assert json.loads(outside.stdout.removeprefix("reply "))["ok"] is True, outside.stdout + outside.stderr


@pytest.mark.parametrize("client, expected", [
    ("c.connect(path); c.recv(1)", False),                                # an ordinary process
    ("prctl(38, 1, 0, 0, 0); c.connect(path); c.recv(1)", True),          # no_new_privs: inside a sandbox
    ("c.connect(path)", True),                                            # gone before it is checked
])
def test_the_peer_check(tmp_path, client, expected):
    from sentinel.leash import peer

    path = str(tmp_path / "s.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(1)
    code = (f"import ctypes, socket; prctl = ctypes.CDLL(None).prctl; path = {path!r}\n"
            "c = socket.socket(socket.AF_UNIX)\n")
    proc = subprocess.Popen([sys.executable, "-I", "-c", code + client])
    conn, _ = srv.accept()
    if client == "c.connect(path)":
        proc.wait()
    try:
        assert peer.sandboxed(conn) is expected
    finally:
        conn.close()
        srv.close()
        proc.wait(10)
