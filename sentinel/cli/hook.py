"""`sentinel hook install AGENT`, `sentinel hook status`, `sentinel hook compat`.

(`sentinel hook AGENT EVENT` itself never reaches typer: the console script sends it to
`sentinel.hooks.entry` directly, see `sentinel/cli/__init__.py`.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from sentinel.jsontypes import JSONObject

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.command()
def install(agent: str = typer.Argument(..., help="claude-code, copilot-cli, cursor, windsurf, cline, amazon-q, "
                                                  "gemini-cli or codex."),
            repo: Optional[Path] = typer.Option(None, "--repo", help="Repository root (default: the cwd)."),
            command: Optional[str] = typer.Option(None, "--command", help="How the agent runs Sentinel "
                                                  "(default: this installation's `sentinel` executable).")) -> None:
    """Write AGENT's hook config (and .claude/sentinel/ with a starter config) in the repository."""
    from sentinel.hooks.install import ask_note, install_agent, judge_note
    from sentinel.hooks.trust import take_steps

    root = (repo or Path.cwd()).resolve()
    for path in install_agent(agent, root, command):
        print(f"wrote {path}")
    print(ask_note(agent))
    for step in take_steps(agent, str(root)):
        print(step)
    print(judge_note(root))


@app.command()
def status(repo: Optional[Path] = typer.Option(None, "--repo", help="Repository root (default: the cwd)."),
           as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
           judge_timeout: float = typer.Option(60.0, "--judge-timeout", min=0.1,
                                               help="Seconds each judge has to answer its test question.")) -> None:
    """Per installed agent: is the hook installed, trusted by the agent, reachable, and do the judges of its
    rules answer? Names the missing step; exits 1 while any gate is inactive."""
    from sentinel.hooks.trust import Judging, check, installed_agents

    root = str((repo or Path.cwd()).resolve())
    agents = installed_agents(root)
    judging = Judging(root, judge_timeout) if agents else None
    checks = [check(agent, root, judging) for agent in agents]
    if as_json:
        print(json.dumps({"repo": root, "gate": judging.to_dict() if judging else None,
                          "agents": [c.to_dict() for c in checks]}, indent=2))
    elif not checks:
        print(f"no agent hook installed in {root} (sentinel hook install AGENT)")
    for line in (judging.lines() if judging and not as_json else []):
        print(line)
    for c in checks if not as_json else []:
        print(c.line())
    raise typer.Exit(0 if all(c.active for c in checks) else 1)


@app.command()
def allowlist(kind: Optional[str] = typer.Argument(None, help="With --revoke: command, write or call (or an old "
                                                "entry's bash or file_write)."),
              value: Optional[str] = typer.Argument(None, help="With --revoke: the entry's value, as `--json` lists "
                                                 "it."),
              repo: Optional[Path] = typer.Option(None, "--repo", help="Only this repository's (with --revoke: "
                                                  "default the cwd's)."),
              revoke: bool = typer.Option(False, "--revoke", help="Remove the entry KIND VALUE (or, with --all, "
                                          "every entry of the repository): that call asks again."),
              everything: bool = typer.Option(False, "--all", help="With --revoke: every entry of the repository."),
              client: Optional[str] = typer.Option(None, "--client", help="With --revoke: only the entries of this "
                                                   "coding agent (claude-code, codex, ...); default every agent's "
                                                   "and the old entries naming none."),
              as_json: bool = typer.Option(False, "--json", help="Print one JSON document.")) -> None:
    """The exact calls a person allowed always, per repository and coding agent (`sentinel approve ID --always`):
    that agent's same call files no approval and calls no judge for `ask` rules. Kept in your Sentinel store (the
    operator's, in system mode), never in the repository."""
    from sentinel.errors import UsageError
    from sentinel.hooks.ask import open_queue, repository
    from sentinel.ui.escape import visible

    if revoke and not everything and (kind is None or value is None):
        raise UsageError("--revoke: name the entry (KIND VALUE, as `sentinel hook allowlist` lists it) or use --all")
    if not revoke and (kind is not None or everything or client is not None):
        raise UsageError("KIND VALUE, --all and --client are for --revoke")
    queue = open_queue()
    try:
        if revoke:
            root = repository(str(repo or Path.cwd()))
            count = queue.revoke(root, None if everything else kind, None if everything else value, client)
            print(json.dumps({"revoked": count}) if as_json else f"revoked {count} entr{'y' if count == 1 else 'ies'} "
                  f"of {visible(root)}")
            return
        entries = queue.allowlist(repository(str(repo)) if repo else None)
    finally:
        queue.close()
    if as_json:
        print(json.dumps(entries, indent=2))
    elif not entries:
        print("the allowlist is empty (sentinel approve ID --always adds a coding agent's exact call)")
    for e in entries if not as_json else []:
        print(entry_line(e))


OLD_KINDS = ("bash", "file_write")  # the first allowlist's path-only and directory-less keys: they match nothing now


def entry_line(e: JSONObject) -> str:
    """One allowlist entry for a terminal: every field an agent or its repository's name could shape shown through
    `visible` (sentinel/ui/escape.py), so no escape sequence, carriage return or blank character forges a line.
    An entry names the coding agent it was allowed for; one that names none was made before entries did, and
    matches no call."""
    from sentinel.ui.escape import visible

    who = "no client" if e.get("client") is None else f"for {visible(e.get('client'))}"
    old = "  (old entry: matches no call; revoke it)" if e.get("kind") in OLD_KINDS or e.get("client") is None else ""
    return (f"{visible(e.get('repository'))}  {visible(e.get('kind'))}  {visible(e.get('value'))}  "
            f"({who}, by {visible(e.get('added_by'))}, approval {visible(e.get('approval_id'))}){old}")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []})
def compat(ctx: typer.Context) -> None:
    """Install the coding-agent CLIs from npm and prove the hooks inside them (see --help)."""
    from sentinel.hooks.compat.run import main

    raise typer.Exit(main(list(ctx.args)))
