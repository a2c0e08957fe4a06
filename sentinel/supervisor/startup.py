"""What the supervisor sets up before its loop: its root-only state directory and store (or the store many
hosts share), the operator socket and the agent door."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from sentinel import paths, unixsock
from sentinel.engine.store import Store
from sentinel.errors import UsageError
from sentinel.supervisor import layout

if TYPE_CHECKING:
    from sentinel.config import Config


def system_config() -> Config:
    from sentinel import config as config_mod

    return config_mod.load(layout.etc_dir())


def open_store(state_dir: Path, config: Config | None = None) -> Store:
    """The supervisor database: root-only directory (0700) and files (0600); or, when the operator's config
    names `store: postgresql://...`, the database the supervisors of many hosts share (docs/system-mode.md)."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = os.lstat(state_dir)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:
        raise UsageError(f"{state_dir}: must be a directory owned by root")
    os.chmod(state_dir, 0o700)
    config = config or system_config()
    if config.store:
        return Store.open(config.store, host=config.system.host)
    store = Store.open(layout.db_path(state_dir), host=config.system.host)
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{layout.db_path(state_dir)}{suffix}")
        if path.exists():
            os.chmod(path, 0o600)
    return store


def hold(state_dir: Path) -> int:
    """The supervisor's lock on its state directory, held through the returned fd for its life: one supervisor
    per state, so a second one started beside it (by hand, by systemd) stops here, before it touches the
    egress table, the sockets or a run. The kernel lets go when the process ends, however it ends."""
    path = state_dir / "supervisor.lock"
    fd = paths.try_lock(path)
    if fd is None:
        raise UsageError(f"a supervisor already runs on {state_dir} (it holds {path})")
    return fd


def listen(path: Path, gid: int) -> socket.socket:
    """Bind the operator socket: root:<operators> 0660, in a directory other users cannot replace."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o750)
        os.chown(path.parent, 0, gid)
        os.chmod(path.parent, 0o750)
    _check_stale(path)
    return _nonblocking(unixsock.listen(path, 0o660, gid=gid))


def listen_door(path: Path) -> socket.socket:
    """Bind the agent door: 0666 in a root 0755 directory (agentdoor.py decides who gets anything)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    st = os.lstat(path.parent)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:
        raise UsageError(f"{path.parent}: must be a directory owned by root")
    os.chmod(path.parent, 0o755)
    _check_stale(path)
    return _nonblocking(unixsock.listen(path, 0o666))


def _nonblocking(sock: socket.socket) -> socket.socket:
    sock.setblocking(False)
    return sock


def _check_stale(path: Path) -> None:
    """What is at `path` may be replaced: nothing, or a socket nobody listens on (a supervisor that died; the
    rename in unixsock.listen replaces it). A socket that answers is another supervisor's, on another state
    directory (this one's lock is held): refused rather than taken from under it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise UsageError(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
        raise UsageError(f"a supervisor is already listening on {path}")
    except (ConnectionRefusedError, FileNotFoundError):
        pass
    finally:
        probe.close()
