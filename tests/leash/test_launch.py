"""The launch API: output capture and truncation, stdin, exit codes, fail closed, concurrency, restart."""

from __future__ import annotations

import os
import threading
import time

import pytest

from sentinel.errors import ConfigError
from sentinel.leash import launch, lsm, prepared
from sentinel.leash.errors import SandboxUnavailable
from sentinel.leash.launch import run_tool


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    return path


def run(ws, argv, **kw):
    return run_tool(argv, cwd=ws, workspace=ws, timeout_s=kw.pop("timeout_s", 10), **kw)


def test_output_merged_and_truncated_with_note(ws):
    res = run(ws, ["/bin/bash", "-c", "echo out; echo err >&2; head -c 50000 /dev/zero | tr '\\0' a"],
              output_max_chars=1000)
    assert res.truncated and "characters truncated ...]" in res.output
    assert res.output.startswith("out\nerr\n") and len(res.output) < 1100


def test_stdin_exit_code_and_missing_command(ws):
    res = run(ws, ["/bin/bash", "-c", "read x; echo got $x; exit 3"], stdin=b"hello\n")
    assert (res.exit_code, res.output) == (3, "got hello\n")
    res = run(ws, ["no-such-command-xyz"])
    assert res.exit_code == 127 and "cannot execute no-such-command-xyz" in res.output


def test_env_is_minimal(ws, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "s3cret")
    res = run(ws, ["/usr/bin/env"], env={"EXTRA": "1"})
    assert "s3cret" not in res.output and "EXTRA=1" in res.output and f"HOME={ws}" in res.output


def test_fail_closed_when_a_layer_is_missing(ws, monkeypatch):
    monkeypatch.setattr(lsm, "abi_version", lambda: 3)
    monkeypatch.setattr(prepared, "_rulesets", type(prepared._rulesets)())
    with pytest.raises(SandboxUnavailable, match="landlock-tcp, landlock-scope.*best_effort"):
        run(ws, ["true"])
    res = run(ws, ["/bin/bash", "-c", "echo x > f; cat /etc/shadow"], sandbox="best_effort")
    assert {"landlock-tcp", "landlock-scope"} <= set(res.missing)
    assert "landlock-fs" in res.applied and (ws / "f").exists() and ":::" not in res.output


def test_bad_policy_is_one_line_error(ws, sentinel_home):
    (sentinel_home / "leash.yaml").write_text("limits:\n  memory_mb: lots\n")
    with pytest.raises(ConfigError) as err:
        run(ws, ["true"])
    assert str(err.value).startswith(f"{sentinel_home / 'leash.yaml'}: limits.memory_mb")
    assert "\n" not in str(err.value)
    (sentinel_home / "leash.yaml").write_text("allow_domains: ['not a domain']\nnetwork: true\n")
    with pytest.raises(ConfigError, match="allow_domains: .*'not a domain' is not a domain name"):
        run(ws, ["true"])


def test_concurrent_launches_run_in_parallel(ws):
    launch.ensure_launcher()
    results = []

    def one(i):
        results.append(run(ws, ["/bin/bash", "-c", f"sleep 0.5; echo {i}"]).output)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [f"{i}\n" for i in range(6)]
    assert time.monotonic() - start < 1.4  # the pool grew: two keepers alone would take 1.5 s


def test_keepers_are_reused_and_nothing_of_a_launch_reaches_the_next(ws):
    launch._reset()  # a fresh launcher: its two standing keepers, not a pool grown by earlier tests
    left = run(ws, ["/bin/sh", "-c", "setsid sleep 60 >/dev/null 2>&1 & echo $!"])
    grandchild = int(left.output)
    keepers, fds = set(), set()
    for _ in range(6):
        res = run(ws, ["/bin/sh", "-c", "echo $PPID; ls /proc/self/fd"])
        ppid, *open_fds = res.output.split()
        keepers.add(ppid)
        fds.update(open_fds)
    assert not os.path.exists(f"/proc/{grandchild}")  # killed when its launch ended
    assert fds == {"0", "1", "2", "3"}  # stdio, and the directory ls reads: no fd of an earlier launch
    assert len(keepers) < 6  # keepers serve launch after launch


def test_launcher_restarts_after_it_dies(ws):
    launch.ensure_launcher()
    old = launch._pid
    os.kill(old, 9)
    time.sleep(0.2)  # its spare keeper dies with it (pdeathsig)
    assert run(ws, ["/bin/echo", "back"]).output == "back\n"
    assert launch._pid != old


@pytest.mark.root
def test_sweep_removes_only_stale_empty_sentinel_groups():
    import subprocess as sp

    from sentinel.leash import cgroups

    stale = cgroups.Group.create("sentinel-test-stale")
    busy = cgroups.Group.create("sentinel-test-busy")
    if stale is None or busy is None:
        pytest.skip("no writable cgroup hierarchy here")
    sleeper = sp.Popen(["sleep", "30"])
    try:
        for d in busy.dirs:
            (d / "cgroup.procs").write_text(str(sleeper.pid))
        assert all(d.exists() for d in stale.dirs)  # too young
        # its own groups only: with no age limit, every empty group would go, among them one another test's
        # spawn made a moment ago and has not joined yet (its launch then failed: seen in a full run)
        cgroups.sweep(min_age_s=0, prefix="sentinel-test-")
        assert not any(d.exists() for d in stale.dirs)
        assert all(d.exists() for d in busy.dirs)  # a live member keeps its group
    finally:
        sleeper.kill()
        sleeper.wait()
        time.sleep(0.05)
        for d in busy.dirs:
            d.rmdir()


def test_cgroup_limits_are_lifted_for_the_next_launch_and_not_rewritten(tmp_path):
    from sentinel.leash import cgroups

    mem, pids = tmp_path / "memory.limit_in_bytes", tmp_path / "pids.max"
    group = cgroups.Group([tmp_path], {"memory": mem, "pids": pids}, [])
    assert group.set_limits(1 << 30, 64) == ["cgroup-memory", "cgroup-pids"]
    assert (mem.read_text(), pids.read_text()) == (str(1 << 30), "64")
    pids.write_text("unchanged")
    assert group.set_limits(None, 64) == ["cgroup-pids"]
    assert mem.read_text() == "-1"  # an unlimited launch after a limited one in the same keeper
    assert pids.read_text() == "unchanged"  # the same value is not written again


def test_keeper_take_times_out_and_sees_the_caller_hang_up():
    import socket

    from sentinel.leash import launch_keeper as keeper

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    assert keeper._take(theirs, 0.05) == (None, False)
    a, b = socket.socketpair()
    socket.send_fds(ours, [b"L"], [a.fileno()])
    conn, hung_up = keeper._take(theirs, 0.05)
    assert conn is not None and not hung_up
    assert os.get_inheritable(conn.fileno()) is False  # close-on-exec from the start
    conn.sendall(b"x")
    assert b.recv(1) == b"x"
    ours.close()
    assert keeper._take(theirs, None) == (None, True)
    for s in (theirs, a, b, conn):
        s.close()


def test_a_tool_can_run_a_leashed_command_itself(ws):
    """Nesting holds: Sentinel's own launcher works inside a tool (an agent at work on a project that uses it)."""
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    inner = ws / "inner"
    inner.mkdir()
    res = run(ws, ["/bin/sh", "-c", f"SENTINEL_HOME=$TMPDIR/home PYTHONPATH={repo} {sys.executable} -m sentinel leash "
                                    f"exec --workspace {inner} -- sh -c 'echo nested > f'"],
              timeout_s=60, extra_read=[str(repo)])
    assert res.exit_code == 0, res.output
    assert (inner / "f").read_text() == "nested\n"
