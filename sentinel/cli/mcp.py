"""`sentinel mcp`: the MCP servers of config.yaml `mcp_servers` (docs/mcp.md).

    sentinel mcp list                       each server: transport, command or URL, network needs, pin state
    sentinel mcp add NAME -- CMD [ARG...]   a stdio server (or `--url URL` for streamable HTTP)
    sentinel mcp remove NAME
    sentinel mcp tools NAME                 start it under Leash and list its tools: verdict, withheld ones, changes
    sentinel mcp trust NAME                 pin its command/URL and tool list (the hash calls are checked against)
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, List, Optional

import typer

from sentinel.cli.render import print_json
from sentinel.errors import NotFound, UsageError

app = typer.Typer(no_args_is_help=True, help="MCP servers for agents: list, add, remove, tools, trust.")


def _config_file() -> Path:
    """The operator's config.yaml: /etc/sentinel's in system mode (read by the supervisor when it starts),
    $SENTINEL_HOME's otherwise."""
    from sentinel.config import config_path

    return config_path(_system_root())


def _system_root() -> Path | None:
    """System mode by the rule every command follows (sentinel/client/system.py `system_mode`)."""
    from sentinel.client.system import system_mode

    if system_mode():
        from sentinel.muzzle.layout import system_config_dir

        return system_config_dir()
    return None


def _load() -> Any:
    from sentinel import config

    return config.load(_system_root())


def _raw() -> dict[str, Any]:
    from sentinel.config import read_yaml

    path = _config_file()
    data = read_yaml(path) if path.exists() else {}
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: top level must be a mapping")
    return data


def _save(data: dict[str, Any]) -> None:
    """Validate the whole config as it would load, then write it (atomically)."""
    import yaml

    from sentinel import paths
    from sentinel.config import Config
    from sentinel.errors import validated

    path = _config_file()
    validated(Config, data, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    if _system_root() is not None:  # /etc/sentinel's: root:sentinel-muzzle 0640 as setup made it, never 0644
        from sentinel.muzzle.system import write_config

        return write_config(path, text)
    paths.write_atomic(path, text, 0o600, keep=True)


def _server(name: str) -> Any:
    servers = _load().mcp_servers
    if name not in servers:
        raise NotFound(f"no MCP server {name!r} in {_config_file()} (configured: {', '.join(servers) or 'none'})")
    return servers[name]


def _engine() -> Any:
    from sentinel.connect import open_engine

    return open_engine()


def _pin(name: str) -> dict[str, Any] | None:
    with _engine() as engine:
        return engine.mcp_trust(name)


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Print one JSON document.")) -> None:
    """The configured servers: transport, command or URL, network needs, read-only tools, pin state."""
    rows = []
    for name, server in _load().mcp_servers.items():
        pin = _pin(name) if server.pin else None
        rows.append({"name": name, "transport": server.transport, "target": server.target,
                     "network": server.network, "read": server.read, "read_only": server.read_only,
                     "tools": server.tools, "pin": server.pin,
                     "trusted_sha256": pin["sha256"] if pin else None, "trusted_by": pin["trusted_by"] if pin else None,
                     "headers": sorted(server.headers)})
    if as_json:
        return print_json(rows)
    if not rows:
        print("no MCP servers (add one: sentinel mcp add NAME -- COMMAND ...)")
    for r in rows:
        state = ("not pinned" if not r["pin"] else
                 f"trusted {r['trusted_sha256'][:16]}… by {r['trusted_by']}" if r["trusted_sha256"] else
                 "not trusted yet (sentinel mcp trust " + r["name"] + ")")
        print(f"{r['name']:<16} {r['transport']:<6} {r['target']}")
        print(f"{'':<16} network: {', '.join(r['network']) or 'none (no TCP at all)'}; {state}")
        if r["read_only"]:
            print(f"{'':<16} read-only (auto): {', '.join(r['read_only'])}")


@app.command("add")
def add(name: str = typer.Argument(..., help="Server name: its tools are mcp__NAME__<tool>."),
        cmd: Optional[List[str]] = typer.Argument(None, metavar="-- CMD [ARG...]", help="A stdio server's command."),
        url: Optional[str] = typer.Option(None, "--url", help="A streamable HTTP server's URL instead of CMD."),
        env: List[str] = typer.Option([], "--env", help="KEY=VALUE for a stdio server's environment (repeat)."),
        header: List[str] = typer.Option([], "--header", help="NAME=VALUE, or NAME=secret:SECRET for a Muzzle-held "
                                                              "secret (repeat)."),
        read: List[str] = typer.Option([], "--read", help="A path the server reads besides the workspace (repeat)."),
        network: List[str] = typer.Option([], "--network", help="host:port the server connects to (repeat)."),
        read_only: List[str] = typer.Option([], "--read-only", help="A tool that changes nothing: runs auto (repeat)."),
        no_pin: bool = typer.Option(False, "--no-pin", help="Do not pin its tool list (calls skip the trust check)."),
        replace: bool = typer.Option(False, "--replace", help="Replace a server of that name."),
        as_json: bool = typer.Option(False, "--json")) -> None:
    """Add a server to config.yaml `mcp_servers`; grant it to an agent with `mcp: [NAME]` in its profile."""
    from sentinel.mcp.settings import NAME, NAME_RULE

    if not NAME.match(name):
        raise UsageError(f"NAME {name!r}: {NAME_RULE}")
    if bool(cmd) == bool(url):
        raise UsageError("give a command after `--` (a stdio server) or --url (a streamable HTTP server), not both")
    data = _raw()
    servers = data.setdefault("mcp_servers", {}) or {}
    data["mcp_servers"] = servers
    if name in servers and not replace:
        raise UsageError(f"MCP server {name!r} already exists in {_config_file()} (use --replace)")
    entry: dict[str, Any] = {"command": list(cmd)} if cmd else {"url": url}
    if env:
        entry["env"] = dict(_pair(e, "--env") for e in env)
    if header:
        entry["headers"] = {k: ({"secret": v[7:]} if v.startswith("secret:") else v)
                            for k, v in (_pair(h, "--header") for h in header)}
    for key, values in (("read", read), ("network", network), ("read_only", read_only)):
        if values:
            entry[key] = list(values)
    if no_pin:
        entry["pin"] = False
    servers[name] = entry
    _save(data)
    server = _server(name)
    if as_json:
        return print_json({"name": name, **server.model_dump(exclude_defaults=True)})
    print(f"added MCP server {name!r} ({server.transport}: {server.target})")
    print(f"network: {', '.join(server.network) or 'none (no TCP at all)'}")
    print(f"next: `sentinel mcp tools {name}` to see its tools, `sentinel mcp trust {name}` to pin them, "
          f"and `mcp: [{name}]` in an agent profile to grant it")


def _pair(text: str, option: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"{option} {text!r}: use NAME=VALUE")
    return key, value


@app.command("remove")
def remove(name: str = typer.Argument(...), as_json: bool = typer.Option(False, "--json")) -> None:
    """Remove a server from config.yaml (and forget its pin)."""

    data = _raw()
    servers = data.get("mcp_servers") or {}
    if name not in servers:
        raise NotFound(f"no MCP server {name!r} in {_config_file()}")
    del servers[name]
    _save(data)
    with _engine() as engine:
        engine.mcp_trust_forget(name)
    if as_json:
        return print_json({"name": name, "removed": True})
    print(f"removed MCP server {name!r}")


def _listing(name: str, agent: Optional[str], workspace: Optional[Path]) -> tuple[Any, list[Any]]:
    """Start the server as a run of `agent` would (under Leash) and list its tools."""
    from sentinel import paths
    from sentinel.mcp.client import Connection, McpFailure, muzzle_secrets
    from sentinel.tools import ToolContext

    server = _server(name)
    cfg = _load()
    if workspace is None:
        workspace = Path(tempfile.mkdtemp(prefix="sentinel-mcp-"))
        workspace.chmod(0o755)  # its working directory, whichever user the server runs as
    ws = workspace.expanduser().resolve()
    ctx = ToolContext(workspace=ws, agent=agent or cfg.default_agent or "sentinel", sandbox=cfg.sandbox,
                      tools_mode=cfg.leash.tools, output_max_chars=cfg.tools.output_max_chars)
    conn = Connection(name, server, ctx, secret=muzzle_secrets(cfg, _system_root() or paths.home()))
    try:
        return server, conn.tools()
    except McpFailure as exc:
        raise UsageError(str(exc)) from None
    finally:
        conn.close()


@app.command("tools")
def tools(name: str = typer.Argument(...),
          agent: Optional[str] = typer.Option(None, "--agent", "-a", help="Start it as this agent's runs would."),
          workspace: Optional[Path] = typer.Option(None, "--workspace", help="Its workspace (default: an empty one)."),
          as_json: bool = typer.Option(False, "--json")) -> None:
    """Start the server under Leash and list its tools: verdict, withheld ones and why, changes since trust."""
    from sentinel.mcp import pin as pins
    from sentinel.mcp.names import tool_name
    from sentinel.mcp.tools import check_tool

    server, listed = _listing(name, agent, workspace)
    doc = pins.document(name, server, listed)
    trusted = _pin(name)
    rows = [{"name": tool_name(name, t.name), "tool": t.name, "description": t.description,
             "input_schema": t.input_schema, "verdict": server.verdict(t.name), "withheld": check_tool(name, t)}
            for t in listed]
    changes = pins.shown(doc, trusted).get(pins.DIFF)
    state = {"sha256": pins.digest(doc), "trusted_sha256": trusted["sha256"] if trusted else None, "changes": changes}
    if as_json:
        return print_json({"server": name, "tools": rows, **state})
    for r in rows:
        print(f"{r['name']:<40} {r['verdict']:<15} {r['description']}")
        if r["withheld"]:
            print(f"{'':<40} WITHHELD: {r['withheld']}")
    print(f"listing sha256 {state['sha256']}: " + (
        "trusted" if state["sha256"] == state["trusted_sha256"] else
        f"not trusted yet (sentinel mcp trust {name})" if not trusted else "CHANGED since trusted:"))
    if changes:
        print(changes, end="")


@app.command("trust")
def trust(name: str = typer.Argument(...),
          agent: Optional[str] = typer.Option(None, "--agent", "-a", help="Start it as this agent's runs would."),
          workspace: Optional[Path] = typer.Option(None, "--workspace", help="Its workspace (default: an empty one)."),
          as_json: bool = typer.Option(False, "--json")) -> None:
    """Pin the server: the SHA-256 of its command or URL and tool list; calls of a changed listing pause."""
    from sentinel.mcp import pin as pins
    from sentinel.mcp.tools import check_tool

    server, listed = _listing(name, agent, workspace)
    doc = pins.document(name, server, listed)
    sha, text = pins.digest(doc), pins.canonical(doc)
    changes = pins.shown(doc, _pin(name)).get(pins.DIFF)
    with _engine() as engine:
        engine.mcp_trust_set(name, sha, text)
    withheld = {t.name: problem for t in listed if (problem := check_tool(name, t))}
    if as_json:
        return print_json({"server": name, "sha256": sha, "tools": [t.name for t in listed], "withheld": withheld,
                           "changes": changes})
    if changes:
        print(changes, end="")
    print(f"trusted MCP server {name!r}: {len(listed)} tool(s), sha256 {sha}")
    for tool, problem in withheld.items():
        print(f"withheld from agents: {tool}: {problem}")
