"""`sentinel web [--port P]`: the operator's web console (sentinel/web), served on loopback until ^C."""

from __future__ import annotations

from typing import Optional

import typer


def web(port: Optional[int] = typer.Option(None, "--port", "-p", min=0, max=65535,
                                           help="Listen port (default web.port, 8789; 0 picks a free one).")) -> None:
    """Serve the web console: approvals inbox, runs, live events. Prints a URL that signs in once."""
    from sentinel.web.app import serve

    serve(port)


def register(app: typer.Typer) -> None:
    app.command("web")(web)
