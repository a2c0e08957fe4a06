"""Spares (sentinel/agents/spares.py): an authored call runs on a confined interpreter started ahead of it,
one call per interpreter, under the call's own shape and timeout; none without an authored tool; and
nothing else can feed a waiting spare."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sentinel.agents import authored, spares
from sentinel.agents.execute import Limits
from sentinel.agents.settings import AuthoredToolSettings
from sentinel.leash import launch
from sentinel.tools import Registry, ToolContext

PARAMS = {"type": "object", "properties": {}}
PID = "import os\ndef run(args):\n    return str(os.getpid())\n"


@pytest.fixture
def ctx(tmp_path):
    (tmp_path / "ws").mkdir()
    return ToolContext(workspace=tmp_path / "ws", tools_mode="sandboxed", agent="")


@pytest.fixture
def cold(monkeypatch):
    """Counts the calls that launch cold (a fresh interpreter) instead of running on a spare."""
    launches = []
    real = launch.launch
    monkeypatch.setattr(launch, "launch", lambda *a, **kw: launches.append(a) or real(*a, **kw))
    return launches


def tools(tmp_path, settings, **code):
    registry = Registry([])
    made = authored.AuthoredTools(tmp_path / "home", registry, settings)
    for name, text in code.items():
        authored.write(tmp_path / "home", authored.Manifest(name=name, description="d", parameters=PARAMS), text)
    made.register_all()
    return made, registry


def call(registry, name, ctx):
    return registry.run(name, {}, ctx, registry.get(name).pin())


def test_calls_run_on_spares_started_ahead_one_call_each(tmp_path, ctx, cold):
    made, registry = tools(tmp_path, AuthoredToolSettings(), pid=PID)
    made.warm(ctx)  # as a run does once its registry is built
    pids = [call(registry, "pid", ctx) for _ in range(3)]
    assert all(p.isdigit() for p in pids), pids
    assert len(set(pids)) == 3  # a fresh interpreter for every call: nothing of one call reaches the next
    assert cold == []  # the first ran on the spare started by warm(), each later one on the spare started after


def test_a_call_of_another_shape_gives_the_spare_up_and_launches_cold(tmp_path, ctx, cold):
    settings = AuthoredToolSettings()
    made, registry = tools(tmp_path, settings, pid=PID)
    made.warm(ctx)
    other = ToolContext(workspace=ctx.workspace, tools_mode="sandboxed", agent="", output_max_chars=500)
    assert call(registry, "pid", other).isdigit()
    assert len(cold) == 1
    assert call(registry, "pid", other).isdigit() and len(cold) == 1  # the next spare has the new shape


def test_the_timeout_of_a_call_on_a_spare_counts_from_the_call(tmp_path, ctx, cold):
    settings = AuthoredToolSettings(timeout_s=1)
    made, registry = tools(tmp_path, settings, nap="import time\ndef run(args):\n    time.sleep(0.2)\n    return 'woke'\n",
                           sleeper="import time\ndef run(args):\n    time.sleep(60)\n    return 'woke'\n")
    made.warm(ctx)
    time.sleep(1.5)  # the spare waits longer than the call's timeout
    assert call(registry, "nap", ctx) == "woke"
    began = time.monotonic()
    assert call(registry, "sleeper", ctx) == "error: the tool timed out after 1s (its wall-clock limit) and was killed"
    assert time.monotonic() - began < 5
    assert cold == []


def test_no_spare_without_an_authored_tool_or_when_turned_off(tmp_path, ctx):
    made, _ = tools(tmp_path, AuthoredToolSettings())
    made.warm(ctx)
    assert spares._held is None
    made, registry = tools(tmp_path, AuthoredToolSettings(spare_idle_s=0), pid=PID)
    made.warm(ctx)
    assert call(registry, "pid", ctx).isdigit()
    assert spares._held is None


def test_another_tool_cannot_feed_a_waiting_spare_forged_code(tmp_path, ctx):
    """Attack: the agent's bash (same uid, same sandbox) writes a framed spec of its own into the spare's stdin."""
    import marshal

    made, registry = tools(tmp_path, AuthoredToolSettings(), pid=PID)
    made.warm(ctx)
    runner = _spare_pid()
    forged = marshal.dumps({"code": "def run(args):\n    return 'FORGED'\n", "args": {}, "nonce": "0" * 16,
                            "max_chars": 100})
    (ctx.workspace / "forged").write_bytes(b"%d\n" % len(forged) + forged)
    attack = launch.run_tool(["/bin/bash", "-c", f"cat forged > /proc/{runner}/fd/0 && echo WROTE"],
                             cwd=ctx.workspace, workspace=ctx.workspace, timeout_s=10)
    assert "WROTE" not in attack.output and "Permission denied" in attack.output
    assert call(registry, "pid", ctx) == str(runner)  # the genuine call ran, on that very spare


def test_the_runner_refuses_input_that_is_not_exactly_one_framed_spec(tmp_path):
    from sentinel.agents import execute

    limits = execute.limits_for(Limits(), AuthoredToolSettings())
    code, output, _ = execute._plain(execute._argv(), b"999\nshort", tmp_path, limits)
    assert code == 2 and "malformed input" in output
    assert execute._plain(execute._argv(), b"", tmp_path, limits)[:2] == (0, "")  # a spare given up: quiet


def _spare_pid() -> int:
    """The process reading the held spare's stdin pipe (as root we can see every process's fd 0)."""
    pipe = f"pipe:[{os.fstat(spares._held[2].stdin).st_ino}]"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for name in os.listdir("/proc"):
            try:
                if name.isdigit() and os.readlink(f"/proc/{name}/fd/0") == pipe and \
                        b"SENTINEL" in Path(f"/proc/{name}/cmdline").read_bytes():
                    return int(name)
            except OSError:
                continue
        time.sleep(0.05)
    raise AssertionError("no spare runner found")
