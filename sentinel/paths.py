"""Where state lives: `$SENTINEL_HOME` (default `~/.sentinel`) and its layout (docs/architecture.md, State)."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from sentinel.errors import Damaged, SentinelError

PACKAGE_DIR = Path(__file__).resolve().parent
# Data shipped next to the package in a source checkout; falls back to package data when installed.
REPO_DIR = PACKAGE_DIR.parent


def home() -> Path:
    env = os.environ.get("SENTINEL_HOME")
    return Path(env).expanduser() if env else Path.home() / ".sentinel"


def data_dir(name: str) -> Path:
    """A top-level data folder (`policies`, `souls`, `skills`) from the checkout or the installed package."""
    for candidate in (REPO_DIR / name, PACKAGE_DIR / "data" / name):
        if candidate.is_dir():
            return candidate
    return REPO_DIR / name


def runs_dir(root: Path | None = None) -> Path:
    return (root or home()) / "runs"


def state_dir(root: Path | None = None) -> Path:
    return (root or home()) / "state"


def workspace_dir(root: Path | None = None) -> Path:
    return (root or home()) / "workspace"


def write_atomic(path: Path, text: str, mode: int = 0o600, sync: bool = True, keep: bool = False) -> None:
    """Replace `path` with `text` in one step (temp file in the same directory, fsync, rename), so a
    reader never sees half a file; a symlink at `path` is replaced, never followed. `sync=False` skips
    the fsync for files rebuilt from others (a crash may lose the new version, never leave half of it).
    `keep=True`: the new file gets the owner, group and mode of the one it replaces (`mode` only when there
    is none): a system file a command rewrites stays as setup made it, whoever runs the command."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600 if keep else mode)
    try:
        # a lone surrogate (an agent-made file name that is not UTF-8, quoted in a note) is written as its escape
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            if keep:
                _set_owner(fd, path, mode)
            f.write(text)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _set_owner(fd: int, like: Path, mode: int) -> None:
    """Give the new file at `fd` the owner and mode of `like` (when it is a regular file), else `mode`. The
    file is created 0600 and opened up only after its owner is right, so no one reads it in between."""
    import stat as stat_mod

    try:
        st = os.lstat(like)
    except FileNotFoundError:
        st = None
    if st is None or not stat_mod.S_ISREG(st.st_mode):
        os.fchmod(fd, mode)
        return
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        os.fchown(fd, st.st_uid, st.st_gid)  # root keeps root:GROUP; anyone else may only keep their own
    os.fchmod(fd, stat_mod.S_IMODE(st.st_mode))


def connect_wal(path: Path, timeout_s: float) -> sqlite3.Connection:
    """A SQLite database in WAL mode, autocommit, usable from any thread; a lock waits up to `timeout_s`.

    Turning a new database to WAL takes a lock SQLite does not wait for: when two processes open a fresh
    home at once (`sentinel run &` then `sentinel runs`), the one that loses retries instead of failing."""
    try:
        conn = sqlite3.connect(str(path), timeout=timeout_s, isolation_level=None, check_same_thread=False,
                               factory=Checked)
    except sqlite3.Error as exc:
        raise SentinelError(f"{path}: cannot open the database ({exc})") from None
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) and time.monotonic() <= deadline:
                time.sleep(0.005)
                continue
            conn.close()
            raise SentinelError(f"{path}: cannot open the database ({exc})") from None
        except Damaged:  # "file is not a database": damaged, or something else in its place
            conn.close()
            raise
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def _damaged(path: str, exc: sqlite3.DatabaseError) -> BaseException:
    """SQLite's own "damaged" errors (a bad header, a malformed page) are exactly `DatabaseError`; its
    subclasses (locked, constraint, bad SQL) are something else and pass through."""
    if type(exc) is not sqlite3.DatabaseError:
        return exc
    return Damaged(f"{path}: {exc}; move it aside to start a new one")


class _CheckedCursor(sqlite3.Cursor):
    """A cursor whose damage, met while rows are read, is one `Damaged` naming the file."""

    def _fail(self, exc: sqlite3.DatabaseError) -> BaseException:
        return _damaged(getattr(self.connection, "path", "database"), exc)

    # untyped: sqlite3's own types for parameters and rows (typeshed types them so)
    def execute(self, sql: str, parameters: Any = (), /) -> "_CheckedCursor":
        try:
            return super().execute(sql, parameters)
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def fetchone(self) -> Any:  # untyped: as above
        try:
            return super().fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def fetchall(self) -> list[Any]:  # untyped: as above
        try:
            return super().fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def __next__(self) -> Any:  # untyped: as above
        try:
            return super().__next__()
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None


class Checked(sqlite3.Connection):
    """A connection on which a damaged database file (header or any page, found by any query, at open or
    later) raises one `Damaged` naming the file, never a traceback of SQLite's."""

    # untyped: sqlite3.connect's own arguments, passed on unchanged
    def __init__(self, database: str, *args: Any, **kwargs: Any):
        super().__init__(database, *args, **kwargs)
        self.path = database

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # untyped: sqlite3's parameters
        return self.cursor(_CheckedCursor).execute(sql, parameters)

    def executescript(self, script: str, /) -> sqlite3.Cursor:
        try:
            return super().executescript(script)
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.path, exc) from None


def try_lock(path: Path) -> int | None:
    """An exclusive flock on `path` (created 0600) held through the returned fd, or None when another holds it."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
