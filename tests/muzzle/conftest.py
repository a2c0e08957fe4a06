"""Fixtures: a Muzzle listener in this process in front of a ScriptedServer upstream, and the real openai client."""

from __future__ import annotations

import json

import openai
import pytest
import yaml

UPSTREAM_KEY = "sk-upstream-0123456789abcdefghijklmnop"


class Harness:
    def __init__(self, muzzle, config, upstream):
        self.muzzle = muzzle
        self.config = config
        self.upstream = upstream
        self.base_url = muzzle.base_url
        self.upstream_key = UPSTREAM_KEY
        self.clients = []

    def token(self, agent="ana", run_id="r-1", models=("fake/m",), ttl_s=600.0, **budgets):
        from sentinel.muzzle import Budgets, issue_token

        return issue_token(agent, run_id, list(models), ttl_s, Budgets(**budgets), store=self.muzzle.layout.store_path)

    def client(self, token=None, **kwargs):
        client = openai.OpenAI(base_url=self.base_url, api_key=token or self.token(), max_retries=0, timeout=20,
                               **kwargs)
        self.clients.append(client)
        return client

    def log(self):
        path = self.muzzle.layout.log_path
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def log_text(self):
        path = self.muzzle.layout.log_path
        return path.read_text() if path.exists() else ""


@pytest.fixture
def muzzle(scripted_server, sentinel_home, monkeypatch):
    """muzzle(replies, muzzle_settings=None, **server_kwargs) -> Harness; stopped after the test."""
    from sentinel import config as config_mod
    from sentinel.muzzle.layout import local_layout
    from sentinel.muzzle.server import InProcessMuzzle

    monkeypatch.setenv("FAKE_KEY", UPSTREAM_KEY)
    started = []

    def start(replies=("hello",), muzzle_settings=None, upstream_url=None, **server_kwargs):
        upstream = None
        if upstream_url is None:
            upstream = scripted_server(list(replies), **server_kwargs)
            upstream_url = upstream.base_url
        cfg = {"providers": {"fake": {"base_url": upstream_url, "api_key_env": "FAKE_KEY"}},
               "muzzle": muzzle_settings or {}}
        (sentinel_home / "config.yaml").write_text(yaml.safe_dump(cfg))
        config = config_mod.load(sentinel_home)
        proxy = InProcessMuzzle(config, local_layout(config, sentinel_home)).start()
        proxy.harness = Harness(proxy, config, upstream)
        started.append(proxy)
        return proxy.harness

    yield start
    for proxy in started:
        for client in proxy.harness.clients:
            client.close()
        proxy.stop()
