"""System mode commands: setup (name the agent, create its user), init (register an existing user),
supervisor (the root daemon, foreground). Run commands live in sentinel/cli/runs.py and use the
supervisor's socket when it answers.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from sentinel.ui.render import print_json

PROMPT = "Name your agent (also its Linux user)"


def setup(name: Optional[str] = typer.Option(None, "--name", "--leash", help="The agent's name; also its Linux user."),
          as_json: bool = typer.Option(False, "--json")) -> None:
    """Name your agent: creates its Linux user and its ~/.sentinel (written as that user), and makes it the default."""
    from sentinel.supervisor import admin

    if name is None:
        name = typer.prompt(PROMPT, default=admin.DEFAULT_NAME) if sys.stdin.isatty() else admin.DEFAULT_NAME
    who = admin.setup(name)
    if as_json:
        return print_json(who.public())
    verb = "created" if who.created else "already existed; its tree is up to date"
    for line in who.system:
        print(line)
    print(f"agent {who.display_name}: Linux user {who.name} (uid {who.uid}, home {who.home}) {verb}")
    print(f"default agent: {who.name}  —  try: sentinel run \"say hello\" --agent {who.name}")


def init(leash: str = typer.Option(..., "--leash", help="An existing Linux user to register as an agent (also its name)."),
         muzzle: bool = typer.Option(False, "--muzzle", help="Also check that Muzzle is reachable."),
         as_json: bool = typer.Option(False, "--json")) -> None:
    """Register an existing user with Leash (and check Muzzle) so the supervisor can run it as an agent."""
    from sentinel.supervisor import admin

    who = admin.init_leash(leash)
    report = {**who.public(), "leash": leash_status(who.name)}
    if muzzle:
        report["muzzle"] = muzzle_status()
    if as_json:
        return print_json(report)
    print(f"agent {who.name}: registered (uid {who.uid}, home {who.home})")
    print(f"leash: {report['leash']}")
    if muzzle:
        print(f"muzzle: {report['muzzle']}")


def leash_status(user: str) -> str:
    from sentinel.leash import cgroups, lsm
    from sentinel.supervisor.admin import etc_dir

    abi = lsm.abi_version()
    landlock = f"Landlock ABI {abi}" if abi else "Landlock unavailable (workers refuse to start under sandbox: enforce)"
    return f"policy {etc_dir() / 'leash' / (user + '.yaml')}; {landlock}; cgroups: {cgroups.describe()}"


def muzzle_status() -> str:
    import importlib.util
    import socket

    from sentinel import config as config_mod
    from sentinel.supervisor.admin import etc_dir

    if importlib.util.find_spec("sentinel.muzzle") is None:
        return "not configured (sentinel.muzzle is not installed)"
    import sentinel.muzzle as muzzle

    if not hasattr(muzzle, "issue_token"):
        return "not configured (this Muzzle cannot issue run tokens)"
    cfg = config_mod.load(etc_dir()).muzzle
    if not cfg.enabled:
        return "disabled in /etc/sentinel/config.yaml (muzzle.enabled: false)"
    try:
        with socket.create_connection((cfg.host, cfg.port), timeout=1.0):
            return f"listening on http://{cfg.host}:{cfg.port}"
    except OSError:
        return f"not running on http://{cfg.host}:{cfg.port} (start it: sentinel muzzle serve)"


def supervisor(state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="Database directory (default /var/lib/sentinel)."),
               socket_path: Optional[Path] = typer.Option(None, "--socket", help="Operator socket (default /run/sentinel/sentinel.sock)."),
               group: Optional[str] = typer.Option(None, "--group", help="Operator group (default sentinel)."),
               resume: bool = typer.Option(True, "--resume/--no-resume", help="Resume interrupted runs on start."),
               model_port: list[int] = typer.Option([], "--allow-model-port",
                                                    help="A loopback TCP port workers may reach besides Muzzle's.")) -> None:
    """Run the supervisor in the foreground (as root): run registry, approval queue, workers."""
    from sentinel.supervisor import admin

    admin.serve(state_dir, socket_path, group, resume, list(model_port))


def register(app: typer.Typer) -> None:
    for fn in (setup, init, supervisor):
        app.command(fn.__name__)(fn)
