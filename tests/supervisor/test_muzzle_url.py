"""Workers are pointed at the system Muzzle when it answers, and given a per-run token for it."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sentinel.config import Config
from sentinel.supervisor.workers import muzzle_url, worker_env


class _Health(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_system_muzzle_is_found_when_it_answers(monkeypatch):
    monkeypatch.delenv("SENTINEL_MUZZLE_URL", raising=False)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        port = httpd.server_address[1]
        assert muzzle_url(Config.model_validate({"muzzle": {"port": port}})) == f"http://127.0.0.1:{port}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert muzzle_url(Config.model_validate({"muzzle": {"port": port}})) is None  # nothing listens now
    assert muzzle_url(Config.model_validate({"muzzle": {"enabled": False}})) is None


def test_explicit_url_wins_and_reaches_the_worker_only_with_its_token(monkeypatch):
    import pwd

    monkeypatch.setenv("SENTINEL_MUZZLE_URL", "http://127.0.0.1:9999/v1")
    assert muzzle_url(Config()) == "http://127.0.0.1:9999/v1"
    pw = pwd.getpwuid(0)
    env = worker_env("r-1", pw, "smz_token", "http://127.0.0.1:9999/v1")
    assert env["SENTINEL_MODEL_BASE_URL"] == "http://127.0.0.1:9999/v1" and env["SENTINEL_MODEL_TOKEN"] == "smz_token"
    assert "SENTINEL_MODEL_TOKEN" not in worker_env("r-1", pw, None, None)
    assert not any("KEY" in k for k in env)


def test_the_run_token_allows_the_operators_judge_models(tmp_path, monkeypatch):
    import os

    import pytest

    from sentinel.supervisor.workers import system_judge_models

    if os.geteuid() != 0:
        pytest.skip("system rules are root-owned")
    monkeypatch.setenv("SENTINEL_ETC_DIR", str(tmp_path))
    assert system_judge_models(Config()) == []
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "billing.yaml").write_text(
        "trigger: file_write\nscope: ['src/**']\nmodel: qwen3:4b\nprompt: 'FILE {{file_path}}'\n")
    (tmp_path / "rules" / "cli.yaml").write_text(
        "trigger: bash\nscope: ['git *']\nbackend: claude\nprompt: 'CMD {{command}}'\n")
    assert system_judge_models(Config()) == ["ollama/qwen3:4b"]  # the claude CLI judge is not Muzzle's
