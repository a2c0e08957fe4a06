"""The typer app: one module per command group, each command a thin call into the engine.

Errors: a SentinelError prints `error: <one line>` on stderr and exits with its code
(2 for bad usage or input); nothing else is caught, so harness bugs stay visible.

Start-up: `run(args)` imports only the module of the command the arguments name (each module pulls its
own engine, web or model stack); `--help`, no command or a name not listed below builds every command.
"""

from __future__ import annotations

import importlib
import importlib.util

import typer

from sentinel.cli.fast import RUN_COMMANDS, fail
from sentinel.errors import SentinelError

# (sub-command name, module exposing a typer `app`); groups register only if present.
GROUPS = [
    ("leash", "sentinel.cli.leash", "Kernel enforcement: run a command under an agent's profile, check support."),
    ("muzzle", "sentinel.cli.muzzle", "The inspecting model proxy."),
    ("rules", "sentinel.cli.rules", "The rule gate: list, lint, test, stats, drafts."),
    ("hook", "sentinel.cli.hook", "Run the rule gate as a hook for external coding agents."),
    ("agent", "sentinel.cli.agent", "Agent profiles: create, list, show, add-skill, set-model, remove."),
    ("memory", "sentinel.cli.memory", "Memory vaults: list, show, search, forget notes."),
    ("trust", "sentinel.cli.trust", "Trusted code of agent-authored tools: list, revoke."),
    ("watch", "sentinel.cli.watch", "Watchers: list, show, test, fire, history, run."),
    ("workflow", "sentinel.cli.workflow", "Saved workflows: create, list, show, run."),
    ("mcp", "sentinel.cli.mcp", "MCP servers for agents: list, add, remove, tools, trust."),
]
# Modules whose `register(app)` adds top-level commands.
COMMAND_MODULES = ["sentinel.cli.runs", "sentinel.cli.system", "sentinel.cli.chat", "sentinel.cli.web", "sentinel.cli.watch"]
# Which of COMMAND_MODULES registers each top-level command (tests/cli/test_start.py keeps it true).
# A command missing here still works: its name is unknown, so every command is built.
COMMANDS = {
    **dict.fromkeys(RUN_COMMANDS, "sentinel.cli.runs"),
    **dict.fromkeys(("setup", "init", "supervisor"), "sentinel.cli.system"),
    **dict.fromkeys(("chat", "chats", "restore"), "sentinel.cli.chat"),
    "web": "sentinel.cli.web",
    "inbox": "sentinel.cli.watch",
}


def _new_app() -> typer.Typer:
    return typer.Typer(
        name="sentinel",
        help="Sentinel: a supervised agent harness for Linux.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )


def _register(app: typer.Typer, module_name: str) -> None:
    if importlib.util.find_spec(module_name):
        importlib.import_module(module_name).register(app)


def _add_group(app: typer.Typer, name: str, module_name: str, help_text: str) -> None:
    if importlib.util.find_spec(module_name):
        app.add_typer(importlib.import_module(module_name).app, name=name, help=help_text)


def build(args: list[str] | None = None) -> typer.Typer:
    """The app with every command, or (given the arguments) only the group or module their command names."""
    app = _new_app()
    name = args[0] if args else None
    group = next((g for g in GROUPS if g[0] == name), None)
    if group is not None:
        _add_group(app, *group)
        return app
    if name in COMMANDS:
        _register(app, COMMANDS[name])
        # typer runs an app of one command as that command (no name to type): only a group keeps its syntax
        if len(app.registered_commands) > 1 or app.registered_groups:
            return app
        app = _new_app()
    for module_name in COMMAND_MODULES:
        _register(app, module_name)
    for group in GROUPS:
        _add_group(app, *group)
    return app


def run(args: list[str]) -> None:
    app = build(args)
    try:
        app(args=args, prog_name="sentinel")
    except SentinelError as exc:
        fail(exc)
