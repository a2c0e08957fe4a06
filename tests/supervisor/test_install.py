"""System mode's own setup (`sentinel setup`, `installer/install.sh --system`): the units are checked statically
(no systemd runs here), installed only where systemd runs, and everything else is set up idempotently."""

from __future__ import annotations

import grp
import os
import pwd
import stat
import subprocess
from pathlib import Path

import pytest

from sentinel.supervisor import install

UNIT_DIR = Path(__file__).resolve().parents[2] / "installer"


def _unit(name: str) -> dict[str, dict[str, list[str]]]:
    """A systemd unit as section -> key -> values (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for raw in (UNIT_DIR / name).read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None and "=" in line, f"{name}: {raw!r} is outside a section or has no '='"
        key, _, value = line.partition("=")
        current.setdefault(key, []).append(value)
    return sections


@pytest.mark.parametrize("name", install.UNITS)
def test_each_unit_is_well_formed_and_starts_a_real_command(name):
    unit = _unit(name)
    assert set(unit) == {"Unit", "Service", "Install"}
    assert unit["Install"]["WantedBy"] == ["multi-user.target"] and unit["Unit"]["Description"]
    [exec_start] = unit["Service"]["ExecStart"]
    binary, *args = exec_start.split()
    assert binary == f"{install.INSTALLED_VENV}/bin/sentinel"
    from typer.testing import CliRunner

    from sentinel.cli.app import build

    assert CliRunner().invoke(build(), [*args, "--help"]).exit_code == 0, exec_start
    assert unit["Service"]["NoNewPrivileges"] == ["yes"]


def test_the_units_fit_system_mode():
    from sentinel.muzzle.layout import SYSTEM_USER

    muzzle, sup = _unit("sentinel-muzzle.service"), _unit("sentinel-supervisor.service")
    assert muzzle["Service"]["User"] == [SYSTEM_USER] and muzzle["Service"]["CapabilityBoundingSet"] == [""]
    assert "--system" in muzzle["Service"]["ExecStart"][0]
    assert "sentinel-muzzle.service" in sup["Unit"]["Wants"][0] and "sentinel-muzzle.service" in sup["Unit"]["After"][0]
    caps = set(sup["Service"]["CapabilityBoundingSet"][0].split())
    assert {"CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_NET_ADMIN"} <= caps  # workers, Muzzle, egress
    assert sup["Service"]["KillMode"] == ["mixed"] and "StateDirectory" in sup["Service"]
    assert install.render("sentinel-supervisor.service", "/srv/venv").count("/srv/venv/bin/sentinel") == 1


def test_units_are_installed_only_where_systemd_runs(tmp_path, monkeypatch):
    tmp_path = tmp_path / "units"
    tmp_path.mkdir()
    monkeypatch.setattr(install, "systemd_running", lambda: False)
    [line] = install.install_units(tmp_path)
    assert "not running" in line and "sentinel supervisor" in line and list(tmp_path.iterdir()) == []
    calls = []
    monkeypatch.setattr(install, "systemd_running", lambda: True)
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: calls.append(argv) or
                        subprocess.CompletedProcess(argv, 0, "", ""))
    [line] = install.install_units(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(install.UNITS) and "enabled" in line
    assert calls[-1][1:] == ["enable", "--now", *install.UNITS]
    import sys

    assert f"{sys.prefix}/bin/sentinel" in (tmp_path / "sentinel-supervisor.service").read_text()


def test_the_installer_takes_only_system(tmp_path):
    script = UNIT_DIR / "install.sh"
    proc = subprocess.run(["bash", str(script), "--bogus"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "--system" in proc.stderr
    assert "-m sentinel.supervisor.install" in script.read_text()


def test_a_starter_config_is_written_once(tmp_path):
    assert "a commented starter" in install._starter_config(tmp_path / "etc")
    config = tmp_path / "etc" / "config.yaml"
    assert stat.S_IMODE(config.stat().st_mode) == 0o640 and "system:" in config.read_text()
    config.write_text("default_model: fake/m\n")
    assert "(kept)" in install._starter_config(tmp_path / "etc") and config.read_text() == "default_model: fake/m\n"
    from sentinel import config as config_mod

    config.write_text(install.STARTER_CONFIG)
    assert config_mod.load(tmp_path / "etc").default_model  # the starter itself is a valid config


@pytest.mark.root
def test_prepare_sets_up_system_mode_once_and_keeps_what_exists(system, supervisor):
    config = system.etc / "config.yaml"
    first = install.prepare()
    assert any("(kept)" in line for line in first) and any("systemd" in line for line in first)
    [group] = [line for line in first if line.startswith("operators:")]
    [muzzle] = [line for line in first if line.startswith("muzzle:")]
    assert "created" in group and muzzle.count("created") == 3 and "kept" not in muzzle, first
    assert first[-1].startswith("supervisor: none running")
    assert grp.getgrnam(system.group)
    muzzle = pwd.getpwnam(system.muzzle_user)
    keys = system.etc / "muzzle" / "keys.env"
    assert keys.stat().st_uid == muzzle.pw_uid and stat.S_IMODE(keys.stat().st_mode) == 0o600
    before = config.read_text()
    keys.write_text("OPENAI_API_KEY=kept\n")
    supervisor()  # a re-run beside a running supervisor: everything kept, the supervisor left running
    again = install.prepare()
    assert config.read_text() == before and keys.read_text() == "OPENAI_API_KEY=kept\n"
    assert not any("created" in line for line in again if not line.startswith("systemd")), again
    assert [line for line in again if line.startswith("muzzle:")][0].count("kept") == 3
    assert again[-1].startswith("supervisor: already running") and "restart" in again[-1]
    assert os.environ["SENTINEL_MUZZLE_USER"] == system.muzzle_user


@pytest.mark.root
def test_the_installers_first_task_runs_in_local_mode_beside_a_running_supervisor(system, supervisor,
                                                                                  scripted_server, tmp_path):
    """A re-run of `install.sh --system` on a machine whose supervisor runs: the first task is root's own,
    in local mode on root's home; the supervisor never takes it over (it has no run afterwards)."""
    import sys

    import yaml

    server = scripted_server([{"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt",
                                                                                 "content": "hi\n"}}]}, "Done."])
    home = tmp_path / "root-home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({
        "default_model": "fake/m", "providers": {"fake": {"base_url": server.base_url, "api_key_env": "FAKE_KEY"}},
        "leash": {"tools": "plain"}, "context": {"curator_model": "off"}}))
    supervisor()
    # The supervisor is named as plainly as it can be (SENTINEL_SOCKET, which alone would make it answer).
    env = {**os.environ, **system.env, "SENTINEL_HOME": str(home), "FAKE_KEY": "k",
           "SENTINEL_CLI": f"{sys.prefix}/bin/sentinel"}
    proc = subprocess.run(["bash", str(UNIT_DIR / "first-task.sh")], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "local mode" in proc.stdout and "the agent wrote" in proc.stdout and ": hi" in proc.stdout
    runs = subprocess.run([sys.executable, "-m", "sentinel", "runs", "--json"], env={**os.environ, **system.env},
                          capture_output=True, text=True, timeout=60)
    assert runs.returncode == 0 and runs.stdout.strip() == "[]", runs.stdout + runs.stderr
    assert len(server.requests) == 2  # the task ran here, on root's own home


@pytest.mark.root
def test_status_notices_an_operator_config_that_no_longer_parses(system, supervisor):
    import json
    import sys

    supervisor()
    status = lambda *a: subprocess.run([sys.executable, "-m", "sentinel", "status", *a],  # noqa: E731
                                       env={**os.environ, **system.env}, capture_output=True, text=True, timeout=60)
    assert json.loads(status("--json").stdout)["config"].startswith("ok")
    config = system.etc / "config.yaml"
    config.write_text(config.read_text() + "muzzle: [broken\n")  # an edit after the supervisor started
    shown = json.loads(status("--json").stdout)["config"]
    assert shown.startswith("BROKEN") and str(config) in shown and "invalid YAML" in shown, shown
    human = status()
    assert human.returncode == 0 and "no longer loads" in human.stdout, human.stdout + human.stderr
