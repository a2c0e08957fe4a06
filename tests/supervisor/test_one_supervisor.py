"""One supervisor per state directory, and its sockets whole when they appear.

A second `sentinel supervisor` started beside a running one (by hand, by a service manager) used to probe the
operator socket, and in the moment between the first one's bind and listen a probe is refused: it unlinked the
live socket and bound its own, and two supervisors recovered and ran the same runs. Now the second stops at the
state directory's lock, before it touches the egress table, the sockets or a run; and a socket path names a
listener only once it listens (sentinel/unixsock.py), so a client never finds the path there and refused."""

from __future__ import annotations

import os
import socket
import stat
import subprocess

import pytest

from sx_helpers import PY, _answers

pytestmark = pytest.mark.root


def test_a_second_supervisor_on_the_same_state_stops_with_one_line(system, supervisor):
    from sentinel.client.paths import agent_socket_path

    first = supervisor()
    door = agent_socket_path()
    before = os.lstat(system.socket).st_ino, os.lstat(door).st_ino
    second = subprocess.run([PY, "-m", "sentinel", "supervisor"], env={**os.environ, **system.env},
                            capture_output=True, text=True, timeout=60)
    assert second.returncode == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "a supervisor already runs on" in lines[0], second.stderr
    assert "Traceback" not in second.stderr
    assert (os.lstat(system.socket).st_ino, os.lstat(door).st_ino) == before
    assert _answers(system.socket) and first.proc.poll() is None


def test_a_second_supervisor_in_the_first_one_s_start_leaves_its_socket_alone(system):
    """The first one caught between bind and listen (its lock held, its socket bound and not yet listening,
    which refuses a probe): the second stops at the lock and leaves that socket where it is."""
    from sentinel.supervisor import startup

    system.state.mkdir(mode=0o700)
    lock = startup.hold(system.state)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as bound:
            bound.bind(str(system.socket))
            inode = os.lstat(system.socket).st_ino
            second = subprocess.run([PY, "-m", "sentinel", "supervisor"], env={**os.environ, **system.env},
                                    capture_output=True, text=True, timeout=60)
            assert second.returncode == 2 and "a supervisor already runs on" in second.stderr, second.stderr
            assert os.lstat(system.socket).st_ino == inode
            bound.listen(1)
            assert _answers(system.socket)
    finally:
        os.close(lock)


def test_a_killed_supervisor_s_sockets_are_replaced_at_its_restart(system, supervisor):
    from sentinel.client.paths import agent_socket_path

    supervisor().kill9()
    door = agent_socket_path()
    assert stat.S_ISSOCK(os.lstat(system.socket).st_mode) and not _answers(system.socket)  # left behind
    supervisor()
    assert _answers(system.socket) and _answers(door)
    assert stat.S_IMODE(os.lstat(system.socket).st_mode) == 0o660
    assert stat.S_IMODE(os.lstat(door).st_mode) == 0o666
    assert sorted(p.name for p in system.socket.parent.iterdir() if p.name.startswith(".")) == []


def test_a_listening_socket_of_another_supervisor_is_not_taken(system):
    """Another state directory, the same socket path: the one listening there keeps it."""
    from sentinel.errors import UsageError
    from sentinel.supervisor import startup

    system.socket.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as other:
        other.bind(str(system.socket))
        other.listen(1)
        with pytest.raises(UsageError, match="already listening"):
            startup.listen(system.socket, os.getgid())
        assert _answers(system.socket)
