"""Workers reach models only through Muzzle: `sentinel supervisor` uses the Muzzle that answers, starts one
as Muzzle's own user when none does (and restarts it with backoff), and a run that cannot reach Muzzle
fails at once with one line naming what to start, never silently `running`."""

from __future__ import annotations

import json
import os
import pwd
import signal
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from sentinel.config import Config
from sentinel.models.loopback import Loopback
from sentinel.supervisor.muzzled import MuzzleKeeper
from sentinel.supervisor.workers import system_judge_models, worker_env
from sx_helpers import serve_model


class _Health(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_muzzle_that_answers_is_used_and_none_is_started(tmp_path, monkeypatch):
    monkeypatch.delenv("SENTINEL_MUZZLE_URL", raising=False)
    from freeport import free_port

    port = free_port()  # not an ephemeral one: it must stay free after `health` stops, for `off` below
    health = Loopback()
    health.listen(_Health, port=port)
    with health:
        keeper = MuzzleKeeper(Config.model_validate({"muzzle": {"port": port}}), tmp_path)
        assert keeper.url() == f"http://127.0.0.1:{port}/v1" and keeper.child is None
    off = MuzzleKeeper(Config.model_validate({"muzzle": {"port": port}, "system": {"start_muzzle": False}}), tmp_path)
    assert off.url() is None and off.child is None
    assert "start it" in off.why_down() and "\n" not in off.why_down()
    disabled = MuzzleKeeper(Config.model_validate({"muzzle": {"enabled": False}}), tmp_path)
    assert disabled.url() is None and "muzzle.enabled is false" in disabled.why_down()


def test_the_workers_environment_holds_no_secret(monkeypatch):
    monkeypatch.setenv("SENTINEL_MUZZLE_URL", "http://127.0.0.1:9999/v1")
    assert MuzzleKeeper(Config(), Path("/nonexistent")).url() == "http://127.0.0.1:9999/v1"
    env = worker_env("r-1", pwd.getpwuid(0))
    assert not any("TOKEN" in k or "KEY" in k or "MUZZLE" in k or "MODEL" in k for k in env)


def test_the_run_token_allows_the_operators_judge_models(tmp_path, monkeypatch):
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


def _muzzle_pids(user: str) -> list[int]:
    uid = pwd.getpwnam(user).pw_uid
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid and \
                    b"muzzle" in Path(f"/proc/{entry}/cmdline").read_bytes():
                pids.append(int(entry))
        except OSError:
            pass
    return pids


@pytest.mark.root
def test_the_supervisor_starts_muzzle_as_its_user_and_restarts_it(system, make_agent, sentinel_cmd, supervisor,
                                                                   scripted_server):
    name = make_agent()
    server = scripted_server(["fine"])
    serve_model(system.etc, server)
    supervisor()
    status = json.loads(sentinel_cmd("status", "--json", check=0).stdout)  # answered once start-up is over
    assert "answering" in status["muzzle"] and "not answering" not in status["muzzle"]
    [pid] = _muzzle_pids(system.muzzle_user)
    assert json.loads(sentinel_cmd("run", "one", "--agent", name, "--json", check=4).stdout)["output"] == "fine"
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not [p for p in _muzzle_pids(system.muzzle_user) if p != pid]:
        time.sleep(0.2)
    assert [p for p in _muzzle_pids(system.muzzle_user) if p != pid], "Muzzle was not restarted"
    assert json.loads(sentinel_cmd("run", "two", "--agent", name, "--json", check=4).stdout)["output"] == "fine"


@pytest.mark.root
def test_without_muzzle_a_run_fails_at_once_saying_what_to_start(system, make_agent, sentinel_cmd, supervisor,
                                                                  scripted_server):
    name = make_agent()
    serve_model(system.etc, scripted_server(["never"]), {"system": {"start_muzzle": False}})
    supervisor()
    began = time.monotonic()
    proc = sentinel_cmd("run", "hi", "--agent", name, "--json")
    assert proc.returncode == 1 and time.monotonic() - began < 30
    [line] = proc.stderr.strip().splitlines()
    assert "no Muzzle answers" in line and "start it" in line and "Traceback" not in line
    [run] = json.loads(sentinel_cmd("runs", "--json", check=0).stdout)
    shown = json.loads(sentinel_cmd("show", run["id"], "--json", check=0).stdout)
    assert shown["status"] == "interrupted" and "no Muzzle answers" in shown["error"]
