"""launch.start: a command launched ahead of its input. Its timeout counts from the hand-over, an idle bound
ends it if nothing comes, the caller giving it up or dying ends it, and no other tool can feed it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from sentinel.leash import launch, settings_cache
from sentinel.leash.profile import tool_profile


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    return path


def started(ws, command: str, timeout_s: float = 10, idle_s: float = 30) -> launch.Pending:
    prof = tool_profile(ws, settings_cache.policy_for(None, system=False), proxy=settings_cache.proxy())
    return launch.start(["/bin/bash", "-c", command], prof, cwd=ws, env=launch.base_env(ws), timeout_s=timeout_s,
                        idle_s=idle_s)


def pid_of(ws) -> int:
    """The command writes its pid to `pid` first thing."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = (ws / "pid").read_text().strip() if (ws / "pid").exists() else ""
        if text:
            return int(text)
        time.sleep(0.02)
    raise AssertionError("the command never started")


def soon(check, within_s: float = 5) -> bool:
    deadline = time.monotonic() + within_s
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return check()


def gone(pid: int) -> bool:
    return soon(lambda: not os.path.exists(f"/proc/{pid}"))


def test_the_timeout_starts_at_the_hand_over_not_the_launch(ws):
    pending = started(ws, "cat >/dev/null; echo handed; sleep 60", timeout_s=1)
    time.sleep(1.5)  # past the timeout: a clock started at the launch would have killed it by now
    assert not pending.ended()
    began = time.monotonic()
    res = pending.hand_over(b"call")
    assert res.timed_out and not res.unused and "handed" in res.output
    assert 0.9 < time.monotonic() - began < 5  # killed timeout_s after the hand-over


def test_a_command_never_handed_anything_dies_at_its_idle_bound_reported_unused(ws):
    pending = started(ws, "echo $$ > pid; cat >/dev/null; echo ran", idle_s=1)
    pid = pid_of(ws)
    assert gone(pid)
    assert soon(pending.ended)  # the keeper answers once it has collected the output
    res = pending.hand_over(b"")
    assert res.unused and res.timed_out and "ran" not in res.output


def test_a_command_given_up_ends(ws):
    pending = started(ws, "echo $$ > pid; cat >/dev/null; sleep 60")
    pid = pid_of(ws)
    pending.close()
    assert gone(pid)


def test_the_caller_dying_ends_the_command(ws, sentinel_home):
    caller = subprocess.Popen([sys.executable, "-c", f"""
import sys, time
sys.path.insert(0, {os.path.dirname(__file__)!r})
from pathlib import Path
from test_start import started
pending = started(Path({str(ws)!r}), "echo $$ > pid; cat >/dev/null; echo ran > ran")
time.sleep(60)
"""], env={**os.environ, "SENTINEL_HOME": str(sentinel_home)})
    try:
        pid = pid_of(ws)
        caller.send_signal(signal.SIGKILL)
        caller.wait()
        assert gone(pid)
    finally:
        caller.kill()
        caller.wait()


def test_another_tool_cannot_write_the_stdin_of_a_waiting_command_or_signal_it(ws):
    """Attack: a tool of the same agent (same uid) feeds a waiting spare its own input, or stops it."""
    pending = started(ws, "echo $$ > pid; cat > got")
    pid = pid_of(ws)
    attack = launch.run_tool(["/bin/bash", "-c", f"echo forged > /proc/{pid}/fd/0 || echo refused; "
                                                 f"kill -STOP {pid} || echo refused"],
                             cwd=ws, workspace=ws, timeout_s=10)
    assert attack.output.count("refused") == 2, attack.output
    res = pending.hand_over(b"genuine")
    assert res.exit_code == 0 and (ws / "got").read_text() == "genuine"
