"""Why a host's stream broke is decided on the host's own word, not on a glance at /proc.

A killed model process closes its socket before the kernel turns it into a zombie, so a caller whose
stream just broke can see the dead process still "running". These tests hold that moment open: the
served process is a live `sleep` the status file still names, while a real Unix-socket server plays the
host's /health, answered by its successor (the crash) or by the same process (a failure elsewhere).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from sentinel.models.hosts import Hosts, Ready
from sentinel.models.settings import LocalSettings


class FakeHost:
    """A keeper's lock and status file, and a /health answered by `answer_pid` on the host's socket."""

    def __init__(self, directory: Path, served_pid: int, answer_pid: int, on_health=None):
        self.sock = directory / "hosts" / "tiny.sock"
        self.sock.parent.mkdir(parents=True)
        self.lock = os.open(self.sock.with_suffix(".lock"), os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self.lock, fcntl.LOCK_EX)  # a keeper holds it
        self.write_status({"state": "ready", "pid": served_pid, "keeper_pid": os.getpid()})
        self.answer_pid, self.on_health, self.asked = answer_pid, on_health, threading.Event()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.sock))
        self.listener.listen(8)
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()

    def write_status(self, data):
        self.sock.with_suffix(".json").write_text(json.dumps({"model": "tiny", **data}))

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                if self.on_health:
                    self.on_health(self)
                body = json.dumps({"ok": True, "pid": self.answer_pid}).encode()
                conn.sendall(b"HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n" + body)
                self.asked.set()

    def close(self):
        """Stop serving and join the thread: a test worker left with a thread cannot fork (Leash refuses to)."""
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close() alone does not
        self.listener.close()
        self.thread.join()
        os.close(self.lock)


@pytest.fixture
def served():
    """A live process standing for the model process the status file names."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc.pid
    proc.kill()
    proc.wait()


def hosts(tmp_path):
    return Hosts(tmp_path, LocalSettings())


def test_a_process_that_still_looks_alive_while_its_successor_answers_is_a_crash(tmp_path, served):
    def keeper_records_the_death(host):
        host.write_status({"state": "ready", "pid": host.answer_pid, "last_exit": "SIGKILL"})

    host = FakeHost(tmp_path, served, answer_pid=served + 100000, on_health=keeper_records_the_death)
    try:
        cause = hosts(tmp_path).cause("tiny", Ready(host.sock, served), wait_s=60)
    finally:
        host.close()
    assert host.asked.is_set()
    assert cause == "SIGKILL"


def test_a_process_that_answers_for_itself_was_not_the_cause(tmp_path, served):
    host = FakeHost(tmp_path, served, answer_pid=served)
    try:
        cause = hosts(tmp_path).cause("tiny", Ready(host.sock, served), wait_s=60)
    finally:
        host.close()
    assert host.asked.is_set() and cause is None


def test_a_keeper_gone_while_asking_is_named(tmp_path, served):
    def keeper_dies(host):
        os.close(host.lock)
        host.lock = os.open(os.devnull, os.O_RDONLY)

    host = FakeHost(tmp_path, served, answer_pid=0, on_health=keeper_dies)
    try:
        cause = hosts(tmp_path).cause("tiny", Ready(host.sock, served), wait_s=60)
    finally:
        host.close()
    assert cause == "the model host is gone"


def test_the_fake_host_leaves_no_thread_behind(tmp_path, served):
    before = threading.active_count()
    host = FakeHost(tmp_path, served, answer_pid=served)
    hosts(tmp_path).cause("tiny", Ready(host.sock, served), wait_s=60)
    host.close()
    assert threading.active_count() == before
