"""`sentinel mcp`: the MCP servers of config.yaml `mcp_servers` (docs/mcp.md).

    sentinel mcp list                       each server: transport, command or URL, network needs, pin state
    sentinel mcp add NAME -- CMD [ARG...]   a stdio server, its command resolved now (or `--url URL`: streamable HTTP)
    sentinel mcp remove NAME
    sentinel mcp tools NAME                 start it under Leash and list its tools: verdict, withheld ones, changes
    sentinel mcp trust NAME                 pin its command/URL, tool list and code (the hash calls are checked against)
"""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Mapping, Optional

import typer

from sentinel.jsontypes import JSONObject, object_in
from sentinel.ui.render import print_json
from sentinel.ui.escape import visible
from sentinel.errors import NotFound, UsageError

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.engine.api import Engine
    from sentinel.mcp.client import ServerTool
    from sentinel.mcp.pin import Trusted
    from sentinel.mcp.settings import McpServer

FILES_SHOWN = 8  # code files `mcp list` prints per pin; --json has them all
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


def _load() -> "Config":
    from sentinel import config

    return config.load(_system_root())


# untyped: config.yaml as the operator wrote it (YAML), checked whole by _save before it is written back
def _raw() -> dict[str, Any]:
    from sentinel.config import read_yaml

    path = _config_file()
    data = read_yaml(path) if path.exists() else {}
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: top level must be a mapping")
    return data


def _save(data: dict[str, object]) -> None:
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


def _server(name: str) -> "McpServer":
    servers = _load().mcp_servers
    if name not in servers:
        raise NotFound(f"no MCP server {name!r} in {_config_file()} (configured: {', '.join(servers) or 'none'})")
    return servers[name]


def _engine() -> "Engine":
    from sentinel.connect import open_engine

    return open_engine()


def _pin(name: str) -> "Trusted | None":
    with _engine() as engine:
        return engine.mcp_trust(name)


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Print one JSON document.")) -> None:
    """The configured servers: transport, command or URL, network needs, read-only tools, pin state and what
    the pin covers (the executable and code files, hashed)."""
    from sentinel.mcp.launch import covers

    found = [(name, server, _pin(name) if server.pin else None) for name, server in _load().mcp_servers.items()]
    if as_json:
        return print_json([{"name": name, "transport": server.transport, "target": server.target,
                            "network": server.network, "read": server.read, "read_only": server.read_only,
                            "tools": server.tools, "pin": server.pin,
                            "trusted_sha256": pin["sha256"] if pin else None,
                            "trusted_by": pin["trusted_by"] if pin else None,
                            "covers": _covers(pin), "headers": sorted(server.headers)} for name, server, pin in found])
    if not found:
        print("no MCP servers (add one: sentinel mcp add NAME -- COMMAND ...)")
    for name, server, pin in found:
        sha = str(pin["sha256"]) if pin and pin["sha256"] else None
        state = ("not pinned" if not server.pin else
                 f"trusted {sha[:16]}… by {pin['trusted_by']}" if pin and sha else
                 "not trusted yet (sentinel mcp trust " + name + ")")
        print(f"{name:<16} {server.transport:<6} {server.target}")
        print(f"{'':<16} network: {', '.join(server.network) or 'none (no TCP at all)'}; {state}")
        if server.read_only:
            print(f"{'':<16} read-only (auto): {', '.join(server.read_only)}")
        covered = _covers(pin)
        if covered:
            code = object_in(covered.get("code"))
            print(f"{'':<16} the pin covers: its command, {covered['tools']} tool(s)"
                  + (f", {covers(code)}" if code else ""))
            files = list(object_in(code.get("files")).items())
            for path, file_sha in files[:FILES_SHOWN]:
                print(f"{'':<18} {str(file_sha)[:16]}… {path}")
            if len(files) > FILES_SHOWN:
                print(f"{'':<18} … and {len(files) - FILES_SHOWN} more (`sentinel mcp list --json` lists them all)")


def _covers(pin: Mapping[str, object] | None) -> JSONObject | None:
    """What a pin covers, from its recorded document: the tool count and what runs (stdio servers)."""
    import json

    if not pin:
        return None
    doc = json.loads(str(pin["document"]))
    return {"tools": len(doc.get("tools", [])), "code": doc.get("code")}


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
    entry: dict[str, object] = {"command": _resolved(name, list(cmd))} if cmd else {"url": url}
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
    if cmd and list(cmd) != server.argv:
        print(f"resolved {shlex.join(cmd)} to {server.target} (what runs, whatever the agent puts in its workspace)")
    for note in _unreadable(server):
        print(note)
    print(f"network: {', '.join(server.network) or 'none (no TCP at all)'}")
    for line in _next_steps(name):
        print(line)


def _resolved(name: str, argv: list[str]) -> list[str]:
    """The command with an absolute executable, script or npx package (the operator's directory for a
    relative one): what runs is fixed here, never looked up in the agent's workspace."""
    from sentinel.mcp.launch import resolve

    try:
        return resolve(argv, base=Path.cwd())
    except UsageError as exc:
        raise UsageError(f"MCP server {name!r}: {exc}") from None


def _unreadable(server: "McpServer") -> list[str]:
    """A note for each code file the server's sandbox would not let it read (it would fail with EACCES)."""
    from sentinel.leash.profile import system_read
    from sentinel.mcp.launch import Command, outside

    if server.command is None:
        return []
    cmd = Command.of(server.argv)
    readable = [*system_read(), *server.read]
    return [f"note: {path} is outside the paths it may read under Leash: add `--read {os.path.dirname(path)}`"
            for path in (cmd.argv[0], cmd.script) if path is not None and outside(path, readable)]


def _next_steps(name: str) -> list[str]:
    if _system_root() is None:
        return [f"next: `sentinel mcp tools {name}` to see its tools, `sentinel mcp trust {name}` to pin them, "
                f"and `mcp: [{name}]` in an agent profile to grant it"]
    return [f"next: `sentinel mcp tools {name} --agent USER` to see its tools as that agent's runs start it, "
            f"`sentinel mcp trust {name} --agent USER` to pin them, and `mcp: [{name}]` in the agent's profile "
            "(~USER/.sentinel/agents/USER.yaml) to grant it",
            "restart the supervisor (`systemctl restart sentinel-supervisor`, or stop and start `sentinel "
            "supervisor`): it reads config.yaml only when it starts"]


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


def _listing(name: str, agent: Optional[str],
             workspace: Optional[Path]) -> "tuple[McpServer, list[ServerTool], JSONObject | None]":
    """Start the server as a run of `agent` would (under Leash): its tools and what runs (the pin's code)."""
    from sentinel import paths
    from sentinel.mcp.client import Connection, McpFailure, muzzle_secrets
    from sentinel.leash.links import resolve
    from sentinel.mcp.launch import system_workdir
    from sentinel.tools import ToolContext

    server = _server(name)
    etc = _system_root()
    if etc is not None and server.command is not None and not server.workdir:
        server = server.model_copy(update={"workdir": str(system_workdir(etc, name))})  # as the supervisor does
    cfg = _load()
    if workspace is None:
        workspace = Path(tempfile.mkdtemp(prefix="sentinel-mcp-"))
        workspace.chmod(0o755)  # its working directory, whichever user the server runs as
    ws = Path(resolve(workspace))  # the tool profile then refuses a link inside its own grants
    ctx = ToolContext(workspace=ws, agent=agent or cfg.default_agent or "sentinel", sandbox=cfg.sandbox,
                      tools_mode=cfg.leash.tools, output_max_chars=cfg.tools.output_max_chars)
    conn = Connection(name, server, ctx, secret=muzzle_secrets(cfg, _system_root() or paths.home()))
    try:
        listed = conn.tools()
        return server, listed, conn.code()
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

    server, listed, code = _listing(name, agent, workspace)
    doc = pins.document(name, server, listed, code)
    trusted = _pin(name)
    rows = [{"name": tool_name(name, t.name), "tool": t.name, "description": t.description,
             "input_schema": t.input_schema, "verdict": server.verdict(t.name), "withheld": check_tool(name, t)}
            for t in listed]
    changes = pins.shown(doc, trusted).get(pins.DIFF)
    state = {"sha256": pins.digest(doc), "trusted_sha256": trusted["sha256"] if trusted else None, "changes": changes}
    if as_json:
        return print_json({"server": name, "tools": rows, **state})
    for r in rows:
        print(f"{visible(r['name']):<40} {r['verdict']:<15} {visible(r['description'])}")
        if r["withheld"]:
            print(f"{'':<40} WITHHELD: {visible(r['withheld'])}")
    print(f"listing sha256 {state['sha256']}: " + (
        "trusted" if state["sha256"] == state["trusted_sha256"] else
        f"not trusted yet (sentinel mcp trust {name})" if not trusted else "CHANGED since trusted:"))
    if changes:
        print(visible(changes, newlines=True), end="")


@app.command("trust")
def trust(name: str = typer.Argument(...),
          agent: Optional[str] = typer.Option(None, "--agent", "-a", help="Start it as this agent's runs would."),
          workspace: Optional[Path] = typer.Option(None, "--workspace", help="Its workspace (default: an empty one)."),
          as_json: bool = typer.Option(False, "--json")) -> None:
    """Pin the server: the SHA-256 of its command or URL, tool list and code; calls of a changed one pause."""
    from sentinel.mcp import pin as pins
    from sentinel.mcp.tools import check_tool

    server, listed, code = _listing(name, agent, workspace)
    doc = pins.document(name, server, listed, code)
    sha, text = pins.digest(doc), pins.canonical(doc)
    changes = pins.shown(doc, _pin(name)).get(pins.DIFF)
    with _engine() as engine:
        engine.mcp_trust_set(name, sha, text)
    withheld = {t.name: problem for t in listed if (problem := check_tool(name, t))}
    if as_json:
        return print_json({"server": name, "sha256": sha, "tools": [t.name for t in listed], "withheld": withheld,
                           "changes": changes})
    if changes:
        print(visible(changes, newlines=True), end="")
    print(f"trusted MCP server {name!r}: {len(listed)} tool(s), sha256 {sha}")
    if code is not None:
        from sentinel.mcp.launch import covers

        print(f"the pin covers {covers(code)}")
    for tool, problem in withheld.items():
        print(f"withheld from agents: {visible(tool)}: {visible(problem)}")
