"""Fixtures for the Leash suite: a runner per mode (local: this uid; system: a throwaway user, root only)."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from sentinel.leash import launch
from sentinel.leash.launch import run_tool


def write_policy(path: Path, **policy) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(policy))


class Runner:
    """Runs commands under the tool profile for one agent/workspace; `policy()` rewrites its Leash policy."""

    def __init__(self, mode: str, workspace: Path, policy_file: Path, agent: str | None, uid: int):
        self.mode, self.workspace, self.policy_file, self.agent, self.uid = mode, workspace, policy_file, agent, uid

    def __call__(self, command: str, timeout_s: float = 10.0, **kw):
        return run_tool(["/bin/bash", "-c", command], cwd=self.workspace, workspace=self.workspace,
                        timeout_s=timeout_s, agent=self.agent, **kw)

    def policy(self, **policy) -> None:
        write_policy(self.policy_file, **policy)
        os.chmod(self.policy_file, 0o644)


@pytest.fixture(scope="session")
def leashed_user():
    """A throwaway system user (root only); removed at the end of the session."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    name = f"sltest{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False)


@pytest.fixture
def shared_dir():
    """A scratch dir other users can traverse (pytest's tmp_path is root-only)."""
    path = Path(tempfile.mkdtemp(prefix="sentinel-leash-test-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=["local", pytest.param("system", marks=pytest.mark.root)])
def leash(request, sentinel_home, shared_dir):
    """A Runner in local mode (this uid) and, as root, in system mode (a throwaway leashed user)."""
    workspace = shared_dir / "ws"
    workspace.mkdir()
    (shared_dir / "outside").mkdir()
    if request.param == "local":  # as root, tools run as a uid of their own, never root
        yield Runner("local", workspace, sentinel_home / "leash.yaml", None, launch.tool_uid() or os.getuid())
        return
    user = request.getfixturevalue("leashed_user")
    os.chown(workspace, user.pw_uid, user.pw_gid)
    policy_dir = shared_dir / "policies"
    policy_dir.mkdir()
    (sentinel_home / "config.yaml").write_text(yaml.safe_dump({"leash": {"policy_dir": str(policy_dir)}}))
    yield Runner("system", workspace, policy_dir / f"{user.pw_name}.yaml", user.pw_name, user.pw_uid)


@pytest.fixture
def alive():
    return _alive


def _alive(marker: str) -> list[str]:
    """Processes whose command line contains marker and that are not zombies."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            out.append(f"{pid} {cmdline}")
    return out
