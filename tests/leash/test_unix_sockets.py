"""Leash refuses host unix sockets (issue 39): a confined tool or MCP server reaches no pathname unix socket
(docker.sock, D-Bus, X11, ssh-agent, tmux) but the ones its Leash policy lists in `unix_sockets`.

The targets are root-owned sockets anyone may write (0666), in /tmp and under /run, listening for real:
each test asserts both what the confined process was told and that nothing arrived at the socket."""

from __future__ import annotations

import os
import secrets
import shlex
import socket
import sys
import textwrap
from pathlib import Path

import pytest

from sentinel.mcp.client import Connection
from sentinel.mcp.settings import McpServer
from sentinel.tools import ToolContext

HERE = Path(__file__).resolve().parent

# Every way a process could address a socket file it can name: each line prints "<label> reached" or why not.
PROBE = """
import os, socket, sys
home = os.getcwd()
def attempt(label, fn):
    try:
        fn(); print(label, "reached")
    except OSError as exc:
        print(label, type(exc).__name__)
def stream(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(path)
def seqpacket(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(path)
def dgram(path):
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", path)
def pair_dgram(path):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.connect(path)
def pair_stream(path):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM); a.connect(path)
def pair_sendto(path):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b"x", path)
def relative(path):
    os.chdir(os.path.dirname(path)); stream(os.path.basename(path))
def via_link(path):
    os.symlink(path, "link.sock"); stream("link.sock")
for n, path in enumerate(sys.argv[1:]):
    for fn in (stream, seqpacket, dgram, pair_dgram, pair_stream, pair_sendto, relative):
        attempt(f"{n}:{fn.__name__}", lambda: fn(path))
    attempt(f"{n}:proc_root", lambda: stream("/proc/self/root" + path))
    os.chdir(home)
    attempt(f"{n}:via_link", lambda: via_link(path)); os.unlink("link.sock")
a, b = socket.socketpair(); a.sendall(b"pair"); print("pair", b.recv(4).decode())
"""


class HostSocket:
    """A root-owned 0666 unix socket listening at `path` (stream, or a bound datagram socket)."""

    def __init__(self, path: Path, kind: int = socket.SOCK_STREAM):
        self.path, self.kind = path, kind
        self.sock = socket.socket(socket.AF_UNIX, kind)
        self.sock.bind(str(path))
        if kind != socket.SOCK_DGRAM:
            self.sock.listen(8)
        os.chmod(path, 0o666)
        self.sock.setblocking(False)

    def arrived(self) -> list[str]:
        """What reached the socket: the peer uid of each connection accepted, or each datagram."""
        got = []
        while True:
            try:
                if self.kind == socket.SOCK_DGRAM:
                    got.append(self.sock.recv(64).decode())
                else:
                    conn, _ = self.sock.accept()
                    uid = int.from_bytes(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)[4:8], "little")
                    got.append(f"uid {uid}")
                    conn.close()
            except BlockingIOError:
                return got

    def close(self) -> None:
        self.sock.close()
        self.path.unlink(missing_ok=True)


@pytest.fixture
def host_sockets():
    """Sockets like docker.sock and the D-Bus system bus: in /tmp and under /run, stream and datagram."""
    tag = secrets.token_hex(4)
    made = [HostSocket(Path(f"/tmp/sentinel-host-{tag}.sock")),
            HostSocket(Path(f"/run/sentinel-host-{tag}.sock")),
            HostSocket(Path(f"/tmp/sentinel-host-{tag}.dgram"), socket.SOCK_DGRAM)]
    yield made
    for s in made:
        s.close()


def probe(leash, *paths: str):
    code = textwrap.dedent(PROBE)
    res = leash(f"cd {shlex.quote(str(leash.workspace))} && /usr/bin/python3 -I -c {shlex.quote(code)} "
                + " ".join(shlex.quote(p) for p in paths))
    assert "Traceback" not in res.output, res.output
    return dict(line.split(None, 1) for line in res.output.splitlines())


@pytest.mark.root
def test_a_tool_reaches_no_host_socket(leash, host_sockets):
    outcome = probe(leash, *(str(s.path) for s in host_sockets))
    reached = sorted(k for k, v in outcome.items() if v == "reached")
    assert reached == [], outcome
    assert len(outcome) == 3 * 9 + 1 and outcome["pair"] == "pair", outcome  # every attempt ran; pairs work
    assert outcome["0:stream"] == "PermissionError" and outcome["1:dgram"] == "PermissionError"
    assert [s.arrived() for s in host_sockets] == [[], [], []]


@pytest.mark.root
def test_only_a_listed_socket_is_reachable_and_as_the_tools_own_uid(leash, host_sockets):
    allowed, other, dgram = host_sockets
    leash.policy(unix_sockets=[str(allowed.path)])
    outcome = probe(leash, str(allowed.path), str(other.path), str(dgram.path))
    reached = sorted(k for k, v in outcome.items() if v == "reached")
    # the listed socket by its path, relatively, through /proc/self/root and a link to it; nothing else
    assert reached == ["0:proc_root", "0:relative", "0:stream", "0:via_link"], outcome
    assert outcome["0:seqpacket"] in ("ConnectionRefusedError", "OSError")  # a stream socket: wrong type
    assert allowed.arrived() == [f"uid {leash.uid}"] * 4  # never the keeper's (root's) uid
    assert other.arrived() == [] and dgram.arrived() == []


@pytest.mark.root
def test_a_unix_server_in_the_workspace_works_when_listed(leash):
    code = textwrap.dedent("""
        import socket
        srv = socket.socket(socket.AF_UNIX); srv.bind("s.sock"); srv.listen()
        cli = socket.socket(socket.AF_UNIX); cli.connect("s.sock"); srv.accept()[0].sendall(b"unix ok")
        print(cli.recv(16).decode())
    """)
    command = f"/usr/bin/python3 -I -c {shlex.quote(code)}"
    assert "PermissionError" in leash(command).output  # unlisted: no unix socket at all
    (leash.workspace / "s.sock").unlink(missing_ok=True)
    leash.policy(unix_sockets=[str(leash.workspace / "s.sock")])
    res = leash(command)
    assert res.output.split() == ["unix", "ok"], res.output


@pytest.mark.root
def test_tcp_still_goes_to_the_kernel_with_a_list(leash, host_sockets):
    """With a list, every connect() is decided by the keeper: a TCP one goes on to Landlock's port rules."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    try:
        leash.policy(unix_sockets=[str(host_sockets[0].path)], network=True)
        port = listener.getsockname()[1]
        code = (f"import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), 2); print('CONNECTED')\n"
                "except OSError as e:\n print(type(e).__name__)")
        res = leash(f"/usr/bin/python3 -I -c {shlex.quote(code)}")
        assert res.output.strip() == "PermissionError", res.output  # not the proxy's port: Landlock refuses
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


@pytest.mark.root
def test_an_mcp_server_reaches_no_host_socket(leash, host_sockets, shared_dir):
    """Started the way the worker starts one (sentinel.mcp.client.Connection under the Leash tool profile)."""
    folder = shared_dir / "server"
    folder.mkdir()
    (folder / "unix_probe_server.py").write_text((HERE / "unix_probe_server.py").read_text())
    os.chmod(folder, 0o755)
    allowed, other, dgram = host_sockets
    leash.policy(unix_sockets=[str(allowed.path)])
    home = shared_dir / "server-home"  # its own directory, as the supervisor makes one (root's, 0755)
    home.mkdir(mode=0o755)
    server = McpServer(command=[sys.executable, str(folder / "unix_probe_server.py")], read=[str(folder)],
                       workdir=str(home))
    conn = Connection("probe", server, ToolContext(workspace=leash.workspace, agent=leash.agent or ""))
    try:
        assert [t.name for t in conn.tools()] == ["reach"]
        outcomes = [conn.call("reach", {"path": str(other.path)}),
                    conn.call("reach", {"path": str(dgram.path), "kind": "dgram"}),
                    conn.call("reach", {"path": str(allowed.path)})]
    finally:
        conn.close()
    assert outcomes == ["refused: PermissionError", "refused: PermissionError", "reached"]
    assert other.arrived() == [] and dgram.arrived() == []
    assert allowed.arrived() == [f"uid {leash.uid}"]


def test_a_system_mode_worker_s_tools_never_read_the_agent_s_own_policy(sentinel_home, tmp_path, monkeypatch):
    """A worker runs as its agent, whose tree holds a leash.yaml it may write: with the supervisor's settings
    pinned, root's file for the user decides, and without one the defaults do (no listed socket)."""
    from sentinel.leash import settings_cache
    from sentinel.leash.settings import LeashSettings

    (sentinel_home / "leash.yaml").write_text("unix_sockets: [/var/run/docker.sock]\n")
    assert settings_cache.policy_for(None, system=False).unix_sockets == ["/var/run/docker.sock"]  # local mode
    monkeypatch.setattr(settings_cache, "_pinned", LeashSettings(policy_dir=str(tmp_path)))
    monkeypatch.setenv("USER", "agentx")  # the supervisor's: the worker may not be able to read /etc/passwd
    assert settings_cache.policy_for(None, system=False).unix_sockets == []
    (tmp_path / "agentx.yaml").write_text("unix_sockets: [/run/listed.sock]\n")
    assert settings_cache.policy_for(None, system=False).unix_sockets == ["/run/listed.sock"]
