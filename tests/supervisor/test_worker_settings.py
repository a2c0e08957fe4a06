"""Least privilege to the worker: it receives the operator's settings the agent loop reads (an allowlist), never
the store's DSN, notification targets and their tokens, the web console's, Muzzle's, providers, MCP servers its
run is not granted (their env and headers), or anything else holding a password; its environment holds none."""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import threading
import types
from pathlib import Path

import pytest
import yaml

from sentinel.config import Config
from sentinel.engine.store import Store
from sentinel.supervisor import workers
from sx_helpers import serve_model, write_as

SECRET = f"planted{secrets.token_hex(6)}"
# What the worker receives, key by key. Adding one is a decision: it must be a setting the agent loop reads,
# holding no secret (see WORKER_SETTINGS in sentinel/supervisor/workers.py).
RECEIVED = {"limits", "tools", "policy", "sandbox", "leash", "gate", "memory", "local", "context", "orchestration",
            "mcp_servers"}
SECRET_BEARING = {"store", "notify", "web", "providers", "muzzle", "system", "watchers"}
# a key naming a secret's value (`*_env` names a variable, and the worker's environment is built from nothing)
SECRET_NAMES = re.compile(r"(^|_)(password|passwd|token|secret|dsn|api_key|webhook|credentials?|headers|env)($|_)",
                          re.I)
VARIABLE_NAME = re.compile(r"_env$")


def every_secret() -> dict:
    """An operator's config with every secret-bearing setting set, each holding SECRET."""
    return {
        "store": f"postgresql://sentinel:{SECRET}@db.example:5432/sentinel",
        "notify": [
            {"type": "webhook", "url": f"https://hooks.example/{SECRET}", "headers": {"Authorization": SECRET}},
            {"type": "ntfy", "url": f"https://ntfy.example/{SECRET}", "headers": {"Authorization": f"Bearer {SECRET}"}},
            {"type": "telegram", "chat_id": SECRET, "token_env": f"TG_{SECRET}"},
            {"type": "email", "host": "smtp.example", "username": SECRET, "password_env": f"PW_{SECRET}",
             "from": "a@example.org", "to": ["b@example.org"]},
        ],
        "web": {"public_url": f"https://{SECRET}.example", "allowed_hosts": [f"{SECRET}.example"]},
        "providers": {"up": {"base_url": f"https://user:{SECRET}@api.example/v1", "api_key_env": f"K_{SECRET}",
                             "api_key_file": f"/etc/{SECRET}"}},
        "muzzle": {"keys_file": f"/etc/{SECRET}.env", "redact": [{"name": "x", "pattern": SECRET}],
                   "block": [{"id": "b", "pattern": SECRET}]},
        "system": {"models": [f"up/{SECRET}"]},
        "watchers": {"defaultHookModel": f"up/{SECRET}"},
        "default_model": f"up/{SECRET}",
        "mcp_servers": {
            "files": {"command": ["python3", "-m", "files_server"], "read_only": ["read_text"]},
            "vault": {"command": ["python3", "-m", "vault_server"], "env": {"VAULT_TOKEN": SECRET}},
            "docs": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": f"Bearer {SECRET}",
                                                                  "X-Key": {"secret": SECRET}}},
        },
    }


def _greeting(tmp_path: Path, profile: dict, servers: dict | None = None) -> dict:
    home = tmp_path / "home"
    (home / ".sentinel" / "agents").mkdir(parents=True)
    (home / ".sentinel" / "agents" / "boss.yaml").write_text(yaml.safe_dump(profile))
    store = Store.open(tmp_path / "sup.db")
    try:
        store.create_run("r-1", agent="boss", task="t", model="up/m", workspace=tmp_path, run_dir=tmp_path / "r-1")
        pw = types.SimpleNamespace(pw_dir=str(home), pw_uid=os.getuid(), pw_name="boss")
        settings = every_secret()
        for name, extra in (servers or {}).items():
            settings["mcp_servers"][name].update(extra)
        config = Config.model_validate(settings)
        return workers.greeting(store, store.get_run("r-1"), config, pw, {"base_url": "http://m", "token": "tok"})
    finally:
        store.close()


def _keys(value, path=""):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield f"{path}.{key}", key
            yield from _keys(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _keys(inner, f"{path}[{index}]")


def test_the_worker_receives_the_allowlisted_settings_and_no_secret(tmp_path):
    greeting = _greeting(tmp_path, {"name": "boss", "mcp": ["files"]})
    received = greeting["config"]
    assert set(received) == RECEIVED == set(workers.WORKER_SETTINGS)
    for key in Config.model_fields:  # key by key: every setting of the operator's is received or withheld
        assert (key in received) == (key in RECEIVED), key
        assert key not in SECRET_BEARING or key not in received, key
    assert list(received["mcp_servers"]) == ["files"]  # only the server its profile grants, to start it
    assert SECRET not in json.dumps(greeting)  # no DSN, target, URL, header, env value nor key file, anywhere
    named = [where for where, key in _keys(received) if SECRET_NAMES.search(key) and not VARIABLE_NAME.search(key)]
    assert named == [".mcp_servers.files.env", ".mcp_servers.files.headers"], named  # the granted server's own
    Config.model_validate(received)  # and what it receives is a whole, valid configuration


def test_a_run_granted_no_mcp_server_receives_none(tmp_path):
    assert _greeting(tmp_path, {"name": "boss"})["config"]["mcp_servers"] == {}


def test_a_profile_cannot_grant_itself_a_server_the_operator_gave_other_agents(tmp_path):
    """The profile is the agent's own file: a server's `agents:` (the operator's config) decides whose it is."""
    granted = {"name": "boss", "mcp": ["files", "vault"]}
    got = _greeting(tmp_path / "a", granted, {"vault": {"agents": ["accounts"]}})["config"]["mcp_servers"]
    assert set(got) == {"files"} and SECRET not in json.dumps(got)  # vault's token stays with the supervisor
    got = _greeting(tmp_path / "b", granted, {"vault": {"agents": ["accounts", "boss"]}})["config"]["mcp_servers"]
    assert set(got) == {"files", "vault"}  # listed: the grant stands


def test_an_unreadable_or_broken_profile_grants_no_server(tmp_path):
    assert _greeting(tmp_path, {"name": "boss", "mcp": "files"})["config"]["mcp_servers"] == {}


def test_the_workers_environment_is_built_from_nothing(monkeypatch):
    for name in ("OPENAI_API_KEY", "PGPASSWORD", "SENTINEL_STORE", "NTFY_TOKEN", "SMTP_PASSWORD"):
        monkeypatch.setenv(name, SECRET)
    pw = types.SimpleNamespace(pw_dir="/home/ag", pw_name="ag")
    env = workers.worker_env("r-1", pw)
    assert set(env) == {"HOME", "USER", "LOGNAME", "PATH", "LANG", "SENTINEL_HOME", "TMPDIR",
                        "SENTINEL_SUPERVISOR_FD", "SENTINEL_RUN_ID"}
    assert SECRET not in json.dumps(env)


@pytest.mark.root
def test_a_real_workers_environment_holds_no_secret_of_the_supervisors(system, make_agent, supervisor,
                                                                        scripted_server, monkeypatch):
    """The supervisor runs with secrets in its environment and config (a notify target's token, Muzzle's keys
    variable): the worker it spawns, read by root through /proc while it runs, holds none of them."""
    from sentinel.client.system import SystemEngine
    from test_worker_secrets import _worker_pid

    for name in ("OPENAI_API_KEY", "PGPASSWORD", "NTFY_TOKEN"):
        monkeypatch.setenv(name, SECRET)
    name = make_agent()
    write_as(name, Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "agents" / f"{name}.yaml",
             yaml.safe_dump({"name": name, "soul": "default"}))
    server = scripted_server([{"delay_ms": 4000, "content": "thinking"}])
    serve_model(system.etc, server, {"notify": [{"type": "file", "path": str(system.base / "notes.jsonl")}],
                                     "web": {"public_url": f"https://{SECRET}.example"}})
    supervisor()
    result: list = []
    thread = threading.Thread(target=lambda: result.append(SystemEngine(system.socket).start("wait", agent=name)))
    thread.start()
    pid = _worker_pid(pwd.getpwnam(name).pw_uid)
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    thread.join(60)
    keys = {entry.split(b"=", 1)[0].decode() for entry in environ if entry}
    assert keys <= {"HOME", "USER", "LOGNAME", "PATH", "LANG", "SENTINEL_HOME", "TMPDIR", "SENTINEL_SUPERVISOR_FD",
                    "SENTINEL_RUN_ID"}, keys
    assert not any(SECRET.encode() in entry for entry in environ)
    assert result and result[0].status == "done_unverified" and result[0].output == "thinking"


def test_a_worker_may_read_the_code_of_its_granted_servers_only(tmp_path, monkeypatch):
    """The worker's Landlock read set names the granted servers' `read:` paths and workdirs, not another's
    (a server kept for other agents may hold what this agent must not read)."""
    monkeypatch.setenv("SENTINEL_ETC_DIR", str(tmp_path / "etc"))
    code = {name: tmp_path / f"{name}-code" for name in ("files", "vault")}
    for path in code.values():
        path.mkdir()
    servers = {name: {"read": [str(path)], "workdir": str(tmp_path / f"{name}-wd")} for name, path in code.items()}
    greeting = _greeting(tmp_path, {"name": "boss", "mcp": ["files", "vault"]},
                         {**servers, "vault": {**servers["vault"], "agents": ["accounts"]}})
    granted = greeting["config"]["mcp_servers"]
    assert set(granted) == {"files"}
    pw = types.SimpleNamespace(pw_dir=str(tmp_path / "home"), pw_uid=65534, pw_gid=65534,  # not the owner
                               pw_name="boss")
    site = workers.Site(tmp_path / "state", Config.model_validate(every_secret()), [4000], "ops")
    launch = workers.worker_launch("r-1", {"workspace": str(tmp_path / "ws")}, pw, site, 0, 1, granted)
    reads = {str(p) for p in launch.profile.read}
    assert str(code["files"]) in reads and str(tmp_path / "files-wd") in reads
    assert not any(str(code["vault"]) in p or "vault-wd" in p for p in reads), reads


def test_an_undos_answer_is_relayed_with_why_each_path_was_not_put_back():
    """The supervisor relays what its undo process answers, field by field: the reasons too (a path kept because
    the person changed it, one never stored, one restored without its owner), so the operator reads them."""
    from sentinel.errors import UsageError

    answer = {"id": "r-1", "to": 0, "restored": ["a"], "removed": [], "missing": ["b", "c"], "incomplete": [2],
              "kept": ["b"], "unstored": ["c"], "attributes": [], "extra": "dropped"}
    relayed = workers.undo_result("r-1", answer)
    assert relayed == {**{k: v for k, v in answer.items() if k != "extra"}, "children": []}
    assert workers.undo_result("r-1", {**answer, "kept": []})["kept"] == []
    older = {k: v for k, v in answer.items() if k not in ("kept", "unstored", "attributes", "extra")}
    assert workers.undo_result("r-1", older)["kept"] == []  # an answer without reasons still relays its paths
    with pytest.raises(UsageError, match="result.kept"):
        workers.undo_result("r-1", {**answer, "kept": [1]})


def test_an_undos_answer_names_only_the_child_runs_the_supervisor_gave_it():
    """The undo of a run undoes its child runs in the same workspace too (their run directories are in its `hello`);
    the answer names each with its steps, and one naming a run it was not given is refused, not relayed."""
    from sentinel.errors import UsageError

    answer = {"id": "r-1", "to": 0, "restored": [], "removed": ["c.txt"], "missing": [], "incomplete": [],
              "children": [{"id": "r-kid", "steps": [1, 2], "incomplete": [2], "extra": "dropped"}]}
    relayed = workers.undo_result("r-1", answer, ["r-kid"])
    assert relayed["children"] == [{"id": "r-kid", "steps": [1, 2], "incomplete": [2]}]
    for bad in ([{"id": "r-other", "steps": [1], "incomplete": []}], [{"id": "r-kid", "steps": ["1"],
                                                                       "incomplete": []}], "r-kid", [None]):
        with pytest.raises(UsageError, match="result.children"):
            workers.undo_result("r-1", {**answer, "children": bad}, ["r-kid"])
