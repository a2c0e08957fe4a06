"""`sentinel hook install AGENT`: write that agent's hook config in the current repository.

(`sentinel hook AGENT EVENT` itself never reaches typer: the console script sends it to
`sentinel.hooks.entry` directly, see `sentinel/cli/__init__.py`.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.command()
def install(agent: str = typer.Argument(..., help="claude-code, copilot-cli, cursor, windsurf, cline, amazon-q, "
                                                  "gemini-cli or codex."),
            repo: Optional[Path] = typer.Option(None, "--repo", help="Repository root (default: the cwd)."),
            command: Optional[str] = typer.Option(None, "--command", help="How the agent runs Sentinel "
                                                  "(default: this installation's `sentinel` executable).")) -> None:
    """Write AGENT's hook config (and .claude/sentinel/ with a starter config) in the repository."""
    from sentinel.hooks.install import install_agent

    for path in install_agent(agent, (repo or Path.cwd()).resolve(), command):
        print(f"wrote {path}")
