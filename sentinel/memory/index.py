"""The recall index of one memory scope: SQLite FTS5 over the vault's notes, a cache of the files.

    index = Index.open(scope_dir)     # one per scope and process (it keeps an inotify watch)
    index.sync() -> Synced            # bring the cache up to date with vault/ (cheap when nothing changed)
    index.search("deploy", 5)         # BM25 ranking, title weighted, with a snippet of the body
    index.rows(flagged=...)           # the notes as the cache knows them

The files are the truth: `sync` re-reads a note whose size or modification time changed (found by
a full scan the first time, then from inotify events), drops notes whose file is gone, and scans
every (re)read note for prompt injection. A flagged note is kept on disk and in `notes` with its
finding, but not in the full-text table: recall never returns it and the prompt never lists it.
Deleting the database file only costs a rebuild. Its schema migrates by name (sentinel/engine/db.py's runner).
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat as stat_mod
import threading
from dataclasses import dataclass, field
from pathlib import Path

from sentinel.engine import db
from sentinel.errors import Damaged
from sentinel.memory import notes as notes_mod
from sentinel.memory.scan import scan
from sentinel.memory.watch import Watch
from sentinel.paths import connect_wal

DB_NAME = ".index.sqlite"
NOTE_MAX_BYTES = 1 << 20  # a bigger file is indexed by its first megabyte
WEIGHTS = (10.0, 4.0, 1.0)  # bm25 weights of title, tags, body
_WORD = re.compile(r"\w+", re.UNICODE)

# `IF NOT EXISTS`: an index made before migrations were recorded (PRAGMA user_version 1) has these tables.
MIGRATIONS: list[tuple[str, str]] = [
    ("001_notes", """
        CREATE TABLE IF NOT EXISTS notes (
            id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
            title TEXT NOT NULL, title_key TEXT NOT NULL, tags TEXT NOT NULL, created TEXT, updated TEXT,
            source_run TEXT, flagged TEXT);
        CREATE INDEX IF NOT EXISTS notes_title ON notes(title_key);
        CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(title, tags, body,
                                                                tokenize='porter unicode61 remove_diacritics 2');
    """),
]


@dataclass
class Row:
    """A note as the index knows it (no body)."""

    rel: str
    title: str
    tags: list[str]
    created: str | None
    updated: str | None
    source_run: str | None
    flagged: str | None

    @property
    def slug(self) -> str:
        return self.rel.removesuffix(".md")


@dataclass
class Hit:
    rel: str
    title: str
    tags: list[str]
    snippet: str
    score: float


@dataclass
class Synced:
    changed: int = 0
    removed: int = 0
    flagged: list[Row] = field(default_factory=list)  # notes flagged by this sync (newly or after an edit)
    relisted: bool = False  # a note came, went, or changed its title, tags or quarantine (index.md is stale)


_open: dict[Path, "Index"] = {}  # most recently used last
_open_lock = threading.Lock()
OPEN_MAX = 8  # indexes kept open per process (each holds a database connection and an inotify instance)


class Index:
    def __init__(self, scope_dir: Path, conn: sqlite3.Connection):
        self.scope_dir = scope_dir
        self.vault = scope_dir / "vault"
        self.conn = conn
        self.watch: Watch | None = None
        self._watching = False

    @classmethod
    def open(cls, scope_dir: Path) -> "Index":
        """The index of a scope folder, shared by every caller in this process."""
        key = scope_dir.resolve()
        with _open_lock:
            index = _open.pop(key, None)
            if index is None:
                (key / "vault").mkdir(parents=True, exist_ok=True, mode=0o700)
                index = cls(key, _connect(key / DB_NAME))
            _open[key] = index
            while len(_open) > OPEN_MAX:
                _open.pop(next(iter(_open)))._release()
            return index

    def close(self) -> None:
        with _open_lock:
            if _open.get(self.scope_dir) is self:
                del _open[self.scope_dir]
        self._release()

    def _release(self) -> None:
        if self.watch is not None:
            self.watch.close()
        self.conn.close()

    # -- keeping the cache true ------------------------------------------------------------------

    def sync(self) -> Synced:
        paths = self._changed_paths()
        seen = self._known() if paths is None else None
        on_disk = _scan(self.vault) if paths is None else {p: _stat(self.vault / p) for p in paths}
        result = Synced()
        with db.transaction(self.conn):
            known = seen if seen is not None else self._known(list(on_disk))
            for rel, stat in on_disk.items():
                if stat is None:
                    if rel in known:
                        self._delete(rel)
                        result.removed += 1
                elif paths is not None or known.get(rel) != stat:  # an event is news even when mtime ties
                    before = self.row(rel)
                    row = self._reindex(rel, stat)
                    result.changed += 1
                    result.relisted |= _listing(before) != _listing(row)
                    if row is not None and row.flagged:
                        result.flagged.append(row)
            if paths is None:
                for rel in set(known) - set(on_disk):
                    self._delete(rel)
                    result.removed += 1
            result.relisted |= bool(result.removed)
        return result

    def _changed_paths(self) -> list[str] | None:
        """Paths to look at: from the watch when one is running, None for a full scan."""
        if not self._watching:
            self._watching = True
            self.watch = Watch.start(self.vault)  # before the scan, so nothing written meanwhile is missed
            return None
        if self.watch is None:
            return None
        changed = self.watch.changes()
        return None if changed is None else sorted(p for p in changed if _is_note(p))

    def _known(self, only: list[str] | None = None) -> dict[str, tuple[int, int]]:
        if only is None:
            rows = self.conn.execute("SELECT path, mtime_ns, size FROM notes")
            return {r[0]: (r[1], r[2]) for r in rows}
        out = {}
        for rel in only:
            row = self.conn.execute("SELECT mtime_ns, size FROM notes WHERE path=?", (rel,)).fetchone()
            if row:
                out[rel] = (row[0], row[1])
        return out

    def _reindex(self, rel: str, stat: tuple[int, int]) -> Row | None:
        try:
            with open(self.vault / rel, "rb") as f:
                text = f.read(NOTE_MAX_BYTES).decode("utf-8", errors="replace")
        except OSError:
            self._delete(rel)
            return None
        note = notes_mod.parse(text, rel)
        finding = scan(f"{note.title}\n{' '.join(note.tags)}\n{note.body}")
        flagged = str(finding) if finding else None
        tags = " ".join(note.tags)
        cur = self.conn.execute(
            "INSERT INTO notes (path, mtime_ns, size, title, title_key, tags, created, updated, source_run, flagged)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET mtime_ns=excluded.mtime_ns,"
            " size=excluded.size, title=excluded.title, title_key=excluded.title_key, tags=excluded.tags,"
            " created=excluded.created, updated=excluded.updated, source_run=excluded.source_run,"
            " flagged=excluded.flagged RETURNING id",
            (rel, stat[0], stat[1], note.title, notes_mod.title_key(note.title), tags, note.created, note.updated,
             note.source_run, flagged))
        note_id = cur.fetchone()[0]
        self.conn.execute("DELETE FROM notes_fts WHERE rowid=?", (note_id,))
        if flagged is None:
            self.conn.execute("INSERT INTO notes_fts (rowid, title, tags, body) VALUES (?, ?, ?, ?)",
                              (note_id, note.title, tags, note.body))
        return Row(rel, note.title, note.tags, note.created, note.updated, note.source_run, flagged)

    def _delete(self, rel: str) -> None:
        row = self.conn.execute("DELETE FROM notes WHERE path=? RETURNING id", (rel,)).fetchone()
        if row:
            self.conn.execute("DELETE FROM notes_fts WHERE rowid=?", (row[0],))

    def refresh(self, rel: str) -> Row | None:
        """Re-read one note now (after Sentinel itself wrote or removed it)."""
        stat = _stat(self.vault / rel)
        with self.conn:
            if stat is None:
                self._delete(rel)
                return None
            return self._reindex(rel, stat)

    # -- queries ---------------------------------------------------------------------------------------

    def search(self, query: str, limit: int) -> list[Hit]:
        words = _WORD.findall(query)
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in dict.fromkeys(w.lower() for w in words))
        rows = self.conn.execute(
            "SELECT n.path, n.title, n.tags, snippet(notes_fts, 2, '', '', '…', 40),"
            f" bm25(notes_fts, {', '.join(map(str, WEIGHTS))}) AS score"
            " FROM notes_fts JOIN notes n ON n.id = notes_fts.rowid WHERE notes_fts MATCH ?"
            " ORDER BY score LIMIT ?", (match, limit))
        return [Hit(r[0], r[1], r[2].split(), " ".join(r[3].split()), r[4]) for r in rows]

    def rows(self, flagged: bool | None = None, order: str = "title") -> list[Row]:
        where = {None: "", True: " WHERE flagged IS NOT NULL", False: " WHERE flagged IS NULL"}[flagged]
        order_by = {"title": "title COLLATE NOCASE", "recent": "COALESCE(updated, created, '') DESC, title"}[order]
        sql = f"SELECT path, title, tags, created, updated, source_run, flagged FROM notes{where} ORDER BY {order_by}"
        return [Row(r[0], r[1], r[2].split(), r[3], r[4], r[5], r[6]) for r in self.conn.execute(sql)]

    def by_title(self, title: str) -> Row | None:
        found = self.conn.execute("SELECT path FROM notes WHERE title_key=? ORDER BY path LIMIT 1",
                                  (notes_mod.title_key(title),)).fetchone()
        return self.row(found[0]) if found else None

    def row(self, rel: str) -> Row | None:
        r = self.conn.execute("SELECT path, title, tags, created, updated, source_run, flagged FROM notes"
                              " WHERE path=?", (rel,)).fetchone()
        return Row(r[0], r[1], r[2].split(), r[3], r[4], r[5], r[6]) if r else None


def _connect(path: Path) -> sqlite3.Connection:
    """The index database; a damaged one is a cache like any other: removed and built again from the notes."""
    try:
        conn = connect_wal(path, 30.0)
    except Damaged:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        conn = connect_wal(path, 30.0)
    db.migrate(conn, MIGRATIONS)
    return conn


def _listing(row: Row | None) -> tuple[str, list[str], str | None] | None:
    """What index.md shows of a note."""
    return (row.title, row.tags, row.flagged) if row else None


def _is_note(rel: str) -> bool:
    return rel.endswith(".md") and not any(part.startswith(".") for part in rel.split("/"))


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if stat_mod.S_ISREG(st.st_mode) else None


def _scan(vault: Path) -> dict[str, tuple[int, int] | None]:
    """Every note file in the vault (hidden folders skipped) with its modification time and size."""
    out: dict[str, tuple[int, int] | None] = {}
    stack = [("", str(vault))]
    while stack:
        base, path = stack.pop()
        try:
            entries = os.scandir(path)
        except OSError:
            continue
        with entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                rel = f"{base}{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    stack.append((rel + "/", entry.path))
                elif entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    out[rel] = (st.st_mtime_ns, st.st_size)
    return out
