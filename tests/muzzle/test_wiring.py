"""Wiring: a run's model calls go through Muzzle in both modes; the CLI serves and issues tokens."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import openai
import pytest

from sentinel import config as config_mod
from sentinel.errors import UsageError

AWS = "AKIAIOSFODNN7EXAMPLE"


def test_a_run_reaches_its_model_only_through_muzzle_and_is_logged(scripted_server, configure, cli):
    server = scripted_server(["Deployed."])
    configure(server=server)
    out = cli.json("run", f"deploy using the key {AWS} please", "--json", check=4)
    assert out["status"] == "done_unverified" and out["output"] == "Deployed."
    sent = json.dumps(server.requests)
    assert AWS not in sent and "[REDACTED:aws_access_key:" in sent
    assert server.headers[0]["authorization"] == "Bearer test-key"  # Muzzle's key, read from the operator's env
    log = cli.json("muzzle", "log", "--json", "--run", out["id"], check=0)
    assert len(log) == 1 and log[0]["run"] == out["id"] and log[0]["decision"] == "redacted"
    assert log[0]["model"] == "fake/m" and log[0]["upstream"].startswith("fake http://127.0.0.1:")


def test_for_run_points_the_client_at_the_in_process_muzzle_with_a_run_token(scripted_server, configure,
                                                                             sentinel_home, monkeypatch):
    from sentinel.muzzle import model_for_run as for_run
    from sentinel.muzzle.tokens import TokenStore

    monkeypatch.setenv("FAKE_KEY", "sk-upstream-abcdefghijklmnopqrstuvwx")
    configure(server=scripted_server(["hi"]))
    config = config_mod.load(sentinel_home)
    client = for_run("fake/m", config, run_id="r-7", agent="ana")
    base = str(client._client.base_url)
    assert base.startswith("http://127.0.0.1:") and client._client.api_key.startswith("smz_")
    assert "sk-upstream" not in client._client.api_key
    assert client.complete([{"role": "user", "content": "q"}], []).content == "hi"
    store = TokenStore.open(sentinel_home / "state" / "muzzle.db")
    assert store.lookup(client._client.api_key).run_id == "r-7" and store.run_usage("r-7")["calls"] == 1
    store.close()
    again = for_run("fake/m", config, run_id="r-8", agent="ana")  # same listener, new token
    assert str(again._client.base_url) == base and again._client.api_key != client._client.api_key


def test_for_run_uses_the_supervisors_endpoint_and_starts_nothing(sentinel_home):
    from sentinel.muzzle import model_for_run as for_run
    from sentinel.muzzle import server

    client = for_run("openai/gpt-5-mini", config_mod.load(sentinel_home), run_id="r", agent="a",
                     endpoint=("http://127.0.0.1:9/v1", "smz_from_supervisor"))
    assert str(client._client.base_url) == "http://127.0.0.1:9/v1/" and client._client.api_key == "smz_from_supervisor"
    assert client.model == "openai/gpt-5-mini" and "muzzle" not in server._CURRENT


def test_for_run_without_muzzle_uses_the_backend_directly(configure, sentinel_home, tmp_path):
    from sentinel.muzzle import model_for_run as for_run
    from sentinel.models.scripted import ScriptedModel

    script = tmp_path / "s.yaml"
    script.write_text("- hi\n")
    configure({"muzzle": {"enabled": False}})
    model = for_run(f"scripted/{script}", config_mod.load(sentinel_home), run_id="r", agent="a")
    assert isinstance(model, ScriptedModel)


def test_for_run_rejects_impossible_models_before_the_run(configure, sentinel_home):
    from sentinel.muzzle import model_for_run as for_run

    configure()
    config = config_mod.load(sentinel_home)
    with pytest.raises(UsageError, match="unknown provider 'nowhere'"):
        for_run("nowhere/m", config, run_id="r", agent="a")
    with pytest.raises(UsageError, match="no script file"):
        for_run("scripted/missing.yaml", config, run_id="r", agent="a")


def test_cli_serves_and_issues_tokens(scripted_server, configure, sentinel_home, cli):
    configure(server=scripted_server(["served"]))
    token = cli("muzzle", "token", "--agent", "ana", "--models", "fake/m", "--ttl", "10m", check=0).stdout.strip()
    env = {**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "test-key"}
    proc = subprocess.Popen([sys.executable, "-m", "sentinel", "muzzle", "serve", "--port", "0"],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stderr.readline()
        assert line.startswith("muzzle listening on http://127.0.0.1:"), line
        url = line.split()[3]
        with openai.OpenAI(base_url=url, api_key=token, max_retries=0) as client:
            resp = client.chat.completions.create(model="fake/m", messages=[{"role": "user", "content": "q"}])
            assert resp.choices[0].message.content == "served"
        with openai.OpenAI(base_url=url, api_key="smz_wrong", max_retries=0) as client:
            with pytest.raises(openai.AuthenticationError):
                client.chat.completions.create(model="fake/m", messages=[{"role": "user", "content": "q"}])
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after a clean shutdown
        proc.stderr.close()
    listed = cli.json("muzzle", "tokens", "--json", check=0)
    assert [(t["agent"], t["models"]) for t in listed] == [("ana", ["fake/m"])] and token not in json.dumps(listed)


def test_cli_bad_ttl_is_a_one_line_usage_error(configure, cli):
    configure()
    proc = cli("muzzle", "token", "--agent", "ana", "--ttl", "soon", check=2)
    assert proc.stderr.strip() == "error: --ttl: 'soon' is not a duration (e.g. 900, 30m, 12h, 7d)"
