"""System mode end to end (issue 39): a tool the worker starts reaches no host unix socket but the one the
agent's root-owned Leash policy lists, while Muzzle answers the run's model calls. The agent's own
~/.sentinel/leash.yaml listing another socket changes nothing: the root-owned policy wins."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shlex
import socket
from pathlib import Path

import pytest
import yaml

from sx_helpers import operator_config, scripted_bash, write_as

pytestmark = pytest.mark.root

PROBE = """
import socket, sys
for n, path in enumerate(sys.argv[1:]):
    try:
        socket.socket(socket.AF_UNIX).connect(path); print(n, "reached")
    except OSError as exc:
        print(n, type(exc).__name__)
"""


def listening(path: Path) -> socket.socket:
    """A root-owned socket anyone may connect to (0666), as docker.sock or D-Bus's are to their group."""
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.listen(8)
    os.chmod(path, 0o666)
    sock.setblocking(False)
    return sock


def peers(sock: socket.socket) -> list[int]:
    """The uid of each connection that arrived."""
    got = []
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return got
        got.append(int.from_bytes(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)[4:8], "little"))
        conn.close()


def test_a_worker_s_tool_reaches_only_the_listed_socket(system, make_agent, sentinel_cmd, supervisor,
                                                         scripted_server):
    tag = secrets.token_hex(4)
    paths = [Path(f"/tmp/sentinel-host-{tag}.sock"), Path(f"/run/sentinel-host-{tag}.sock"),
             Path(f"/tmp/sentinel-listed-{tag}.sock")]
    socks = [listening(p) for p in paths]
    try:
        command = f"/usr/bin/python3 -I -c {shlex.quote(PROBE)} " + " ".join(map(str, paths))
        server = scripted_server(scripted_bash(command))
        operator_config(system.etc, {"providers": {"fake": {"base_url": server.base_url}}, "default_model": "fake/m"})
        name = make_agent()
        pw = pwd.getpwnam(name)
        policies = system.etc / "leash"
        policies.mkdir(mode=0o755, exist_ok=True)
        (policies / f"{name}.yaml").write_text(yaml.safe_dump({"unix_sockets": [str(paths[2])]}))
        write_as(name, Path(pw.pw_dir) / ".sentinel" / "leash.yaml", yaml.safe_dump({"unix_sockets": [str(paths[1])]}))
        supervisor()

        out = json.loads(sentinel_cmd("run", "write notes.txt", "--agent", name, "--json", check=3).stdout)
        done = json.loads(sentinel_cmd("approve", out["approval_id"], "--json", check=0).stdout)
        assert done["status"] == "done" and done["output"] == "All done."  # Muzzle answered every model call
        shown = json.loads(sentinel_cmd("show", out["id"], "--json", check=0).stdout)
        result = [m["content"] for m in shown["messages"] if m["role"] == "tool"][-1]
        outcome = dict(line.split(None, 1) for line in result.splitlines() if line[:1].isdigit())
        assert outcome == {"0": "PermissionError", "1": "PermissionError", "2": "reached"}, result
        assert [peers(s) for s in socks] == [[], [], [pw.pw_uid]]
    finally:
        for sock, path in zip(socks, paths):
            sock.close()
            path.unlink(missing_ok=True)
