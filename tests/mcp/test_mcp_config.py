"""`mcp_servers:` and `mcp:` grants as an operator writes them: bad input is one line naming the file and the
field, `sentinel mcp add/list/remove` keep config.yaml valid, and the pin's hash covers what it must."""

from __future__ import annotations

import yaml

from sentinel.mcp import pin
from sentinel.mcp.client import ServerTool
from sentinel.mcp.settings import McpServer


def test_add_list_remove_write_a_valid_config(cli, sentinel_home):
    out = cli("mcp", "add", "files", "--network", "api.example.com:443", "--read-only", "read_text",
              "--", "python3", "-m", "some_server", check=0).stdout
    assert "added MCP server 'files' (stdio: /usr/bin/python3 -m some_server)" in out and "api.example.com:443" in out
    saved = yaml.safe_load((sentinel_home / "config.yaml").read_text())["mcp_servers"]["files"]
    assert saved == {"command": ["/usr/bin/python3", "-m", "some_server"], "network": ["api.example.com:443"],
                     "read_only": ["read_text"]}
    cli("mcp", "add", "docs", "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization=secret:DOCS", check=0)
    listed = {r["name"]: r for r in cli.json("mcp", "list", "--json", check=0)}
    assert listed["files"]["network"] == ["api.example.com:443"] and listed["files"]["trusted_sha256"] is None
    assert listed["docs"]["transport"] == "http" and listed["docs"]["headers"] == ["Authorization"]
    assert "network: api.example.com:443; not trusted yet" in cli("mcp", "list", check=0).stdout
    assert "already exists" in cli("mcp", "add", "files", "--", "x", check=2).stderr
    cli("mcp", "remove", "files", check=0)
    assert [r["name"] for r in cli.json("mcp", "list", "--json", check=0)] == ["docs"]


def test_bad_input_is_one_line_and_nothing_is_written(cli, sentinel_home, configure):
    for args, message in ((["Bad__Name", "--", "x"], "NAME 'Bad__Name'"),
                          (["files"], "give a command after `--`"),
                          (["files", "--url", "ftp://x", "--", "y"], "not both"),
                          (["files", "--url", "ftp://x"], "url must start with http:// or https://"),
                          (["files", "--network", "nohost", "--", "/bin/true"], "network entry 'nohost' must be host:port")):
        err = cli("mcp", "add", *args, check=2).stderr
        assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1, err
    assert not (sentinel_home / "config.yaml").exists()
    configure({"mcp_servers": {"files": {"command": ["x"], "url": "http://y"}}})
    err = cli("mcp", "list", check=2).stderr
    assert "config.yaml: mcp_servers.files" in err and "exactly one of `command`" in err
    configure({"mcp_servers": {"files": {"command": ["x"]}}})
    (sentinel_home / "agents").mkdir()
    (sentinel_home / "agents" / "sentinel.yaml").write_text("mcp: [files, nope]\n")
    err = cli("run", "hi", check=2).stderr
    assert "agents/sentinel.yaml: mcp[1]: no MCP server 'nope' in config.yaml mcp_servers (configured: files)" in err


def test_the_pin_covers_the_command_and_every_name_description_and_schema():
    server = McpServer(command=["python", "s.py"])
    tools = [ServerTool("b", "Second.", {"type": "object"}), ServerTool("a", "First.", {"type": "object"})]
    base = pin.digest(pin.document("files", server, tools))
    assert base == pin.digest(pin.document("files", server, list(reversed(tools))))  # order of listing is not a change
    changed = [
        pin.document("files", McpServer(command=["python", "t.py"]), tools),
        pin.document("files", server, [ServerTool("b", "Second!", {"type": "object"}), tools[1]]),
        pin.document("files", server, [ServerTool("b", "Second.", {"type": "object", "properties": {"x": {}}}),
                                       tools[1]]),
        pin.document("files", server, tools[:1]),
    ]
    assert len({base, *(pin.digest(d) for d in changed)}) == 5
    files = pin.shown(changed[1], {"sha256": base, "document": pin.canonical(pin.document("files", server, tools))})
    assert pin.shows_listing(files, pin.digest(changed[1])) and not pin.shows_listing(files, base)
    assert '-      "description": "Second.",' in files[pin.DIFF] and '+      "description": "Second!",' in files[pin.DIFF]
    forged = {**files, pin.LISTING: files[pin.LISTING].replace("Second!", "Second.")}
    assert not pin.shows_listing(forged, pin.digest(changed[1]))
