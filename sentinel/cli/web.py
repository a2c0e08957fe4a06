"""`sentinel web [--port P] [--host H] [--sign-in]`: the operator's web console (sentinel/web), served until ^C."""

from __future__ import annotations

from typing import Optional

import typer


def web(port: Optional[int] = typer.Option(None, "--port", "-p", min=0, max=65535,
                                           help="Listen port (default web.port, 8789; 0 picks a free one)."),
        host: Optional[str] = typer.Option(None, "--host",
                                           help="Listen address (default web.host, 127.0.0.1). Anything but loopback "
                                                "is plain HTTP on the network: prefer a TLS proxy (docs/notify.md)."),
        sign_in: bool = typer.Option(False, "--sign-in",
                                     help="Print a new one-time sign-in URL for you (at web.public_url) and exit.")
        ) -> None:
    """Serve the web console: approvals inbox, runs, live events. Prints a URL that signs in once."""
    if sign_in:
        from sentinel.web.app import sign_in_url

        print(sign_in_url())
        return
    from sentinel.web.app import serve

    serve(port, host)


def register(app: typer.Typer) -> None:
    app.command("web")(web)
