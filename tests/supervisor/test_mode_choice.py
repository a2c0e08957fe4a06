"""Which engine a command gets when a supervisor listens on the default socket: SENTINEL_HOME (or
SENTINEL_MODE=local) keeps local mode; otherwise the supervisor runs it and the command says so in one line."""

from __future__ import annotations

import socket

import pytest

from sentinel.client import system as client
from sentinel.client import paths as layout


@pytest.fixture
def default_socket(tmp_path, monkeypatch):
    """Something listening where the default socket is (no SENTINEL_SOCKET: the choice is implicit)."""
    path = tmp_path / "sentinel.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    monkeypatch.setattr(layout, "SOCKET", path)
    for name in ("SENTINEL_SOCKET", "SENTINEL_MODE"):
        monkeypatch.delenv(name, raising=False)
    yield path
    listener.close()


def test_sentinel_home_keeps_local_mode_beside_a_running_supervisor(default_socket, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SENTINEL_HOME", str(tmp_path / "home"))
    assert client.connect() is None
    assert capsys.readouterr().err == ""


def test_sentinel_home_with_a_named_socket_still_asks_that_supervisor(default_socket, monkeypatch, tmp_path):
    monkeypatch.setenv("SENTINEL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SENTINEL_SOCKET", str(default_socket))
    assert isinstance(client.connect(), client.SystemEngine)


def test_without_a_home_the_supervisor_runs_it_and_says_so_in_one_line(default_socket, monkeypatch, capsys):
    monkeypatch.delenv("SENTINEL_HOME", raising=False)
    engine = client.connect()
    assert isinstance(engine, client.SystemEngine)
    [line] = capsys.readouterr().err.strip().splitlines()
    assert str(default_socket) in line and "supervisor" in line and "SENTINEL_MODE=local" in line
    monkeypatch.setenv("SENTINEL_MODE", "local")
    assert client.connect() is None
