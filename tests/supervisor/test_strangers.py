"""A user who is no operator gets local mode or one clear line from every command once system mode is set up,
never a traceback; a worker that cannot reach its interpreter says which path and how to fix it."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sx_helpers import as_user, serve_model

pytestmark = pytest.mark.root


@pytest.fixture
def stranger(system):
    name = f"sxh{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
    system.users.append(name)
    return name


def _as(user: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    """`sentinel ARGS` as `user`, from its home (local mode's run works in the current directory)."""
    home = pwd.getpwnam(user).pw_dir
    line = " ".join(f"'{a}'" for a in args)
    return as_user(user, "sh", "-c", f"cd {home} && exec {sys.executable} -m sentinel {line}", env=env)


def _hide_the_socket(system) -> None:
    """As the supervisor makes /run/sentinel: root:<operators> 0750, so others cannot even see the socket."""
    import grp

    os.chown(system.socket.parent, 0, grp.getgrnam(system.group).gr_gid)
    os.chmod(system.socket.parent, 0o750)


COMMANDS = [("status",), ("runs",), ("approvals",), ("run", "say hi"), ("show", "r-1"), ("logs",)]


@pytest.mark.parametrize("args", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_asking_for_the_supervisor_gets_one_line(system, supervisor, stranger, args):
    supervisor()
    _hide_the_socket(system)
    proc = _as(stranger, *args, env={"SENTINEL_SOCKET": str(system.socket)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "permission denied on the supervisor socket" in line and "SENTINEL_MODE=local" in line


def test_local_mode_works_for_them_beside_a_supervisor(system, supervisor, stranger, scripted_server):
    supervisor()
    _hide_the_socket(system)
    server = scripted_server(["Hello from local mode."])
    home = Path(pwd.getpwnam(stranger).pw_dir)
    own = {"default_model": "fake/m", "providers": {"fake": {"base_url": server.base_url}}, "leash": {"tools": "plain"}}
    as_user(stranger, "mkdir", "-p", str(home / ".sentinel"))
    as_user(stranger, "sh", "-c", f"cat > {home}/.sentinel/config.yaml", input=yaml.safe_dump(own))
    env = {"SENTINEL_SOCKET": str(system.socket), "SENTINEL_MODE": "local"}
    status = _as(stranger, "status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["mode"] == "local" and "you are in local mode" in data["note"]
    run = _as(stranger, "run", "say hi", "--json", env=env)
    assert run.returncode == 4 and "Traceback" not in run.stderr, run.stderr  # an answer only: done_unverified
    assert json.loads(run.stdout)["output"] == "Hello from local mode."
    for args in (("runs", "--json"), ("approvals", "--json")):
        proc = _as(stranger, *args, env=env)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_local_mode_notes_a_supervisor_it_may_not_use(system, supervisor, stranger):
    supervisor()
    _hide_the_socket(system)
    code = ("import os, json\nfrom sentinel.client.system import connect, local_note\n"
            "os.environ.pop('SENTINEL_MODE', None)\nprint(json.dumps([connect() is None, local_note()]))")
    env = {"SENTINEL_SOCKET": "", "SENTINEL_MODE": "local", "SENTINEL_OPERATOR_GROUP": system.group}
    # the default socket path is the system's; point the default at this test's hidden one instead
    probe = as_user(stranger, sys.executable, "-c",
                    f"import sentinel.client.paths as l; from pathlib import Path; l.SOCKET = Path({str(system.socket)!r})\n"
                    + code, env=env)
    assert probe.returncode == 0, probe.stderr
    local, note = json.loads(probe.stdout)
    assert local and f"group {system.group!r}" in note and "local mode" in note


def test_a_strangers_approve_says_they_are_not_an_operator_and_resolves_nothing(system, supervisor, stranger,
                                                                               make_agent, sentinel_cmd,
                                                                               scripted_server):
    agent = make_agent()
    serve_model(system.etc, scripted_server([{"tool_calls": [{"name": "bash", "arguments": {"command": "touch x"}}]},
                                             "ok"]))
    supervisor()
    sentinel_cmd("run", "touch x", "--agent", agent, "--json", check=3)
    [approval] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    home = Path(pwd.getpwnam(agent).pw_dir)
    assert (approval["user"], approval["workspace"]) == (agent, str(home / ".sentinel" / "workspace"))
    _hide_the_socket(system)
    refused = f"you are not an operator (root or group {system.group})"
    for verb in ("approve", "deny"):
        # the socket where the machine's supervisor keeps it, not asked for: the stranger's own local mode answers
        probe = as_user(stranger, sys.executable, "-c",
                        f"import sentinel.client.paths as l; from pathlib import Path; "
                        f"l.SOCKET = Path({str(system.socket)!r}); from sentinel.cli import main; "
                        f"main([{verb!r}, {approval['id']!r}])",
                        env={"SENTINEL_OPERATOR_GROUP": system.group})
        asked = _as(stranger, verb, approval["id"], env={"SENTINEL_SOCKET": str(system.socket),
                                                         "SENTINEL_OPERATOR_GROUP": system.group})
        for proc in (probe, asked):
            assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
            [line] = proc.stderr.strip().splitlines()
            assert line.startswith(f"error: {refused}") and "no approval" not in line, line
    [still] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert still["id"] == approval["id"]  # nothing was resolved


def test_an_unreachable_interpreter_is_named_with_the_fix(tmp_path):
    from sentinel.leash.errors import SandboxUnavailable
    from sentinel.leash import confine, spawn
    from sentinel.leash.profile import Profile

    hidden = Path(tmp_path) / "root-only"
    hidden.mkdir(mode=0o700)
    shutil.copy("/bin/true", hidden / "python3")
    nobody = pwd.getpwnam("nobody")
    null = os.open(os.devnull, os.O_RDWR)
    try:
        launch = spawn.Launch([str(hidden / "python3")], {"PATH": "/usr/bin"}, nobody.pw_uid, nobody.pw_gid, "/",
                              Profile("probe", ["/"], [], layers=confine.SERVICE), (null, null, null),
                              sandbox="best_effort")
        with pytest.raises(SandboxUnavailable) as failed:
            spawn.spawn(launch)
    finally:
        os.close(null)
    message = str(failed.value)
    assert "cannot reach" in message and str(tmp_path) in message and "chmod -R a+rX" in message
    assert "\n" not in message
