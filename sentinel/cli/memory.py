"""`sentinel memory`: list, show, search and forget the notes of a memory scope.

The scope defaults to the default agent's (`--scope` names another). The notes live in
$SENTINEL_HOME/memory/<scope>/vault/ of the user running the command. `list --flagged` shows the
quarantined notes: kept on disk, never loaded into a prompt or returned by recall. A quarantine found
here for the first time is audited like one found during a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

from sentinel.jsontypes import JSON, JSONObject
from sentinel.ui.escape import visible
from sentinel.ui.render import print_json

if TYPE_CHECKING:
    from sentinel.memory.index import Row
    from sentinel.memory.vault import Memory

app = typer.Typer(no_args_is_help=True, help="Memory vaults: list, show, search, forget notes.")
SCOPE = typer.Option(None, "--scope", "-s", help="Memory scope (default: the default agent's).")


def _memory(scope: str | None) -> "Memory":
    from sentinel import config as config_mod
    from sentinel import paths
    from sentinel.agents import profile as profiles
    from sentinel.memory.vault import Memory, check_scope

    config = config_mod.load()
    if scope is not None:
        check_scope(scope, "--scope")
    else:
        scope = profiles.load(config.default_agent, check=False).scope
    memory = Memory.open(paths.home(), scope, config.memory.note_max_chars)
    synced = memory.sync()
    if synced.flagged:
        _audit(memory, synced.flagged)
    return memory


def _audit(memory: "Memory", rows: "list[Row]") -> None:
    """The notes are this user's own memory (local files in either mode): their audit goes to this user's store."""
    from sentinel.local.engine import LocalEngine

    with LocalEngine() as engine:
        engine.audit_quarantined(memory.scope, [{"note": row.rel, "title": row.title, "finding": row.flagged}
                                                for row in rows])


def _row(memory: "Memory", row: "Row") -> JSONObject:
    data: JSONObject = {"title": row.title, "tags": list[JSON](row.tags), "path": str(memory.path_of(row)),
                        "created": row.created, "updated": row.updated, "source_run": row.source_run}
    if row.flagged:
        data["flagged"] = row.flagged
    return data


def _emit(rows: list[JSONObject], lines: list[str], as_json: bool, empty: str) -> None:
    """`rows` as JSON, or one line each for a person."""
    if as_json:
        return print_json(rows)
    print("\n".join(visible(line) for line in lines) if rows else empty)


@app.command("list")
def list_(scope: Optional[str] = SCOPE,
          flagged: bool = typer.Option(False, "--flagged", help="Only the quarantined notes, with the finding."),
          as_json: bool = typer.Option(False, "--json")) -> None:
    """List the notes of a scope, by title."""
    memory = _memory(scope)
    notes = memory.notes(flagged=True if flagged else None)

    def line(r: "Row") -> str:
        note = f"  [quarantined: {r.flagged}]" if r.flagged else ""
        tags = f"  #{' #'.join(r.tags)}" if r.tags else ""
        return f"{r.title}{tags}  ({memory.path_of(r)}){note}"

    _emit([_row(memory, r) for r in notes], [line(r) for r in notes], as_json,
          f"no {'quarantined ' if flagged else ''}notes in memory scope {memory.scope}")


@app.command("show")
def show(note: str = typer.Argument(..., help="Title, slug or path of the note."), scope: Optional[str] = SCOPE,
         as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one note: its frontmatter fields and body."""
    memory = _memory(scope)
    row = memory.find(note)
    body = memory.read(row.rel).body
    if as_json:
        return print_json({**_row(memory, row), "body": body})
    print(f"# {visible(row.title)}\n{visible(memory.path_of(row))}"
          + (f"\nquarantined: {visible(row.flagged)}" if row.flagged else ""))
    print(f"\n{visible(body, newlines=True)}")


@app.command("search")
def search(query: str = typer.Argument(...), scope: Optional[str] = SCOPE,
           limit: int = typer.Option(5, "--limit", "-n", min=1, max=200),
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Full-text search (BM25, title weighted), as the agent's recall tool sees it."""
    memory = _memory(scope)
    hits = memory.recall(query, limit)
    rows: list[JSONObject] = [{"title": h.title, "tags": list[JSON](h.tags), "path": str(memory.path_of(h)),
                               "snippet": h.snippet, "score": round(-h.score, 6)} for h in hits]
    _emit(rows, [f"{h.title}  ({memory.path_of(h)})\n    {h.snippet}" for h in hits], as_json,
          f"no notes in memory scope {memory.scope} match {query!r}")


@app.command("forget")
def forget(note: str = typer.Argument(..., help="Title, slug or path of the note."), scope: Optional[str] = SCOPE,
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Delete a note (its file) from the scope."""
    memory = _memory(scope)
    row = memory.forget(note)
    if as_json:
        return print_json({**_row(memory, row), "forgotten": True})
    print(f"forgot {row.title!r} ({memory.path_of(row)})")
