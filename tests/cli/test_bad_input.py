"""Bad input gets one line naming the file, field or argument; exit 2; nothing persisted is lost."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("text,expected", [
    ("default_model: [1, 2]\n", "config.yaml: default_model: Input should be a valid string"),
    ("limits:\n  max_steps: -1\n", "config.yaml: limits.max_steps: Input should be greater than or equal to 1"),
    ("providers:\n  fake: {url: x}\n", "config.yaml: providers.fake.base_url: Field required"),
    ("bogus_key: 1\n", "config.yaml: bogus_key: Extra inputs are not permitted"),
    ("default_model: [\n", "config.yaml: line 2: invalid YAML"),
])
def test_bad_config_is_one_line(text, expected, sentinel_home, cli):
    (sentinel_home / "config.yaml").write_text(text)
    proc = cli("run", "hello")
    assert proc.returncode == 2
    assert expected in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_the_issue_config_shape_works(sentinel_home, cli, scripted_server):
    server = scripted_server(["hi"])
    (sentinel_home / "config.yaml").write_text(
        f"default_model: fake/m\nproviders:\n  fake:\n    base_url: {server.base_url}\n    api_key_env: FAKE_KEY\n"
        "leash: {tools: plain}\n")
    assert cli("run", "hello", check=4).stdout.strip() == "hi"


@pytest.mark.parametrize("args,expected", [
    (["run", "x", "--model", "nomodel"], "expected provider/model"),
    (["run", "x", "--model", "nope/m"], "unknown provider 'nope'"),
    (["run", "x", "--model", "local/no-such-model"], "unknown local model"),
    (["run", "x", "--model", "local/missing.gguf"], "muzzle: {local_models:"),
    (["run", "x", "--agent", "ghost"], "no agent 'ghost'"),
    (["run", "x", "--workspace", "/does/not/exist"], "--workspace"),
    (["show", "r-missing"], "no run 'r-missing'"),
    (["approve", "a-missing"], "no approval 'a-missing'"),
])
def test_bad_arguments_are_one_line(args, expected, cli, configure):
    configure()
    proc = cli(*args)
    assert proc.returncode == 2 and expected in proc.stderr and "Traceback" not in proc.stderr


def test_bad_config_does_not_lose_existing_runs(sentinel_home, cli, configure, scripted_server):
    configure(server=scripted_server(["ok"]))
    run_id = cli.json("run", "first", "--json", check=4)["id"]
    good = (sentinel_home / "config.yaml").read_text()
    (sentinel_home / "config.yaml").write_text("limits: 5\n")
    assert cli("runs").returncode == 2
    (sentinel_home / "config.yaml").write_text(good)
    assert [r["id"] for r in cli.json("runs", "--json")] == [run_id]


@pytest.mark.parametrize("name", ["sentinel.db", "muzzle.db"])
def test_a_damaged_database_is_one_line_naming_it_and_is_left_in_place(name, sentinel_home, cli, configure):
    configure()
    state = sentinel_home / "state"
    state.mkdir(exist_ok=True)
    damaged = b"\x13not sqlite at all\n" * 400
    (state / name).write_bytes(damaged)
    proc = cli("run", "hello")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip() == f"error: {state / name}: file is not a database; move it aside to start a new one"
    assert (state / name).read_bytes() == damaged  # the operator's to inspect or move, never overwritten


def _damage_runs_pages(path):
    """Overwrite the pages of the runs table and its indexes, keep the header and schema: the damage SQLite
    finds only when a query reads a run (a disk's bad sector, a torn copy), not when the file is opened."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        roots = [r for (r,) in conn.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name='runs'")]
    conn.close()
    data = bytearray(path.read_bytes())
    for root in roots:
        data[(root - 1) * page:root * page] = b"\xa5" * page
    path.write_bytes(bytes(data))
    return bytes(data)


@pytest.mark.parametrize("args", [["status"], ["runs"], ["run", "hello"], ["show", "RUN"]])
def test_a_database_damaged_after_its_header_is_one_line(args, sentinel_home, cli, configure, scripted_server):
    configure(server=scripted_server(["ok"]))
    run_id = cli.json("run", "first", "--json", check=4)["id"]
    db = sentinel_home / "state" / "sentinel.db"
    damaged = _damage_runs_pages(db)
    proc = cli(*[run_id if a == "RUN" else a for a in args])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {db}: database disk image is malformed; move it aside to start a new one"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert db.read_bytes() == damaged
