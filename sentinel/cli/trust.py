"""`sentinel trust`: the code hashes of agent-authored tools an operator has trusted, and revoking them.

Trust is recorded when an operator approves a call of an untrusted tool (the approval shows its code
and SHA-256); later calls of the same code run `auto`. In system mode this talks to the supervisor,
whose database the agents cannot write; in local mode it uses $SENTINEL_HOME/state/sentinel.db.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

import typer

from sentinel.ui.render import print_json

if TYPE_CHECKING:
    from sentinel.engine.api import Engine

app = typer.Typer(no_args_is_help=True, help="Trusted code of agent-authored tools: list, revoke.")


def _engine() -> "Engine":
    from sentinel.connect import open_engine

    return open_engine()


@app.command("list")
def list_(agent: Optional[str] = typer.Option(None, "--agent", "-a", help="Only this agent's trusted tools."),
          as_json: bool = typer.Option(False, "--json")) -> None:
    """List trusted tool code: agent, tool, SHA-256, who trusted it and when."""
    with _engine() as engine:
        rows = engine.trust_list(agent)
    if as_json:
        return print_json(rows)
    if not rows:
        print("no trusted tools")
    for r in rows:
        at = r.get("trusted_at")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if isinstance(at, (int, float)) else "?"
        print(f"{r['agent']:<20} {r['tool']:<24} {r['code_sha256']}  by {r['trusted_by']} {when}")


@app.command("revoke")
def revoke(tool: str = typer.Argument(..., help="Tool name."),
           agent: Optional[str] = typer.Option(None, "--agent", "-a", help="Only this agent's trust (default: all)."),
           sha256: Optional[str] = typer.Option(None, "--sha256", help="Only this code hash (default: every hash)."),
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Revoke trust: the tool's next call pauses for approval again."""
    with _engine() as engine:
        count = engine.trust_revoke(tool, agent=agent, code_sha256=sha256)
    if as_json:
        return print_json({"tool": tool, "agent": agent, "code_sha256": sha256, "revoked": count})
    print(f"revoked {count} trusted hash(es) of {tool}" + (f" for {agent}" if agent else ""))
