"""`sentinel status` says which mode runs the engine, what Leash can enforce here, and shows best_effort."""

from __future__ import annotations


def test_status_reports_mode_leash_and_muzzle(cli, configure):
    configure()
    data = cli.json("status", "--json", check=0)
    assert data["mode"] == "local" and data["sandbox"] == "enforce"
    assert "Landlock ABI" in data["leash"] and "cgroups" in data["leash"]
    assert data["muzzle"].startswith("in-process")


def test_best_effort_sandbox_is_shown(cli, configure):
    configure({"sandbox": "best_effort", "muzzle": {"enabled": False}})
    out = cli("status", check=0).stdout
    assert "sandbox: best_effort" in out and "warning: sandbox is best_effort" in out
    assert "muzzle: disabled" in out


def test_plain_status_reads_as_lines_not_python_reprs(cli, configure):
    configure()
    out = cli("status", check=0).stdout
    assert "runs: none" in out and "model_hosts: none" in out
    assert "{" not in out and "[" not in out  # no dict or list reprs for a person to decode
