"""The typer app: one module per command group, each command a thin call into the engine.

Errors: a SentinelError prints `error: <one line>` on stderr and exits with its code
(2 for bad usage or input); nothing else is caught, so harness bugs stay visible.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import typer

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


def build() -> typer.Typer:
    app = typer.Typer(
        name="sentinel",
        help="Sentinel: a supervised agent harness for Linux.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    for module_name in COMMAND_MODULES:
        if importlib.util.find_spec(module_name):
            importlib.import_module(module_name).register(app)
    for name, module_name, help_text in GROUPS:
        if importlib.util.find_spec(module_name):
            app.add_typer(importlib.import_module(module_name).app, name=name, help=help_text)
    return app


def fail(exc: SentinelError) -> None:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)


def run(args: list[str]) -> None:
    app = build()
    try:
        app(args=args, prog_name="sentinel")
    except SentinelError as exc:
        fail(exc)
