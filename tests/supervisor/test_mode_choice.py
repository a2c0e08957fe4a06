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


def _as_nobody(work) -> tuple[int, str]:
    """Run `work()` (-> (exit code, text)) in a forked child as uid/gid 65534, no groups: a user who is no
    operator. Returns what it returned."""
    import os

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code, text = 99, "the child failed before running the command"
        try:
            os.close(read)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            code, text = work()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, never raised in a fork
            text = repr(exc)
        os.write(write, f"{code}\n{text}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        code, _, text = f.read().partition("\n")
    os.waitpid(pid, 0)
    return int(code), text


@pytest.mark.root
@pytest.mark.parametrize("with_home", [True, False])
def test_mcp_as_a_non_operator_beside_a_supervisor_follows_the_mode_rule(with_home, default_socket, monkeypatch,
                                                                         tmp_path):
    """The operator socket hidden in a root-only directory: `mcp add` and `mcp list` work on the user's own
    config.yaml (SENTINEL_HOME's, or ~/.sentinel's), as every other command's local mode does: no PermissionError."""
    import os

    from typer.testing import CliRunner

    from sentinel.cli.app import build

    import shutil
    import tempfile
    from pathlib import Path

    os.chmod(default_socket.parent, 0o700)
    home = Path(tempfile.mkdtemp(prefix="nobody-", dir="/tmp"))  # tmp_path's parents are root's alone
    os.chown(home, 65534, 65534)
    monkeypatch.setenv("HOME", str(home))
    if with_home:
        monkeypatch.setenv("SENTINEL_HOME", str(home / "sentinel-home"))
    else:
        monkeypatch.delenv("SENTINEL_HOME", raising=False)
    config = (home / "sentinel-home" if with_home else home / ".sentinel") / "config.yaml"

    def work() -> tuple[int, str]:
        app = build()
        added = CliRunner().invoke(app, ["mcp", "add", "notes", "--", "/bin/true"])
        if added.exit_code != 0:
            import traceback

            return added.exit_code, added.output + "".join(traceback.format_exception(*added.exc_info))
        listed = CliRunner().invoke(app, ["mcp", "list"])
        return listed.exit_code, f"{listed.output}{listed.exception!r}"

    code, text = _as_nobody(work)
    assert code == 0 and "notes" in text and "PermissionError" not in text, text
    try:
        assert "notes" in config.read_text() and config.stat().st_uid == 65534
    finally:
        shutil.rmtree(home)
