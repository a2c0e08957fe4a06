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


def _dead(pid: int) -> bool:
    """Gone, or a zombie (killed, waiting for whoever reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _launcher_of(pid: int) -> int:
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if ppid == pid and b"sentinel.leash.launcher" in cmdline:
            return int(name)
    raise AssertionError(f"no launcher under {pid}")


@pytest.mark.parametrize("dies", ["caller", "launcher"])
def test_the_caller_dying_ends_everything_the_command_started(dies, ws, sentinel_home):
    """A chat whose terminal closed, a worker the supervisor killed: the launcher dies with its caller and
    each keeper kills its whole tree before it goes: the command's children, and one that left its process
    group and session, never live on under pid 1. The launcher dying alone (the caller still waiting on the
    keeper) is the case where nothing but the keeper's own death signal is left to tell it."""
    caller = subprocess.Popen([sys.executable, "-c", f"""
import sys
from pathlib import Path
from sentinel.leash import launch
ws = Path({str(ws)!r})
launch.run_tool(["/bin/bash", "-c", "sleep 600 & echo $! > child; setsid sleep 601 & echo $! > escaped; "
                 "echo $$ > pid; wait"], cwd=ws, workspace=ws, timeout_s=600)
"""], env={**os.environ, "SENTINEL_HOME": str(sentinel_home)})
    tree: list[int] = []
    try:
        pid = pid_of(ws)
        tree = [pid, int((ws / "child").read_text()), int((ws / "escaped").read_text())]
        assert not any(map(_dead, tree))
        os.kill(caller.pid if dies == "caller" else _launcher_of(caller.pid), signal.SIGKILL)
        assert soon(lambda: all(map(_dead, tree)), within_s=20), [p for p in tree if not _dead(p)]
    finally:
        caller.kill()
        caller.wait()
        for p in tree:
            if not _dead(p):
                os.kill(p, signal.SIGKILL)


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
