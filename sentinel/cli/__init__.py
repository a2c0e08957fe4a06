"""The `sentinel` console script.

`sentinel hook AGENT EVENT` takes a fast path that never imports typer or rich:
external coding agents call it on every tool use. The run commands (approvals, runs, show,
status, approve, deny, run, ...) in plain form skip typer's start (`sentinel.cli.fast`); `run` and `resume`
first ask this user's warm server to run them in a child forked from a process that has imported them
(`sentinel.cli.warm`). Everything else builds the typer app in `sentinel.cli.app`.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 2 and args[0] == "hook" and args[1] not in ("install", "status", "compat", "allowlist", "--help", "-h"):
        from sentinel.hooks.entry import main as hook_main

        sys.exit(hook_main(args[1:]))
    _ctrl_c_on_a_terminal()
    from sentinel.cli import warm

    if not warm.eligible(args):
        return cold(args)
    code = warm.call(args)
    if code is not None:
        sys.exit(code)
    try:
        cold(args)
    finally:
        warm.after_cold()


def cold(args: list[str]) -> None:
    """The command in this process (a warm child runs this, having been asked already)."""
    _ctrl_c_on_a_terminal()
    from sentinel.cli import fast

    if fast.run(args):
        return
    from sentinel.cli.app import run

    run(args)


def _ctrl_c_on_a_terminal() -> None:
    """On a terminal, Ctrl-C stops what a command is doing (a chat's turn, a run, a question) even when whatever
    started the command ignored SIGINT (a script's background job, nohup): a Python started so never raises
    KeyboardInterrupt, and the person at the terminal could not stop a running command. Off a terminal, the
    inherited disposition stands (a detached `sentinel watch run &` keeps ignoring it, as a daemon should)."""
    import signal

    if sys.stdin.isatty() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
