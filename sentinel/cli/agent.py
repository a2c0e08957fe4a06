"""`sentinel agent`: create, list and show agent profiles; attach skills; set the model; remove an agent.

Profiles live in $SENTINEL_HOME/agents/ of the user running the command (in system mode, run it as the
agent's user: `sudo -u naomi sentinel agent create ...`). Every problem is one line naming the file,
field or argument. `agent remove` (root) unregisters a system-mode agent: its unfinished runs are
cancelled, its uid leaves the per-UID egress table, and with --user its Linux user, home and Leash policy
are deleted too (only for a user `sentinel setup` created).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import typer

from sentinel.ui.render import print_json
from sentinel.ui.escape import visible

app = typer.Typer(no_args_is_help=True, help="Agent profiles: souls, models, skills, tools, memory scopes.")


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]


@contextmanager
def _arguments(**flags: str) -> Iterator[None]:
    """A profile field that came from an argument is reported as that argument, not as the file."""
    from sentinel.errors import ConfigError, UsageError

    try:
        yield
    except ConfigError as exc:
        field, _, detail = exc.detail.partition(": ")
        flag = flags.get(field.split("[")[0])
        if flag is None:
            raise
        raise UsageError(f"{flag}: {detail}") from None


def _describe(name: str) -> dict[str, object]:
    from sentinel.agents import profile as profiles

    profile = profiles.load(name)
    own = profiles.soul_path(profile.name)
    return {**profile.public(), "file": str(profiles.profile_path(profile.name)),
            "soul_file": str(own) if own.is_file() else None,
            "soul_source": "own" if own.is_file() else f"starter ({profile.soul})"}


@app.command("create")
def create(name: str = typer.Argument(..., help="Agent name: lowercase letters, digits, _ or -."),
           model: Optional[str] = typer.Option(None, "--model", "-m", help="provider/model (a configured model)."),
           soul: Optional[Path] = typer.Option(None, "--soul", help="Markdown file to copy as the agent's soul."),
           tools: Optional[str] = typer.Option(None, "--tools", help="Granted tools, comma separated (default: all)."),
           memory: Optional[str] = typer.Option(None, "--memory", help="Memory scope (default: private, the name)."),
           description: Optional[str] = typer.Option(None, "--description", "-d", help="What the agent is for."),
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Create an agent profile (agents/NAME.yaml, and agents/NAME.soul.md with --soul)."""
    from sentinel.agents import profile as profiles

    with _arguments(model="--model", tools="--tools", memory="--memory"):
        profiles.create(name, model=model, soul=soul, tools=_split(tools), memory=memory, description=description)
    data = _describe(name)
    if as_json:
        return print_json(data)
    print(f"created agent {name} ({data['file']}); memory scope {data['memory']}")


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the agent profiles."""
    from sentinel.agents import profile as profiles

    rows = [profiles.load(name).public() for name in profiles.names()]
    if as_json:
        return print_json(rows)
    if not rows:
        print("no agents yet: sentinel agent create NAME")
    for row in rows:
        model = row.get("model") or "(default model)"
        print(visible(f"{row['name']:<20} {model:<28} memory={row['memory']:<14} {row.get('description') or ''}".rstrip()))


@app.command("show")
def show(name: str = typer.Argument(...), as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one profile: model, soul, skills, tools, memory scope."""
    data = _describe(name)
    if as_json:
        return print_json(data)
    for key in ("name", "description", "model", "soul_source", "soul_file", "skills", "tools", "mcp", "memory", "file"):
        value = data.get(key)
        if value not in (None, [], ""):
            print(visible(f"{key}: {', '.join(value) if isinstance(value, list) else value}"))


@app.command("add-skill")
def add_skill(name: str = typer.Argument(...), skill: str = typer.Argument(..., help="A bundled or own skill."),
              as_json: bool = typer.Option(False, "--json")) -> None:
    """Attach a skill: it is loaded into the agent's system prompt from its next model call."""
    from sentinel.agents import profile as profiles

    current = profiles.load(name, check=False)
    if skill not in current.skills:
        with _arguments(skills="SKILL"):
            profiles.update(name, skills=[*current.skills, skill])
    if as_json:
        return print_json(_describe(name))
    print(f"{name}: skills {', '.join(profiles.load(name).skills)}")


@app.command("set-model")
def set_model(name: str = typer.Argument(...), model: str = typer.Argument(..., help="provider/model."),
              as_json: bool = typer.Option(False, "--json")) -> None:
    """Bind the agent to one of the configured models."""
    from sentinel.agents import profile as profiles

    with _arguments(model="MODEL"):
        profiles.update(name, model=model)
    if as_json:
        return print_json(_describe(name))
    print(f"{name}: model {model}")


@app.command("soul-history")
def soul_history(name: str = typer.Argument(...), as_json: bool = typer.Option(False, "--json")) -> None:
    """List the agent's earlier souls (each edit_soul or restore keeps the soul it replaces), oldest first."""
    import time

    from sentinel.agents import profile as profiles, soulhistory

    profile = profiles.load(name, check=False)
    kept = soulhistory.versions(profile.name)
    if as_json:
        return print_json({"agent": profile.name, "current": _describe(name)["soul_source"],
                           "versions": [v.public() for v in kept]})
    if not kept:
        print(f"{profile.name}: no earlier souls (its soul was never edited)")
    for v in kept:
        print(f"{v.n:>4}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(v.mtime))}  {v.chars:>6} chars  "
              f"{v.first_line[:60]}")


@app.command("restore-soul")
def restore_soul(name: str = typer.Argument(...),
                 version: Optional[int] = typer.Option(None, "--version", "-v", min=1,
                                                       help="The version to bring back (default: the newest kept, "
                                                            "the soul before the last change)."),
                 as_json: bool = typer.Option(False, "--json")) -> None:
    """Bring back an earlier soul; the soul it replaces is kept as a version too, so a restore can be undone."""
    from sentinel.agents import profile as profiles, soulhistory

    profile = profiles.load(name, check=False)
    restored, kept = soulhistory.restore(profile, n=version)
    if as_json:
        return print_json({"agent": profile.name, "restored": restored, "kept": kept,
                           "soul_file": str(profiles.soul_path(profile.name))})
    print(f"{profile.name}: soul version {restored} restored; the soul it replaced is kept as version {kept}")


@app.command("remove")
def remove(name: str = typer.Argument(..., help="The agent (its Linux user name)."),
           user: bool = typer.Option(False, "--user", help="Also delete its Linux user, home and Leash policy."),
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Remove a system-mode agent: its registration, its egress entry and (--user) its Linux user."""
    import os
    import pwd

    from sentinel.supervisor import admin

    by = os.environ.get("SUDO_USER") or pwd.getpwuid(os.getuid()).pw_name
    done = admin.remove_agent(name, user=user, by=by)
    if as_json:
        return print_json(done)
    cancelled = done["runs_cancelled"]
    print(f"agent {name} removed" + (f"; cancelled {', '.join(cancelled)}" if cancelled else "")
          + f"; egress: {done['egress']}" + ("; Linux user and home deleted" if done["user_deleted"] else ""))
