"""`sentinel muzzle ...`: serve the proxy, issue and list run tokens, read the call log, set up system mode.

Each command is a thin call into sentinel.muzzle; `--system` uses the system
layout (/etc/sentinel, /var/lib/sentinel-muzzle) instead of $SENTINEL_HOME.
"""

from __future__ import annotations

import re
import sys
import time
from typing import TYPE_CHECKING, List, Optional

import typer

from sentinel.ui.render import print_json
from sentinel.errors import UsageError

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.muzzle.layout import Layout

app = typer.Typer(no_args_is_help=True, help="The inspecting model proxy.")

SYSTEM = typer.Option(False, "--system", help="System mode: /etc/sentinel config, Muzzle's system store.")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_ttl(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"--ttl: {text!r} is not a duration (e.g. 900, 30m, 12h, 7d)")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def _context(system: bool) -> "tuple[Config, Layout]":
    from sentinel import config as config_mod
    from sentinel.muzzle.layout import local_layout, system_config_dir, system_layout

    if system:
        cfg = config_mod.load(system_config_dir())
        return cfg, system_layout(cfg)
    cfg = config_mod.load()
    return cfg, local_layout(cfg)


@app.command()
def serve(host: Optional[str] = typer.Option(None, "--host", help="Listen address (default: muzzle.host)."),
          port: Optional[int] = typer.Option(None, "--port", help="Listen port (default: muzzle.port; 0: any)."),
          system: bool = SYSTEM) -> None:
    """Serve the OpenAI-compatible proxy until interrupted."""
    from sentinel.muzzle.server import serve as run_server

    cfg, layout = _context(system)
    host = host or cfg.muzzle.host
    port = cfg.muzzle.port if port is None else port

    def ready(url: str) -> None:
        print(f"muzzle listening on {url} (log: {layout.log_path})", file=sys.stderr, flush=True)

    run_server(cfg, layout, host, port, on_ready=ready)


@app.command()
def token(agent: str = typer.Option(..., "--agent", "-a", help="Agent the token speaks for."),
          run: Optional[str] = typer.Option(None, "--run", help="Run id to charge (default: a new manual-… id)."),
          models: List[str] = typer.Option([], "--models", "--model", "-m",
                                           help="Allowed provider/model names or globs (repeat or comma-separate; "
                                                "default: the configured default model)."),
          ttl: str = typer.Option("24h", "--ttl", help="Lifetime: seconds or 30m, 12h, 7d."),
          run_tokens: Optional[int] = typer.Option(None, "--run-tokens", help="Token budget of the run."),
          daily_tokens: Optional[int] = typer.Option(None, "--daily-tokens", help="Token budget of the agent per day."),
          system: bool = SYSTEM, as_json: bool = typer.Option(False, "--json")) -> None:
    """Issue a run token by hand (printed once; only its hash is stored)."""
    from sentinel.muzzle import Budgets, issue_token

    cfg, layout = _context(system)
    allowed = [m.strip() for item in models for m in item.split(",") if m.strip()] or [cfg.default_model]
    ttl_s = parse_ttl(ttl)
    budgets = Budgets(run_tokens=run_tokens if run_tokens is not None else cfg.muzzle.budgets.run_tokens,
                      agent_daily_tokens=daily_tokens if daily_tokens is not None
                      else cfg.muzzle.budgets.agent_daily_tokens)
    run_id = run or f"manual-{time.strftime('%Y%m%d%H%M%S')}"
    value = issue_token(agent, run_id, allowed, ttl_s, budgets, store=layout.store_path)
    if as_json:
        return print_json({"token": value, "agent": agent, "run_id": run_id, "models": allowed,
                           "expires_at": time.time() + ttl_s, **budgets.model_dump()})
    print(value)


@app.command()
def tokens(all_: bool = typer.Option(False, "--all", help="Include expired and revoked tokens."),
           system: bool = SYSTEM, as_json: bool = typer.Option(False, "--json")) -> None:
    """List issued tokens (by hash prefix; the tokens themselves are never stored)."""
    from sentinel.muzzle.tokens import TokenStore

    _, layout = _context(system)
    store = TokenStore.open(layout.store_path)
    try:
        rows = store.list(include_expired=all_)
    finally:
        store.close()
    if as_json:
        return print_json(rows)
    for r in rows:
        left = max(0, r["expires_at"] - time.time())
        state = "revoked" if r["revoked"] else ("expired" if not left else f"{left / 3600:.1f}h left")
        print(f"{r['id']}  {r['agent']:<12} {r['run_id']:<22} {','.join(r['models'])}  {state}")


@app.command()
def revoke(run: str = typer.Option(..., "--run", help="Revoke every token of this run."),
           system: bool = SYSTEM) -> None:
    """Revoke a run's tokens: its next model call gets 401."""
    from sentinel.muzzle.tokens import TokenStore

    _, layout = _context(system)
    store = TokenStore.open(layout.store_path)
    try:
        print(f"revoked {store.revoke_run(run)} token(s) of run {run}")
    finally:
        store.close()


@app.command()
def log(run: Optional[str] = typer.Option(None, "--run", help="Only this run's calls."),
        last: int = typer.Option(20, "--last", "-n", help="How many of the newest lines (0: all)."),
        system: bool = SYSTEM, as_json: bool = typer.Option(False, "--json", help="One JSON document (a list).")) -> None:
    """Show Muzzle's call log."""
    from sentinel.muzzle import calllog

    _, layout = _context(system)
    rows = list(calllog.read(layout.log_path, run=run, last=last or None))
    if as_json:
        return print_json(rows)
    for r in rows:
        ttft = f" ttft {r['ttft_ms']:.0f}ms" if r.get("ttft_ms") is not None else ""
        print(f"{r['time']} {r.get('agent') or '-'} {r.get('run') or '-'} {r.get('model') or '-'} {r['status']} "
              f"{r['decision']} {r['latency_ms']:.0f}ms{ttft} in {r['tokens_in']} out {r['tokens_out']}"
              + (f" — {r['error']}" if r.get("error") else ""))


@app.command("setup-system")
def setup_system() -> None:
    """Create Muzzle's system user, state directory and keys file (root; idempotent)."""
    from sentinel.muzzle.system import setup_for

    done = setup_for(_context(True)[0])
    print(f"muzzle user {done.user}: keys {done.keys_file} (0600), state {done.state_dir} (0700)")
