"""The token store: hashes only, grants, expiry, spending; system-mode ownership when root issues."""

from __future__ import annotations

import os
import pwd
import stat
import time

import pytest

from sentinel.muzzle import Budgets, issue_token
from sentinel.muzzle.tokens import TokenStore


def test_only_a_hash_of_each_token_is_stored(tmp_path):
    path = tmp_path / "store" / "muzzle.db"
    token = issue_token("ana", "r-1", ["fake/m"], 60, store=path)
    assert token.startswith("smz_") and len(token) > 40
    for name in os.listdir(path.parent):
        assert token.encode() not in (path.parent / name).read_bytes()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    store = TokenStore.open(path)
    grant = store.lookup(token)
    assert (grant.agent, grant.run_id, grant.models, grant.expired) == ("ana", "r-1", ("fake/m",), False)
    assert store.lookup(token + "x") is None
    store.close()


def test_grants_match_globs_and_expire(tmp_path):
    store = TokenStore.open(tmp_path / "m.db")
    token = store.issue("ana", "r-1", ["ollama/*", "openai/gpt-5-mini"], 0.05, Budgets(run_tokens=10))
    grant = store.lookup(token)
    assert grant.allows("ollama/qwen3:4b") and grant.allows("openai/gpt-5-mini") and not grant.allows("openai/gpt-5")
    assert grant.budgets.run_tokens == 10
    time.sleep(0.06)
    assert store.lookup(token).expired
    store.close()


def test_spending_is_per_run_and_per_agent_day(tmp_path):
    store = TokenStore.open(tmp_path / "m.db")
    a = store.lookup(store.issue("ana", "r-1", ["*"], 60))
    b = store.lookup(store.issue("ana", "r-2", ["*"], 60))
    store.charge(a, 100)
    store.charge(b, 50)
    assert store.spent(a).run == 100 and store.spent(b).run == 50 and store.spent(a).agent_today == 150
    assert store.spent(a).over(Budgets(run_tokens=100)) == "run budget spent (100 of 100 tokens)"
    assert store.spent(b).over(Budgets(run_tokens=100, agent_daily_tokens=1000)) is None
    assert store.run_usage("r-1") == {"tokens": 100, "calls": 1}
    store.close()


def test_the_redaction_key_is_made_once(tmp_path):
    store = TokenStore.open(tmp_path / "m.db")
    key = store.redaction_key()
    store.close()
    again = TokenStore.open(tmp_path / "m.db")
    assert again.redaction_key() == key and len(key) == 32
    again.close()


def test_a_symlink_in_place_of_the_store_is_refused(tmp_path):
    from sentinel.errors import SentinelError

    (tmp_path / "elsewhere").write_text("x")
    (tmp_path / "m.db").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SentinelError, match="cannot open the token store"):
        TokenStore.open(tmp_path / "m.db")


def test_issuing_beside_a_live_store_keeps_it_readable(tmp_path):
    """Local mode: the in-process Muzzle holds the store open while the engine issues each turn's token
    through a second store, and another `sentinel` process uses the file too. Nothing may drop the live
    connection's locks, or that process removes the WAL index under it ("database disk image is malformed")."""
    import subprocess
    import sys

    path = tmp_path / "muzzle.db"
    live = TokenStore.open(path)
    token = live.issue("ana", "r-1", ["fake/m"], 60)
    assert live.lookup(token) is not None
    issue_token("ana", "r-2", ["fake/m"], 60, store=path)  # the next turn's token, this process
    other = ("import sys; from sentinel.muzzle.tokens import TokenStore\n"
             "s = TokenStore.open(__import__('pathlib').Path(sys.argv[1])); s.issue('bo', 'r-3', ['fake/m'], 60)\n"
             "s.close()")
    subprocess.run([sys.executable, "-c", other, str(path)], check=True)
    assert (tmp_path / "muzzle.db-shm").exists()
    grant = live.lookup(token)
    assert grant is not None and grant.run_id == "r-1"
    assert live.lookup(issue_token("ana", "r-4", ["fake/m"], 60, store=path)).run_id == "r-4"
    live.close()


@pytest.mark.root
def test_root_issuing_into_muzzles_store_keeps_it_muzzles(tmp_path):
    nobody = pwd.getpwnam("nobody")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.chown(state, nobody.pw_uid, nobody.pw_gid)
    token = issue_token("ana", "r-1", ["fake/m"], 60, store=state / "muzzle.db")
    assert token
    for name in os.listdir(state):
        assert (state / name).stat().st_uid == nobody.pw_uid, name


@pytest.mark.root
def test_system_setup_creates_user_files_and_modes(tmp_path):
    from sentinel.muzzle.system import setup

    keys = tmp_path / "etc" / "muzzle" / "keys.env"
    done = setup(user="nobody", keys_file=keys, state_dir=tmp_path / "var")
    nobody = pwd.getpwnam("nobody")
    assert (done.uid, done.gid) == (nobody.pw_uid, nobody.pw_gid)
    st = keys.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == nobody.pw_uid
    assert stat.S_IMODE(keys.parent.stat().st_mode) == 0o750 and keys.parent.stat().st_uid == 0
    var = (tmp_path / "var").stat()
    assert stat.S_IMODE(var.st_mode) == 0o700 and var.st_uid == nobody.pw_uid
    keys.write_text("OPENAI_API_KEY=sk-kept\n")
    setup(user="nobody", keys_file=keys, state_dir=tmp_path / "var")  # idempotent: never overwrites keys
    assert keys.read_text() == "OPENAI_API_KEY=sk-kept\n"


def test_system_mode_reads_keys_from_its_file_first(tmp_path, monkeypatch):
    from sentinel.config import Config
    from sentinel.muzzle.layout import Credentials

    keys = tmp_path / "keys.env"
    keys.write_text("# comment\nexport OPENAI_API_KEY='sk-from-file'\nOTHER=1\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    cfg = Config()
    assert Credentials(cfg, keys).key_for("openai") == "sk-from-file"
    assert Credentials(cfg, None).key_for("openai") == "sk-from-env"
    assert Credentials(cfg, keys).known_secrets() == [("upstream_key", "sk-from-file")]


def test_a_store_made_by_an_earlier_version_keeps_its_tokens(tmp_path):
    """Earlier versions ran their own migration loop into a `migrations` table; the shared runner reads it."""
    import sqlite3

    from sentinel.muzzle.tokens import MIGRATIONS

    path = tmp_path / "muzzle.db"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    old.executescript(MIGRATIONS[0][1])
    old.execute("INSERT INTO migrations VALUES ('001_tokens', 0)")
    old.execute("INSERT INTO run_usage VALUES ('r-1', 7, 1)")
    old.commit()
    old.close()
    store = TokenStore.open(path)
    assert store.run_usage("r-1") == {"tokens": 7, "calls": 1}
    token = store.issue("ana", "r-1", ["fake/m"], 60)
    store.charge(store.lookup(token), 5)
    assert store.run_usage("r-1") == {"tokens": 12, "calls": 2}
    store.close()
