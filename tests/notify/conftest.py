"""Notification fixtures: loopback receivers (tests/notify/receivers.py) and runs paused on a `bash` call."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from receivers import Smtp, Webhook  # noqa: E402

BASH = [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> ran.txt"}}]}, "All done."]


@pytest.fixture
def webhook():
    started: list[Webhook] = []

    def start(**kw) -> Webhook:
        started.append(Webhook(**kw))
        return started[-1]

    yield start
    for w in started:
        w.stop()


@pytest.fixture
def smtp():
    server = Smtp()
    yield server
    server.stop()


@pytest.fixture
def notify_config(scripted_server, configure, sentinel_home):
    """notify_config(targets, **web) -> writes config.yaml: the scripted model pauses on bash, then answers."""
    server = scripted_server(BASH)

    def write(targets, **web):
        return configure({"notify": targets, **({"web": web} if web else {})}, server=server)

    return write


@pytest.fixture(autouse=True)
def no_deliverer(sentinel_home):
    """After the test: wait for the home's detached deliverer to exit (it holds state/notify.lock)."""
    yield
    import time

    from sentinel import paths

    if not paths.state_dir(sentinel_home).is_dir():
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        fd = paths.try_lock(paths.state_dir(sentinel_home) / "notify.lock")
        if fd is not None:
            import os

            os.close(fd)
            return
        time.sleep(0.05)
    raise AssertionError("the notification deliverer is still running")
