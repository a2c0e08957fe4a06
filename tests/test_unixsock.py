"""A listener's path names it only once it listens, with its final mode: a client never finds it there and
refused (and takes the supervisor or model host for absent), never finds it looser than asked."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from sentinel import unixsock


class Watched(socket.socket):
    """A socket that notes, when `listen` is called on it, what its final path holds at that moment."""

    path: str = ""
    seen: list[str | None] = []

    def listen(self, backlog: int = 0, /) -> None:
        try:
            Watched.seen.append(oct(stat.S_IMODE(os.lstat(Watched.path).st_mode)))
        except FileNotFoundError:
            Watched.seen.append(None)
        super().listen(backlog)


@pytest.fixture
def watched(monkeypatch, tmp_path):
    Watched.seen = []
    monkeypatch.setattr(unixsock.socket, "socket", Watched)
    return tmp_path


def _connects(path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
            return True
        except ConnectionRefusedError:
            return False


def test_the_path_is_not_there_until_the_socket_listens(watched):
    (watched / "run").mkdir()
    path = watched / "run" / "op.sock"
    Watched.path = str(path)
    with unixsock.listen(path, 0o660):
        assert Watched.seen == [None]
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o660
        assert _connects(path)
    assert [p.name for p in path.parent.iterdir()] == ["op.sock"]  # no temporary name left behind


def test_a_stale_socket_is_replaced_in_one_step(watched):
    """A dead listener's socket stays a refusing socket (never missing) until the new one takes its name."""
    path = watched / "op.sock"
    Watched.path = str(path)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()
    assert not _connects(path)
    with unixsock.listen(path, 0o600):
        assert len(Watched.seen) == 1 and Watched.seen[0] is not None  # the old one, still in place
        assert _connects(path)


def test_long_paths_bind_through_the_directory(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = deep / "host.sock"
    assert len(str(path)) > 108
    with unixsock.listen(path, 0o600) as sock, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(unixsock.address(path))
        assert sock.accept()[0].close() is None
