"""Chat commands: chat, chats, restore. The shell itself lives in `sentinel.chat`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

import typer

from sentinel.ui.render import print_json

if TYPE_CHECKING:
    from sentinel.engine.api import Engine


def _engine() -> "Engine":
    from sentinel.connect import open_engine

    return open_engine(local_if_refused=True, agent_door=True)


def _shell(*, new: bool = False, session: str | None = None, agent: str | None = None,
           model: str | None = None) -> None:
    from sentinel import paths
    from sentinel.chat.shell import run

    with _engine() as engine:
        run(engine, paths.state_dir() / "chat_history", new=new, session=session, agent=agent, model=model)


def chat(new: bool = typer.Option(False, "--new", help="Start a fresh session instead of resuming the newest."),
         agent: Optional[str] = typer.Option(None, "--agent", "-a", help="Agent to talk to."),
         model: Optional[str] = typer.Option(None, "--model", "-m", help="provider/model for this session.")) -> None:
    """Talk to an agent: resumes your most recent session (or starts one); /help inside lists the commands.

    The agent works in its own workspace ($SENTINEL_HOME/workspace), not the current directory.

    With stdin not a terminal, each line is a message or the answer to an approval, so a chat can be scripted."""
    _shell(new=new, agent=agent, model=model)


def chats(as_json: bool = typer.Option(False, "--json")) -> None:
    """List chat sessions, the most recently active first."""
    with _engine() as engine:
        rows = engine.sessions()
    if as_json:
        return print_json([r.to_dict() for r in rows])
    from rich.table import Table
    from rich.text import Text  # cells are text, never markup: the title is what someone typed

    from sentinel.ui.render import listing_console

    table = Table("id", "status", "agent", "last active", "title", box=None)
    for r in rows:
        table.add_row(*map(Text, (r.id, r.status, r.agent or "",
                                  time.strftime("%Y-%m-%d %H:%M", time.localtime(r.updated_at)),
                                  " ".join(str(r.title).split())[:60])))
    listing_console().print(table)  # piped: one line per session, whatever the title's length


def restore(session_id: str = typer.Argument(..., help="Session id (see `sentinel chats`).")) -> None:
    """Reopen a chat session by id."""
    _shell(session=session_id)


def register(app: typer.Typer) -> None:
    for fn in (chat, chats, restore):
        app.command(fn.__name__)(fn)
