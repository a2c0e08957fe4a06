"""Start-up: a command imports what it uses, and the fast path runs the same commands as the typer app."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sentinel.cli import app, fast, runs


def imported_by(args: list[str], env: dict[str, str]) -> set[str]:
    """The modules a `sentinel ARGS` process has imported when it exits."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('\\nMODULES ' + ' '.join(sorted(sys.modules)), file=sys.stderr))\n"
            f"sys.argv = ['sentinel', *{args!r}]\n"
            "from sentinel.cli import main\nmain()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:])


def test_every_top_level_command_is_mapped_to_the_module_that_registers_it():
    everything = app.build()
    for command in everything.registered_commands:
        name = command.name or command.callback.__name__
        assert app.COMMANDS.get(name) == command.callback.__module__, name
    assert set(app.COMMANDS) == {c.name or c.callback.__name__ for c in everything.registered_commands}


def test_a_named_command_builds_only_its_module_and_help_builds_all():
    only = app.build(["approvals"])
    assert {c.callback.__module__ for c in only.registered_commands} == {"sentinel.cli.runs"}
    assert not only.registered_groups
    assert [g.name for g in app.build(["rules", "list"]).registered_groups] == ["rules"]
    assert len(app.build(["--help"]).registered_groups) == len(app.GROUPS)
    # one command alone would make typer take `web` as the app itself: the whole app is built instead
    assert len(app.build(["web"]).registered_commands) == len(app.build().registered_commands)


@pytest.mark.parametrize("args,expected", [
    (["--json"], {"as_json": True, "all_hosts": False}),
    ([], {"as_json": False, "all_hosts": False}),
    (["--help"], None), (["--json", "--json"], None), (["--jsn"], None), (["extra"], None),
])
def test_approvals_arguments_parse_as_typer_would_or_go_to_typer(args, expected):
    assert fast.parse(runs.approvals, args) == expected


def test_values_flags_and_required_arguments():
    from pathlib import Path

    got = fast.parse(runs.run, ["do it", "-m", "p/m", "--workspace=/tmp", "--json"])
    assert got == {"task": "do it", "model": "p/m", "agent": None, "workspace": Path("/tmp"), "as_json": True}
    assert fast.parse(runs.run, ["--json"]) is None  # TASK missing: typer says so
    assert fast.parse(runs.run, ["x", "--model"]) is None  # a value missing: typer says so
    assert fast.parse(runs.deny, ["a-1", "-r", "no"]) == {"ident": "a-1", "reason": "no", "digest": None,
                                                          "as_json": False}
    assert fast.parse(runs.logs, []) == {"run_id": None, "follow": False, "as_json": False}


def test_listing_and_deciding_import_neither_typer_nor_pydantic_nor_rich(sentinel_home, cli, configure):
    configure()
    env = {**__import__("os").environ, "SENTINEL_HOME": str(sentinel_home)}
    assert cli("runs", "--json", check=0).stdout.strip() == "[]"  # the first validates and stamps the config
    for args in (["runs", "--json"], ["approvals"], ["show", "r-missing"], ["deny", "a-missing"], ["status"]):
        modules = imported_by(args, env)
        assert "typer" not in modules and "pydantic" not in modules and "rich" not in modules, (args, sorted(modules))
        if args[0] != "show":  # a run's journal: its records and events are read by `show`, not by a listing
            assert "sentinel.engine.records" not in modules and "sentinel.engine.events" not in modules, args


def test_a_config_broken_after_its_stamp_still_fails_every_command(sentinel_home, cli, configure):
    configure()
    assert json.loads(cli("runs", "--json", check=0).stdout) == []
    (sentinel_home / "config.yaml").write_text("limits: 5\n")
    for args in (["runs"], ["approvals"], ["runs", "--json"]):
        proc = cli(*args)
        assert proc.returncode == 2 and "config.yaml: limits" in proc.stderr, proc.stderr


def test_usage_errors_and_help_still_come_from_typer(cli, configure):
    configure()
    proc = cli("approvals", "--jsn")
    assert proc.returncode == 2 and "No such option" in proc.stderr
    proc = cli("show")
    assert proc.returncode == 2 and "Missing argument" in proc.stderr
    assert "List pending approvals." in cli("approvals", "--help", check=0).stdout


def test_a_run_whose_policy_was_checked_before_starts_without_the_shell_parser(sentinel_home, cli, configure,
                                                                               scripted_server):
    """The policy's examples are parsed once per policy (a stamp), not at every run's start (what a rule decides
    is never stamped: tests/policy/test_action_policy.py); Muzzle's upstream shares the openai client's HTTP stack."""
    server = scripted_server(["done."] * 2)
    configure(server=server)
    env = {**__import__("os").environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "k", "SENTINEL_MODE": "local"}
    cli("run", "say done", env={"SENTINEL_MODE": "local"})  # checks the policy's examples and stamps it
    assert (sentinel_home / "state" / "policy-examples.valid").is_file()
    modules = imported_by(["run", "say done"], env)
    assert "bashlex" not in modules and "httpx" not in modules, sorted(m for m in modules if "bash" in m or "http" in m)

