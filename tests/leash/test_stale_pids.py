"""A process Sentinel started and already reaped is never signalled again: its pid may belong to anyone by then
(pid_max is 32,768 on many machines, and the supervisor and the tests start thousands of processes). Nor is a
model host's keeper that a status file left behind names: the pid is checked to still be that keeper."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from sentinel.leash.spawn import Spawned


def test_a_reaped_spawn_is_never_signalled_again(monkeypatch):
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    spawned = Spawned(proc.pid, os.pidfd_open(proc.pid), None)
    spawned.kill()  # before the reap: through its pidfd and its group
    assert spawned.reap() == -signal.SIGKILL
    proc.returncode = -9  # reaped by Spawned, not by Popen

    sent = []
    monkeypatch.setattr(os, "kill", lambda *a: sent.append(("kill", a)))
    monkeypatch.setattr(os, "killpg", lambda *a: sent.append(("killpg", a)))
    monkeypatch.setattr(signal, "pidfd_send_signal", lambda *a: sent.append(("pidfd", a)))
    spawned.kill()
    spawned.signal(signal.SIGTERM)
    assert sent == []


def test_a_stale_keeper_pid_in_a_status_file_is_left_alone(tmp_path):
    from sentinel.models.hosts import stop_all_of

    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    sock = tmp_path / "hosts" / "tiny.sock"
    sock.parent.mkdir()
    lock = os.open(sock.with_suffix(".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    import fcntl

    fcntl.flock(lock, fcntl.LOCK_EX)  # some keeper holds the lock, but the status names the bystander's pid
    sock.with_suffix(".json").write_text(json.dumps({"model": "tiny", "keeper_pid": bystander.pid, "pid": None}))
    try:
        stop_all_of([sock], timeout_s=0.2)
        assert bystander.poll() is None  # still running: it is no keeper of this socket
    finally:
        os.close(lock)
        bystander.kill()
        bystander.wait()
