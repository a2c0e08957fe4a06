"""`sentinel leash exec` and `sentinel leash check`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def test_exec_writes_workspace_and_is_refused_shadow(cli, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = cli("leash", "exec", "--workspace", str(ws), "--", "sh", "-c", "echo ok > f; cat /etc/shadow")
    assert (ws / "f").read_text() == "ok\n"
    assert proc.returncode == 1 and "Permission denied" in proc.stderr and ":::" not in proc.stdout


@pytest.mark.root
def test_exec_as_unprivileged_user(shared_dir):
    ws = shared_dir / "ws"
    ws.mkdir()
    os.chown(ws, 65534, 65534)
    home = shared_dir / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                           "sentinel", "leash", "exec", "--workspace", str(ws), "--", "sh", "-c",
                           "echo ok > f; cat /etc/shadow"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SENTINEL_HOME": str(home / ".sentinel"), "HOME": str(home)})
    assert (ws / "f").read_text() == "ok\n"
    assert proc.returncode == 1 and "Permission denied" in proc.stderr, proc.stderr


def test_exec_exit_code_and_timeout(cli, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    assert cli("leash", "exec", "--workspace", str(ws), "--", "sh", "-c", "exit 7").returncode == 7
    proc = cli("leash", "exec", "--workspace", str(ws), "--timeout", "0.5", "--", "sleep", "5")
    assert proc.returncode == 124 and "timed out" in proc.stderr


def test_check_json(cli):
    rep = cli.json("leash", "check", "--json")
    assert rep["kernel"]["landlock_abi"] >= 1
    assert set(rep["profiles"]) == {"tool", "worker"}
    tool, worker = rep["profiles"]["tool"], rep["profiles"]["worker"]
    assert "landlock-fs" in tool["enforced"] and tool["tcp_connect_ports"] == []
    assert len(worker["tcp_connect_ports"]) == 2 and worker["network"]
    assert not any(p.endswith("/etc/shadow") or p == "/etc" for p in tool["read_only"])


@pytest.mark.root
def test_a_leashed_users_root_owned_policy_wins_over_its_own_home_file(tmp_path, sentinel_home):
    from sentinel.leash.policy import policy_path

    (sentinel_home / "leash.yaml").write_text("network: {allow: ['*']}\n")
    assert policy_path(None, system=False, policy_dir=tmp_path) == sentinel_home / "leash.yaml"
    system_file = tmp_path / "root.yaml"  # the current user, as a leashed worker would see itself
    system_file.write_text("{}\n")
    assert policy_path(None, system=False, policy_dir=tmp_path) == system_file
