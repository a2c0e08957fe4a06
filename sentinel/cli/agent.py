"""`sentinel agent remove NAME [--user]`: unregister a system-mode agent (root).

Its unfinished runs are cancelled, its uid leaves the per-UID egress table, and with --user its Linux
user, home and Leash policy are deleted too (only for a user `sentinel setup` created). The logic is
sentinel.supervisor.identity.remove.
"""

from __future__ import annotations

import typer

from sentinel.cli.render import print_json

app = typer.Typer(no_args_is_help=True, help="Agent profiles: souls, models, skills, tools, memory scopes.")


@app.command("remove")
def remove(name: str = typer.Argument(..., help="The agent (its Linux user name)."),
           user: bool = typer.Option(False, "--user", help="Also delete its Linux user, home and Leash policy."),
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Remove a system-mode agent: its registration, its egress entry and (--user) its Linux user."""
    import os
    import pwd

    from sentinel.cli.system import _store
    from sentinel.supervisor import identity

    store = _store()  # root only
    try:
        by = os.environ.get("SUDO_USER") or pwd.getpwuid(os.getuid()).pw_name
        done = identity.remove(name, store, user=user, by=by)
    finally:
        store.close()
    if as_json:
        return print_json(done)
    cancelled = done["runs_cancelled"]
    print(f"agent {name} removed" + (f"; cancelled {', '.join(cancelled)}" if cancelled else "")
          + f"; egress: {done['egress']}" + ("; Linux user and home deleted" if done["user_deleted"] else ""))
