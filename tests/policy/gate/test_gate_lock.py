"""The priority lock: the judge never waits; waiting consumers give up after their limit."""

from __future__ import annotations

import fcntl
import os
import time

import pytest

from sentinel.policy.gate.lock import WAIT_S, LockTimeout, priority_lock


@pytest.fixture
def held(tmp_path):
    path = tmp_path / "s" / "ollama.lock"
    path.parent.mkdir()
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield str(path), fd
    os.close(fd)


def test_waits_match_the_seed():
    assert WAIT_S == {"judge": 0.0, "synthesizer": 5.0, "accumulator": 30.0, "scribe": 10.0}


def test_judge_never_waits(held):
    path, _ = held
    began = time.monotonic()
    with priority_lock(path, "judge") as got:
        assert got is False
    assert time.monotonic() - began < 0.05


def test_waiting_consumer_times_out_then_gets_it(held):
    path, fd = held
    began = time.monotonic()
    with pytest.raises(LockTimeout):
        with priority_lock(path, "synthesizer", wait_s=0.2):
            pass
    assert 0.2 <= time.monotonic() - began < 0.6
    fcntl.flock(fd, fcntl.LOCK_UN)
    with priority_lock(path, "scribe", wait_s=0.2) as got:
        assert got is True


def test_free_lock_is_taken_and_released(tmp_path):
    path = str(tmp_path / "x" / "ollama.lock")
    with priority_lock(path, "judge") as got:
        assert got is True
        with pytest.raises(LockTimeout):
            with priority_lock(path, "accumulator", wait_s=0.1):
                pass
    with priority_lock(path, "accumulator", wait_s=0.1) as got:
        assert got is True


def test_no_path_means_no_lock():
    with priority_lock(None, "synthesizer") as got:
        assert got is False
