"""A memory scope: `memory/<scope>/` holding `vault/<slug>.md` notes and a generated `index.md`.

    mem = Memory.open(home, "team")
    mem.remember("Deploy day", "We deploy on Thursdays", ["ops"], source_run="r-1")  -> Saved
    mem.recall("deploy", limit=5)      -> [Hit]    full-text, BM25, title weighted; quarantined notes never
    mem.notes(flagged=True)            -> [Row]    the quarantined notes (kept on disk, never loaded)
    mem.read("Deploy day")             -> Note     by title, slug or path
    mem.forget("deploy-day")           -> Row      the file is deleted
    mem.prompt_index(4000)             -> str      the index as the system prompt shows it

The folder opens as an Obsidian vault. Notes are the truth; `index.md` (one line per note: a
[[link]], its title and tags) and the recall database are regenerated from them, so a note added
or edited by hand is picked up by the next call that syncs (every call above does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sentinel import paths
from sentinel.errors import NotFound, UsageError
from sentinel.memory import notes as notes_mod
from sentinel.memory.index import Hit, Index, Row, Synced

SCOPE = re.compile(r"^[a-z0-9_][a-z0-9_-]{0,31}$")
TITLE_MAX = 200
TAGS_MAX = 20


def check_scope(scope: str, where: str = "memory scope") -> str:
    if not SCOPE.match(scope or ""):
        raise UsageError(f"{where} {scope!r}: use 1-32 lowercase letters, digits, '_' or '-'")
    return scope


def memory_dir(home: Path | None = None) -> Path:
    return (home or paths.home()) / "memory"


@dataclass
class Saved:
    row: Row
    created: bool


class Memory:
    def __init__(self, home: Path, scope: str, note_max_chars: int = 20000):
        self.scope = check_scope(scope)
        self.root = memory_dir(home) / scope
        self.vault = self.root / "vault"
        self.index_md = self.root / "index.md"
        self.note_max_chars = note_max_chars
        Index.open(self.root)

    @property
    def index(self) -> Index:
        """The scope's recall index (shared in this process; reopened if it was evicted)."""
        return Index.open(self.root)

    @classmethod
    def open(cls, home: Path | None, scope: str, note_max_chars: int = 20000) -> "Memory":
        return cls(home or paths.home(), scope, note_max_chars)

    # -- keeping files and caches in step ---------------------------------------------------------

    def sync(self) -> Synced:
        synced = self.index.sync()
        if synced.relisted or not self.index_md.exists():
            self._write_index()
        return synced

    def _write_index(self) -> None:
        lines = [f"# Memory: {self.scope}", "",
                 "One line per note, generated from vault/ (edit the notes, not this file).", ""]
        lines += [index_line(row) for row in self.index.rows(flagged=False)]
        text = "\n".join(lines) + "\n"
        try:
            if self.index_md.read_text(encoding="utf-8") == text:
                return
        except OSError:
            pass
        paths.write_atomic(self.index_md, text, 0o644, sync=False)  # derived from the notes

    # -- the agent's operations ------------------------------------------------------------------------

    def remember(self, title: str, content: str, tags: list[str] | str | None = None,
                 source_run: str | None = None) -> Saved:
        """Write a note; a note with the same title (ignoring case) is updated and keeps `created`."""
        title = " ".join(str(title).split())
        if not title:
            raise UsageError("title must not be empty")
        if len(title) > TITLE_MAX:
            raise UsageError(f"title is {len(title)} characters; keep it under {TITLE_MAX}")
        if len(content) > self.note_max_chars:
            raise UsageError(f"content is {len(content)} characters; the limit is {self.note_max_chars} "
                             "(split it into several notes)")
        new_tags = notes_mod.clean_tags(tags)
        if len(new_tags) > TAGS_MAX:
            raise UsageError(f"{len(new_tags)} tags; use at most {TAGS_MAX}")
        self.sync()
        existing = self.index.by_title(title)
        stamp = notes_mod.now()
        if existing is not None:
            old = self._parse(existing.rel)
            note = notes_mod.Note(existing.rel, old.title, content, new_tags if tags is not None else old.tags,
                                  old.created or stamp, stamp, source_run)
        else:
            note = notes_mod.Note(self._free_name(notes_mod.slugify(title)), title, content, new_tags,
                                  stamp, stamp, source_run)
        target = self.vault / note.rel
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        paths.write_atomic(target, notes_mod.render(note), 0o644)
        row = self.index.refresh(note.rel)
        assert row is not None
        if existing is None or (existing.title, existing.tags, existing.flagged) != (row.title, row.tags, row.flagged):
            self._write_index()  # only what index.md lists: a body edit leaves it as it is
        return Saved(row, existing is None)

    def _free_name(self, slug: str) -> str:
        for n in range(1, 10000):
            rel = f"{slug}.md" if n == 1 else f"{slug}-{n}.md"
            if not (self.vault / rel).exists():
                return rel
        raise UsageError(f"too many notes named {slug!r}")

    def recall(self, query: str, limit: int = 5) -> list[Hit]:
        self.sync()
        return self.index.search(query, limit)

    def notes(self, flagged: bool | None = None) -> list[Row]:
        self.sync()
        return self.index.rows(flagged=flagged)

    def find(self, ident: str) -> Row:
        """A note by title, slug or path relative to the vault."""
        self.sync()
        rel = ident if ident.endswith(".md") else f"{ident}.md"
        row = self.index.row(rel) or self.index.by_title(ident)
        if row is None:
            raise NotFound(f"no note {ident!r} in memory scope {self.scope!r} (see `sentinel memory list`)")
        return row

    def read(self, ident: str) -> notes_mod.Note:
        return self._parse(self.find(ident).rel)

    def forget(self, ident: str) -> Row:
        row = self.find(ident)
        (self.vault / row.rel).unlink(missing_ok=True)
        self.index.refresh(row.rel)
        self._write_index()
        return row

    def path_of(self, row: Row | Hit) -> Path:
        return self.vault / row.rel

    def prompt_index(self, max_chars: int) -> str:
        """The index lines the system prompt shows: unflagged notes, most recently updated first."""
        self.sync()
        rows = self.index.rows(flagged=False, order="recent")
        lines: list[str] = []
        used = 0
        for row in rows:
            line = index_line(row)
            if used + len(line) + 1 > max_chars:
                break
            lines.append(line)
            used += len(line) + 1
        if len(lines) < len(rows):
            lines.append(f"(… {len(rows) - len(lines)} more notes; use recall to search them)")
        return "\n".join(lines)

    def _parse(self, rel: str) -> notes_mod.Note:
        text = (self.vault / rel).read_text(encoding="utf-8", errors="replace")
        return notes_mod.parse(text, rel)


def index_line(row: Row) -> str:
    tags = f" (tags: {', '.join(row.tags)})" if row.tags else ""
    alias = re.sub(r"[\[\]|]", " ", row.title).strip()
    return f"- [[{row.slug}|{alias}]]{tags}"
