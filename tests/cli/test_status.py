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


def test_status_shows_what_the_last_validation_recorded_and_an_edit_at_once(cli, configure, sentinel_home):
    """`status` reads the config's facts beside its stamp (sentinel/config_stamp.py) without building the
    settings models; an edit of config.yaml is a new validation, so status never shows a stale value."""
    import os

    from test_cli_start import imported_by

    configure({"default_model": "fake/one", "notify": [{"type": "webhook", "url": "http://127.0.0.1:9/hook"}]})
    first = cli.json("status", "--json", check=0)
    env = {**os.environ, "SENTINEL_HOME": str(sentinel_home)}
    modules = imported_by(["status"], env)
    assert "pydantic" not in modules and "typer" not in modules and "yaml" not in modules, sorted(modules)
    again = cli.json("status", "--json", check=0)
    assert again == first and again["default_model"] == "fake/one" and len(again["notify"]) == 1
    configure({"default_model": "fake/two", "sandbox": "best_effort", "leash": {"tools": "sandboxed"}})
    edited = cli.json("status", "--json", check=0)
    assert (edited["default_model"], edited["sandbox"], edited["tools"]) == ("fake/two", "best_effort", "sandboxed")
    assert "notify" not in edited


def test_facts_in_a_stamp_others_may_write_are_not_believed(cli, configure, sentinel_home):
    """A stamp with the right digest but planted values (its file or directory writable by others) is ignored:
    the config is validated again and status shows what it says."""
    configure({"default_model": "fake/real"})
    assert cli.json("status", "--json", check=0)["default_model"] == "fake/real"
    stamp = sentinel_home / "state" / "config.valid"
    digest, facts = stamp.read_text().split("\n")
    stamp.write_text(digest + "\n" + facts.replace("fake/real", "fake/planted"))
    assert cli.json("status", "--json", check=0)["default_model"] == "fake/planted"  # the owner's own stamp: kept
    stamp.write_text(digest + "\n" + facts.replace("fake/real", "fake/planted"))
    stamp.chmod(0o666)
    assert cli.json("status", "--json", check=0)["default_model"] == "fake/real"
    stamp.write_text(digest + "\n" + facts.replace("fake/real", "fake/planted"))
    stamp.chmod(0o644)
    stamp.parent.chmod(0o777)
    try:
        assert cli.json("status", "--json", check=0)["default_model"] == "fake/real"
    finally:
        stamp.parent.chmod(0o755)
