"""The `sentinel` console script.

`sentinel hook AGENT EVENT` takes a fast path that never imports typer or rich:
external coding agents call it on every tool use. The run commands (approvals, runs, show,
status, approve, deny, run, ...) in plain form skip typer's start (`sentinel.cli.fast`). Everything
else builds the typer app in `sentinel.cli.app`.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 2 and args[0] == "hook" and args[1] not in ("install", "status", "compat", "allowlist", "--help", "-h"):
        from sentinel.hooks.entry import main as hook_main

        sys.exit(hook_main(args[1:]))
    from sentinel.cli import fast

    if fast.run(args):
        return
    from sentinel.cli.app import run

    run(args)
