"""The token store: per-run bearer tokens, their grants and the tokens they spent (SQLite).

A token is `smz_` + 43 random URL-safe characters. Only its SHA-256 is stored
(tokens are high-entropy, so a plain hash cannot be reversed). A grant names
the agent, the run, the models it may use (exact names or globs such as
`openai/*`), an expiry and its budgets. Spending is recorded per run and per
agent per UTC day, so a re-issued token for a resumed run keeps its budget.

The same file is used by the in-process Muzzle and the engine (local mode:
`$SENTINEL_HOME/state/muzzle.db`) and by `sentinel muzzle serve` and the
supervisor (system mode: `/var/lib/sentinel-muzzle/muzzle.db`, owned by
Muzzle's user; SQLite hands its journal files to the database's owner when
root writes). Migrations are append-only and recorded by name in `migrations` (sentinel/engine/db.py's
runner, as every database in Sentinel).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import secrets
import sqlite3
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, TypedDict

from sentinel import paths
from sentinel.engine import db
from sentinel.errors import SentinelError
from sentinel.muzzle.settings import Budgets

PREFIX = "smz_"

MIGRATIONS: list[tuple[str, str]] = [
    ("001_tokens", """
        CREATE TABLE tokens (
            hash TEXT PRIMARY KEY, agent TEXT NOT NULL, run_id TEXT NOT NULL, models TEXT NOT NULL,
            created_at REAL NOT NULL, expires_at REAL NOT NULL,
            run_tokens INTEGER, agent_daily_tokens INTEGER, revoked INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX tokens_run ON tokens(run_id);
        CREATE TABLE run_usage (run_id TEXT PRIMARY KEY, tokens INTEGER NOT NULL DEFAULT 0, calls INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE agent_usage (agent TEXT NOT NULL, day TEXT NOT NULL, tokens INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (agent, day));
        CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
    """),
]


class TokenRow(TypedDict):
    """An issued token as `sentinel muzzle tokens` lists it (by its hash's prefix: the token is never stored)."""

    id: str
    agent: str
    run_id: str
    models: list[str]
    created_at: float
    expires_at: float
    run_tokens: int | None
    agent_daily_tokens: int | None
    revoked: bool


@dataclass(frozen=True)
class Grant:
    agent: str
    run_id: str
    models: tuple[str, ...]
    expires_at: float
    budgets: Budgets = field(default_factory=Budgets)
    revoked: bool = False

    def allows(self, model: str) -> bool:
        return any(m == model or fnmatch.fnmatchcase(model, m) for m in self.models)

    @property
    def expired(self) -> bool:
        return self.revoked or time.time() >= self.expires_at


@dataclass(frozen=True)
class Spent:
    run: int
    agent_today: int

    def over(self, budgets: Budgets) -> str | None:
        """Which budget is spent, or None."""
        if budgets.run_tokens is not None and self.run >= budgets.run_tokens:
            return f"run budget spent ({self.run} of {budgets.run_tokens} tokens)"
        if budgets.agent_daily_tokens is not None and self.agent_today >= budgets.agent_daily_tokens:
            return f"agent daily budget spent ({self.agent_today} of {budgets.agent_daily_tokens} tokens today)"
        return None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _prepare(path: Path) -> None:
    """Create the database file 0600; as root in another user's directory (the supervisor issuing into
    Muzzle's system store), hand it to that user, who must keep reading it. SQLite then gives its
    journal files to the database's owner too. A symlink in its place is refused.

    An existing file is only looked at, never opened: closing any descriptor of a database file drops every
    POSIX lock this process holds on it, the locks of its live SQLite connections included (the in-process
    Muzzle's, while the engine issues the next turn's token). Another process then takes itself for the last
    connection and removes the WAL index under the live one: "database disk image is malformed"."""
    try:
        with contextlib.suppress(FileExistsError):  # there already, or a symlink: lstat tells
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        st = os.lstat(path)
    except OSError as exc:
        raise SentinelError(f"{path}: cannot open the token store ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise SentinelError(f"{path}: cannot open the token store (a symbolic link stands in its place)")
    if not stat.S_ISREG(st.st_mode):
        raise SentinelError(f"{path}: not a regular file")
    if os.geteuid() == 0:
        owner = os.stat(path.parent)
        if owner.st_uid != 0 and st.st_uid != owner.st_uid:
            os.chown(path, owner.st_uid, owner.st_gid, follow_symlinks=False)


def today() -> str:
    return time.strftime("%Y-%m-%d", time.gmtime())


class TokenStore:
    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.path = path

    @classmethod
    def open(cls, path: Path) -> "TokenStore":
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _prepare(path)
        conn = paths.connect_wal(path, 10.0)
        db.migrate(conn, MIGRATIONS, table="migrations")
        return cls(conn, path)

    def close(self) -> None:
        self.conn.close()

    # -- tokens -------------------------------------------------------------

    def issue(self, agent: str, run_id: str, models: Iterable[str], ttl_s: float,
              budgets: Budgets | None = None) -> str:
        token = PREFIX + secrets.token_urlsafe(32)
        budgets = budgets or Budgets()
        now = time.time()
        self.conn.execute(
            "INSERT INTO tokens (hash, agent, run_id, models, created_at, expires_at, run_tokens, agent_daily_tokens)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (token_hash(token), agent, run_id, json.dumps(list(models)), now, now + ttl_s,
             budgets.run_tokens, budgets.agent_daily_tokens))
        self.conn.execute("DELETE FROM tokens WHERE expires_at < ?", (now - 86400,))
        return token

    def lookup(self, token: str) -> Grant | None:
        row = self.conn.execute(
            "SELECT agent, run_id, models, expires_at, run_tokens, agent_daily_tokens, revoked FROM tokens"
            " WHERE hash = ?", (token_hash(token),)).fetchone()
        if row is None:
            return None
        return Grant(row[0], row[1], tuple(json.loads(row[2])), row[3],
                     Budgets(run_tokens=row[4], agent_daily_tokens=row[5]), bool(row[6]))

    def revoke_run(self, run_id: str) -> int:
        return self.conn.execute("UPDATE tokens SET revoked = 1 WHERE run_id = ?", (run_id,)).rowcount

    def list(self, *, include_expired: bool = False) -> list[TokenRow]:
        where = "" if include_expired else " WHERE revoked = 0 AND expires_at > ?"
        args = () if include_expired else (time.time(),)
        rows = self.conn.execute(
            "SELECT substr(hash, 1, 12), agent, run_id, models, created_at, expires_at, run_tokens,"
            f" agent_daily_tokens, revoked FROM tokens{where} ORDER BY created_at", args).fetchall()
        return [TokenRow(id=r[0], agent=r[1], run_id=r[2], models=json.loads(r[3]), created_at=r[4], expires_at=r[5],
                         run_tokens=r[6], agent_daily_tokens=r[7], revoked=bool(r[8])) for r in rows]

    # -- spending -----------------------------------------------------------

    def spent(self, grant: Grant) -> Spent:
        row = self.conn.execute(
            "SELECT (SELECT tokens FROM run_usage WHERE run_id = ?),"
            " (SELECT tokens FROM agent_usage WHERE agent = ? AND day = ?)",
            (grant.run_id, grant.agent, today())).fetchone()
        return Spent(row[0] or 0, row[1] or 0)

    def charge(self, grant: Grant, tokens: int) -> None:
        with db.transaction(self.conn):
            self.conn.execute(
                "INSERT INTO run_usage (run_id, tokens, calls) VALUES (?, ?, 1) ON CONFLICT(run_id)"
                " DO UPDATE SET tokens = tokens + excluded.tokens, calls = calls + 1", (grant.run_id, tokens))
            self.conn.execute(
                "INSERT INTO agent_usage (agent, day, tokens) VALUES (?, ?, ?) ON CONFLICT(agent, day)"
                " DO UPDATE SET tokens = tokens + excluded.tokens", (grant.agent, today(), tokens))

    def run_usage(self, run_id: str) -> dict[str, int]:
        row = self.conn.execute("SELECT tokens, calls FROM run_usage WHERE run_id = ?", (run_id,)).fetchone()
        return {"tokens": row[0], "calls": row[1]} if row else {"tokens": 0, "calls": 0}

    # -- Muzzle's own secret --------------------------------------------------

    def redaction_key(self) -> bytes:
        """The HMAC key of redaction placeholders: made once, never leaves the store."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'redaction_key'").fetchone()
        if row:
            return bytes(row[0])
        self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('redaction_key', ?)", (secrets.token_bytes(32),))
        return bytes(self.conn.execute("SELECT value FROM meta WHERE key = 'redaction_key'").fetchone()[0])
