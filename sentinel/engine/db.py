"""The store's connection, on either backend: SQLite (the default, embedded) or PostgreSQL, which the supervisors
of many hosts share (`store: postgresql://...` in /etc/sentinel/config.yaml; docs/system-mode.md, many hosts).

The store writes one SQL dialect, SQLite's; on PostgreSQL each statement is translated once (`?` placeholders,
`REAL` as double precision, identity keys, the `user` column quoted) and rows read as SQLite's do (by index and
by name). Here too is the one `transaction()` and the one migration runner every database in Sentinel uses:
named, forward-only migrations recorded in a table, each applied once, whoever else opens the database at once.

    conn = connect("postgresql://sentinel@db.example/sentinel")    # or a Path: SQLite in WAL mode
    migrate(conn, MIGRATIONS)
    with transaction(conn):
        conn.execute("UPDATE approvals SET status=? WHERE id=? AND status='pending'", ("approved", aid))
"""

from __future__ import annotations

import functools
import re
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, Sequence

from sentinel import paths
from sentinel.errors import SentinelError

if TYPE_CHECKING:
    import psycopg

SCHEMES = ("postgresql://", "postgres://")
CHANNEL = "sentinel_decided"  # NOTIFY channel: an approval was decided (payload: the run id)


class Unavailable(SentinelError):
    """The shared database does not answer: nothing is decided or run until it does."""


# untyped (Cursor, Conn, Row: each `Any` below says so): a database driver's rows and parameters, whatever type
# each column holds (sqlite3 and psycopg type them so); the store reads each row by column name as the schema
# declares it.
class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...  # untyped: a driver's row

    def fetchall(self) -> list[Any]: ...  # untyped: a driver's rows

    def __iter__(self) -> Iterator[Any]: ...  # untyped: a driver's rows


class Conn(Protocol):
    """What the store needs of a connection: sqlite3.Connection as it is, or a `PgConn`."""

    # untyped: the parameters sqlite3 and psycopg accept (typeshed and psycopg type them so)
    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def close(self) -> None: ...


def is_url(target: Path | str) -> bool:
    return str(target).startswith(SCHEMES)


def connect(target: Path | str, timeout_s: float = 30.0) -> Conn:
    """A PostgreSQL URL, or the path of a SQLite database (created, WAL, autocommit)."""
    if is_url(target):
        return PgConn(str(target), timeout_s)
    conn = paths.connect_wal(Path(target), timeout_s)
    conn.row_factory = sqlite3.Row
    return conn


def shared(conn: Conn) -> bool:
    """Is this the database many hosts share (PostgreSQL), rather than one host's own file?"""
    return isinstance(conn, PgConn)


@contextmanager
def transaction(conn: Conn) -> Iterator[None]:
    """One write transaction: SQLite takes its write lock at the start (BEGIN IMMEDIATE), so two writers queue
    instead of one failing half-way; committed on success, rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def migrate(conn: Conn, migrations: Sequence[tuple[str, str]], table: str = "_migrations") -> None:
    """Apply each named migration not yet recorded in `table`, in order, each in its own transaction. Two
    processes opening a new database at once apply each migration once: SQLite's write lock serializes them,
    on PostgreSQL an advisory lock does (the DDL itself is transactional there too)."""
    if not _has_table(conn, table):  # (a database in use is never write-locked just to be opened)
        with transaction(conn):
            _lock(conn, table)
            conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    done = {r[0] for r in conn.execute(f"SELECT name FROM {table}")}
    for name, sql in migrations:
        if name in done:
            continue
        with transaction(conn):
            _lock(conn, table)
            if conn.execute(f"SELECT 1 FROM {table} WHERE name=?", (name,)).fetchone() is None:
                for statement in filter(str.strip, sql.split(";")):
                    conn.execute(statement)
                conn.execute(f"INSERT INTO {table} VALUES (?, ?)", (name, time.time()))


def announce(conn: Conn, run_id: str) -> None:
    """Tell every supervisor sharing the database that a decision on `run_id` was recorded (PostgreSQL NOTIFY on
    `CHANNEL`; the run's own host resumes it). One host's SQLite file has no one else to tell."""
    if shared(conn):
        conn.execute("SELECT pg_notify(?, ?)", (CHANNEL, run_id))


def listen(conn: Conn) -> "Listener":
    """A LISTEN session on the shared database `conn` is connected to."""
    if not isinstance(conn, PgConn):
        raise SentinelError("only a shared (PostgreSQL) store announces decisions")
    return Listener(conn.url)


def _has_table(conn: Conn, table: str) -> bool:
    if shared(conn):
        return conn.execute("SELECT to_regclass(?)", (table,)).fetchone()[0] is not None
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone() is not None


def _lock(conn: Conn, table: str) -> None:
    if shared(conn):
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (f"sentinel.{table}",))


# -- PostgreSQL ---------------------------------------------------------------------------------------------

class Row(tuple[Any, ...]):  # untyped: a driver's column values, whatever type each column holds
    """A result row read like sqlite3.Row: row[0], row["name"], dict(row)."""

    _names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> "Row":  # untyped: psycopg's values
        row = super().__new__(cls, values)
        row._names = names
        return row

    def keys(self) -> list[str]:
        return list(self._names)

    # untyped: a column's value; the key any of tuple's (an index, a slice) or a column's name, as sqlite3.Row's
    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(self._names[key] if isinstance(key, str) else key)


class PgConn:
    """One PostgreSQL session in autocommit mode (transactions are explicit, as on SQLite). A lost connection is
    reconnected on the next statement; while the server is unreachable every statement raises `Unavailable`
    (a statement is never retried behind the caller's back: it may have been a decision)."""

    def __init__(self, url: str, timeout_s: float = 30.0):
        self.url, self.timeout_s = url, timeout_s
        self._conn: psycopg.Connection[Row] | None = None
        self._connect()

    def _connect(self) -> psycopg.Connection[Row]:
        import psycopg
        from psycopg.adapt import Dumper

        class BoolAsInt(Dumper):  # SQLite stores a bool as 0/1; the schema's INTEGER columns expect the same
            oid = psycopg.postgres.types["int8"].oid

            def dump(self, obj: Any) -> bytes:  # untyped: psycopg's Dumper.dump is typed so
                return b"1" if obj else b"0"

        try:
            conn = psycopg.connect(self.url, autocommit=True, row_factory=_rows,
                                   connect_timeout=max(1, int(min(self.timeout_s, 10))))
        except psycopg.Error as exc:
            raise Unavailable(f"store {redact(self.url)}: {_first_line(exc)}") from None
        conn.adapters.register_dumper(bool, BoolAsInt)
        self._conn = conn
        return conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:  # untyped: as Conn.execute's
        import psycopg

        conn = self._conn if self._conn is not None and not self._conn.closed else self._connect()
        try:
            cursor: Cursor = conn.execute(to_pg(sql), tuple(parameters))
        except psycopg.OperationalError as exc:
            if not conn.closed and conn.info.status == psycopg.pq.ConnStatus.OK:
                raise  # a statement the server refused (a lock timeout, say), not a lost server
            conn.close()
            self._conn = None
            raise Unavailable(f"store {redact(self.url)}: {_first_line(exc)}") from None
        return cursor

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


class Listener:
    """A second session that LISTENs on `CHANNEL`: its socket is readable when a notification arrived
    (the supervisor's selector loop waits on `fileno()`)."""

    def __init__(self, url: str):
        import psycopg

        try:
            self.conn = psycopg.connect(url, autocommit=True, connect_timeout=5)
            self.conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as exc:
            raise Unavailable(f"store {redact(url)}: {_first_line(exc)}") from None
        self.fd = int(self.conn.fileno())  # kept: a lost connection still has to be unregistered by it

    def fileno(self) -> int:
        return self.fd

    def drain(self) -> list[str]:
        """The payloads that arrived (none waits); raises `Unavailable` once the connection is lost."""
        import psycopg

        try:
            return [n.payload for n in self.conn.notifies(timeout=0)]
        except psycopg.OperationalError as exc:
            raise Unavailable(f"store: {_first_line(exc)}") from None

    def close(self) -> None:
        self.conn.close()


# untyped: psycopg's RowFactory protocol types the cursor and its values so
def _rows(cursor: psycopg.Cursor[Any]) -> Callable[[Sequence[Any]], Row]:
    names = {column.name: i for i, column in enumerate(cursor.description or [])}
    return functools.partial(Row, names=names)


_TOKENS = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|\?|%|\buser\b|\browid\b|\bREAL\b|\bBEGIN IMMEDIATE\b"
                     r"|\bINTEGER PRIMARY KEY AUTOINCREMENT\b")
_PG = {"?": "%s", "%": "%%", "user": '"user"', "REAL": "DOUBLE PRECISION", "BEGIN IMMEDIATE": "BEGIN",
       # a row's physical position: the tie-break among equal timestamps (which Linux clocks all but never give)
       "rowid": "ctid",
       "INTEGER PRIMARY KEY AUTOINCREMENT": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"}


@functools.lru_cache(maxsize=1024)
def to_pg(sql: str) -> str:
    """SQLite's SQL as PostgreSQL reads it; quoted literals and identifiers are left as they are."""
    return _TOKENS.sub(lambda m: _PG.get(m.group(0), m.group(0)), sql)


def redact(url: str) -> str:
    """A URL as it may be shown: without its password."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
