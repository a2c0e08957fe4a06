"""Every file system-mode setup writes can be read by the part of Sentinel that reads it, whatever the umask
of the root shell that ran setup (checked by reading each as that part's user), and by nobody it is not
for; `sentinel status` names a file a part cannot read, and `sentinel muzzle setup-system` repairs it."""

from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sx_helpers import read_as

pytestmark = pytest.mark.root


def sentinel_as_root(fresh, *args: str, check: int | None = 0, module: str = "sentinel", env: dict | None = None):
    """`python -m MODULE ARGS` as root from a shell with umask 077 (a hardened root account's)."""
    proc = subprocess.run([sys.executable, "-m", module, *args], env={**os.environ, **fresh.env, **(env or {})},
                          capture_output=True, text=True, timeout=120, preexec_fn=lambda: os.umask(0o077))
    if check is not None:
        assert proc.returncode == check, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def edit_config(etc: Path, extra: dict) -> None:
    """The operator edits /etc/sentinel/config.yaml in place (its owner and mode stay what setup made)."""
    path = etc / "config.yaml"
    text = path.read_text()
    data = yaml.safe_load(text) or {}
    for key, value in extra.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and isinstance(data.get(key), dict) else value
    comments = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    with open(path, "r+") as f:
        f.truncate()
        f.write(comments + yaml.safe_dump(data))


def set_up(fresh, display: str) -> str:
    """installer/install.sh --system's step, the operator's edit, `sentinel setup --name DISPLAY`."""
    from sentinel.supervisor.identity import normalize

    sentinel_as_root(fresh, module="sentinel.supervisor.install")
    edit_config(fresh.etc, {"muzzle": {"state_dir": str(fresh.base / "muzzle")}})
    name = normalize(display)
    fresh.users.append(name)
    sentinel_as_root(fresh, "setup", "--name", display)
    return name


LOCAL = {"SENTINEL_MODE": "local"}  # no supervisor runs in these tests: root's status checks the files itself


def unreadable(fresh) -> list[str]:
    return json.loads(sentinel_as_root(fresh, "status", "--json", env=LOCAL).stdout)["unreadable"]


def test_each_file_setup_writes_is_read_by_its_reader_and_no_one_else(fresh_system):
    fresh = fresh_system
    agent = set_up(fresh, f"Sx {secrets.token_hex(3)}")
    config, keys = fresh.etc / "config.yaml", fresh.etc / "muzzle" / "keys.env"
    readers = [(fresh.muzzle_user, config), (fresh.muzzle_user, keys), (fresh.muzzle_user, fresh.base / "muzzle"),
               (agent, fresh.etc / "leash" / f"{agent}.yaml")]
    for user, path in readers:
        proc = read_as(user, path)
        assert proc.returncode == 0, f"{user} cannot read {path}: {proc.stderr}"
    assert "state_dir" in read_as(fresh.muzzle_user, config).stdout
    for path in (config, keys):  # the operator's Muzzle rules and the upstream keys are not the agent's to read
        assert read_as(agent, path).returncode != 0, path
    assert stat.S_IMODE(config.stat().st_mode) == 0o640 and config.stat().st_uid == 0
    assert unreadable(fresh) == []


def test_status_names_what_a_part_cannot_read_and_muzzle_setup_system_repairs_it(fresh_system):
    fresh = fresh_system
    set_up(fresh, f"Sx {secrets.token_hex(3)}")
    config = fresh.etc / "config.yaml"
    os.chmod(config, 0o600)  # what setup used to leave behind
    os.chmod(fresh.etc, 0o700)
    [line, *_] = unreadable(fresh)
    assert f"muzzle (user {fresh.muzzle_user}) cannot read" in line and "setup-system" in line
    human = sentinel_as_root(fresh, "status", env=LOCAL).stdout
    assert f"cannot read {config}" in human or f"cannot read {fresh.etc}" in human

    sentinel_as_root(fresh, "muzzle", "setup-system")
    assert read_as(fresh.muzzle_user, config).returncode == 0
    assert unreadable(fresh) == []


def test_a_missing_muzzle_state_directory_is_named_never_made_by_root(tmp_path):
    """Root making it (0700 root) while issuing a run's token would lock Muzzle's user out of its store."""
    from sentinel import config as config_mod
    from sentinel.errors import UsageError
    from sentinel.supervisor.workers import _muzzle_token

    gone = tmp_path / "muzzle-state"
    config = config_mod.Config.model_validate({"default_model": "fake/m", "muzzle": {"state_dir": str(gone)}})
    with pytest.raises(UsageError, match="setup-system"):
        _muzzle_token("a", "r-1", "fake/m", config)
    assert not gone.exists()


def exposed(fresh) -> list[str]:
    return json.loads(sentinel_as_root(fresh, "status", "--json", env=LOCAL).stdout)["exposed"]


def test_mcp_add_keeps_the_operator_config_closed_to_agents_and_status_flags_a_readable_secret(fresh_system):
    fresh = fresh_system
    agent = set_up(fresh, f"Sx {secrets.token_hex(3)}")
    config = fresh.etc / "config.yaml"
    muzzle_gid = __import__("pwd").getpwnam(fresh.muzzle_user).pw_gid
    sentinel_as_root(fresh, "mcp", "add", "notes", "--", "/bin/true")  # system mode: SENTINEL_SOCKET names it
    assert "notes" in yaml.safe_load(config.read_text())["mcp_servers"]
    st = config.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, muzzle_gid, 0o640)
    assert read_as(agent, config).returncode != 0 and read_as(fresh.muzzle_user, config).returncode == 0
    assert exposed(fresh) == [] and unreadable(fresh) == []

    os.chmod(config, 0o644)  # what `mcp add` used to leave: the operator's config open to every agent
    [line] = exposed(fresh)
    assert line.startswith(f"agent {agent} (user {agent}) can read {config}"), line
    assert f"can read {config}" in sentinel_as_root(fresh, "status", env=LOCAL).stdout

    sentinel_as_root(fresh, "mcp", "remove", "notes", check=None)  # any rewrite repairs it, as setup made it
    st = config.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, muzzle_gid, 0o640)
    assert read_as(agent, config).returncode != 0 and exposed(fresh) == []
