"""`sentinel leash`: run a command under an agent's tool profile, report kernel support, run the egress proxy."""

from __future__ import annotations

import json
import os
import pwd
import sys
from pathlib import Path
from typing import Any, List, Optional

import typer

app = typer.Typer(no_args_is_help=True)


@app.command("exec", context_settings={"allow_interspersed_args": False})
def exec_(
    cmd: List[str] = typer.Argument(..., metavar="-- CMD ...", help="The command and its arguments."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Agent (Linux user in system mode) whose policy applies."),
    workspace: Optional[Path] = typer.Option(None, "--workspace", help="Read-write directory (default: the workspace)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Kill everything after this many seconds."),
) -> None:
    """Run CMD under the tool profile, on this terminal, and exit with its exit code."""
    from sentinel import config, paths
    from sentinel.leash import launch, settings_cache
    from sentinel.leash.links import Owner, agent_writable, resolve
    from sentinel.leash.profile import tool_profile

    cfg = config.load()
    who = launch.identity(agent)
    pol = settings_cache.policy_for(agent, system=who.system)
    # resolved as a run's workspace is: no link the agent could have made (sentinel/leash/links.py `resolve`)
    owner = Owner.of(pwd.getpwnam(agent)) if who.system and agent else None
    ws = Path(resolve(workspace or paths.workspace_dir(), agent_writable(pol.read_write, owner), owner))
    if not ws.is_dir():
        from sentinel.errors import UsageError

        raise UsageError(f"--workspace {ws}: not a directory")
    prof = tool_profile(ws, pol, proxy=settings_cache.proxy())
    env = launch.base_env(ws)
    if term := os.environ.get("TERM"):
        env["TERM"] = term
    res = launch.launch(cmd, prof, cwd=ws, env=env, timeout_s=timeout, who=who, sandbox=cfg.sandbox,
                        stdio=(sys.stdin.fileno(), sys.stdout.fileno(), sys.stderr.fileno()))
    if res.missing:
        print(f"sentinel: sandbox layers missing: {', '.join(res.missing)}", file=sys.stderr)
    if res.timed_out:
        print(f"sentinel: timed out after {timeout:g}s; killed", file=sys.stderr)
        raise typer.Exit(124)
    code = res.exit_code if res.exit_code is not None else 1
    raise typer.Exit(code if code >= 0 else 128 - code)


@app.command()
def check(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Report this agent's profiles."),
) -> None:
    """Kernel support (Landlock ABI, cgroups, nftables) and what each profile enforces."""
    from sentinel.leash.check import report

    rep = report(agent)
    if as_json:
        print(json.dumps(rep, indent=2))
        return
    _render(rep)


# untyped: sentinel/leash/check.py's report, a nested JSON document typed so there
def _render(rep: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    k = rep["kernel"]
    con = Console()
    con.print(f"[bold]Landlock ABI[/] {k['landlock_abi']}  "
              f"(filesystem {_yn(k['landlock']['filesystem'])}, TCP ports {_yn(k['landlock']['tcp_ports'])}, "
              f"signal/abstract-socket scoping {_yn(k['landlock']['scope_signals_abstract_unix'])})")
    con.print(f"[bold]cgroups[/] {k['cgroup']['hierarchies']}; usable here: {k['cgroup']['usable_by_this_user']}")
    nft = k["nftables"]
    installed = "unknown (needs root)" if nft["installed"] is None else _yn(nft["installed"])
    con.print(f"[bold]nftables[/] available {_yn(nft['available'])}, sentinel rules installed {installed}")
    con.print(f"[bold]mode[/] {rep['mode']} as {rep['runs_as']}; sandbox: {rep['sandbox']}; "
              f"policy {rep['policy_file']}; egress proxy {rep['egress_proxy']}")
    table = Table("profile", "enforced", "missing", "write", "TCP ports", "network")
    for name, prof in rep["profiles"].items():
        table.add_row(name, ", ".join(prof["enforced"]), ", ".join(prof["missing"]) or "-",
                      "\n".join(p for p in prof["read_write"] if not p.startswith("/dev/")),
                      ", ".join(map(str, prof["tcp_connect_ports"])) or "none", _yn(prof["network"]))
    con.print(table)


def _yn(flag: bool) -> str:
    return "yes" if flag else "no"


@app.command()
def proxy(
    host: Optional[str] = typer.Option(None, "--host", help="Listen address (default: leash.proxy_host)."),
    port: Optional[int] = typer.Option(None, "--port", help="Listen port (default: leash.proxy_port)."),
) -> None:
    """Run the egress proxy (HTTP CONNECT and plain HTTP) in the foreground."""
    import asyncio

    from sentinel.leash import egress, settings_cache

    s = settings_cache.settings()
    system = os.geteuid() == 0
    audit = egress.jsonl_audit(Path(s.audit_log)) if s.audit_log else _store_audit
    server = egress.EgressProxy(egress.policy_lookup(system, Path(s.policy_dir)), audit)

    async def main() -> None:
        srv = await server.serve(host or s.proxy_host, port or s.proxy_port)
        print(f"sentinel egress proxy on {host or s.proxy_host}:{port or s.proxy_port}", file=sys.stderr)
        async with srv:
            await srv.serve_forever()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass


@app.command()
def egress(uninstall: bool = typer.Option(False, "--uninstall", help="Remove the table (uninstalling Sentinel).")) -> None:
    """Install (idempotently) or remove the per-UID nftables egress rules for every registered agent (root)."""
    from sentinel.supervisor import admin

    if uninstall:
        admin.remove_egress(netns=os.environ.get("SENTINEL_EGRESS_NETNS"))
        print("egress table removed")
        return
    print(f"egress: {admin.apply_egress()}")


def _store_audit(record: dict[str, object]) -> None:
    """The egress proxy's default audit sink: the state database's audit log."""
    from sentinel.engine import audit

    audit.record("egress", None, **record)
