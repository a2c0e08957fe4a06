"""A watcher command never runs as root: in system mode (the watcher child, root: make_workspace=False) Leash
launches it under the agent's tool profile whatever `leash.tools` says (its uid, gid and groups, never root's); in
local mode `plain` is a plain subprocess as before."""

from __future__ import annotations

import os
import pwd
import subprocess
import tempfile
from pathlib import Path

import pytest

from sentinel.config import Config
from sentinel.leash.errors import SandboxUnavailable
from sentinel.watchers.deliver import command_runner

pytestmark = pytest.mark.root
NOBODY = pwd.getpwnam("nobody")


@pytest.fixture
def dirs():
    """The watchers' directory (root's, 0755) and an agent's workspace (nobody's), where `nobody` can reach them."""
    base = Path(tempfile.mkdtemp(prefix="wcmd-", dir="/tmp"))
    os.chmod(base, 0o755)
    home, workspace = base / "watchers", base / "ws"
    home.mkdir(mode=0o755)
    workspace.mkdir()
    os.chown(workspace, NOBODY.pw_uid, NOBODY.pw_gid)
    yield home, workspace
    subprocess.run(["rm", "-rf", str(base)], check=False)


def plain_config():
    return Config.model_validate({"leash": {"tools": "plain"}})


def test_plain_runs_as_the_agents_user_with_its_groups_only(dirs):
    home, workspace = dirs
    run = command_runner(plain_config(), "nobody", workspace, home, make_workspace=False)
    code, out = run(["/bin/sh", "-c", "id -u; id -G"], 30, None)
    uid, groups = out.split("\n")[:2]
    expected = sorted(os.getgrouplist("nobody", NOBODY.pw_gid))
    assert (code, uid, sorted(int(g) for g in groups.split())) == (0, str(NOBODY.pw_uid), expected)


def test_plain_without_an_agent_user_is_not_root_either(dirs):
    home, workspace = dirs
    run = command_runner(plain_config(), "no_such_agent_user", workspace, home, make_workspace=False)
    code, out = run(["id", "-u"], 30, None)
    assert code == 0 and out.strip() != "0"


def test_a_launch_leash_refuses_is_a_failed_command_not_a_crash(dirs, monkeypatch):
    import sentinel.leash.launch as launch

    def refused(*args, **kwargs):
        raise SandboxUnavailable("landlock ABI 6 is missing")

    monkeypatch.setattr(launch, "run_tool", refused)
    home, workspace = dirs
    code, out = command_runner(plain_config(), "nobody", workspace, home, make_workspace=False)(["id"], 30, None)
    assert code is None and out.endswith("id: landlock ABI 6 is missing") and "\n" not in out


def test_local_mode_plain_stays_a_plain_subprocess(dirs, monkeypatch):
    """Local mode (the runner `sentinel watch run` makes: make_workspace=True) is unchanged, even run by root: the
    agent's own plain tools run as this user there too, so there is no boundary to keep."""
    from sentinel.leash import plain

    calls = []
    monkeypatch.setattr(plain, "run", lambda argv, **kw: calls.append(argv) or
                        subprocess.CompletedProcess(argv, 0, b"local\n", b""))
    home, workspace = dirs
    code, out = command_runner(plain_config(), None, workspace, home)(["id"], 30, None)
    assert (code, out, calls) == (0, "local\n", [["/usr/bin/id"]])


def test_a_default_agent_without_a_user_is_one_line_for_each_command_not_a_crash(monkeypatch):
    """The watcher child, as root: the operator's default_agent names no Linux user here."""
    from sentinel.watchers.__main__ import _run_command

    config = Config.model_validate({"default_agent": "no_such_user_here_7c1"})
    code, out = _run_command(config)(["true"], 10, None)
    assert code is None and "'no_such_user_here_7c1' has no Linux user here" in out
