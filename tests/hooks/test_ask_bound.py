"""An approval for one call never covers a different call (audit of "approve once / always", findings 1-3): an
allowlist entry holds for the coding agent it was allowed for only; Cline's classic `use_mcp_tool` and
`access_mcp_resource` are shown and keyed by the MCP tool or resource they reach; an MCP call's name always says
its server and its tool. Each attack through the hook's own entry (`entry.handle`), the entry made as `sentinel
approve ID --always` makes it."""

from __future__ import annotations

import json
import types

import pytest

from sentinel.hooks import agents, ask, entry
from test_ask_exact import acts_of, claude, codex  # the located actions and keys as `sentinel hook` makes them

COMMAND = "git push origin main"
PUSH_ASKS = {"kind": "scope", "trigger": "bash", "severity": "ask", "scope": ["git push*"],
             "description": "pushing leaves this machine: a person decides"}
MCP_ASKS = {"kind": "scope", "trigger": "mcp", "severity": "ask", "scope": ["db:*", "b:*"],
            "description": "the database asks"}
EVENTS = {"claude-code": "pre-tool-use", "codex": "pre-tool-use", "gemini-cli": "BeforeTool",
          "copilot-cli": "preToolUse", "cline": "PreToolUse", "cursor": "beforeMCPExecution"}


@pytest.fixture(autouse=True)
def no_time_to_ask(monkeypatch):
    """An ask denies at once, filing nothing (the shortest window): a call that passes was allowlisted."""
    monkeypatch.setattr(entry, "ASK_ARGS", ["--ask-within", "1"])


@pytest.fixture
def root(repo):
    return repo({"push-asks": PUSH_ASKS, "mcp-asks": MCP_ASKS})


def shell(agent, root, command=COMMAND):
    """The same command, in the repository's root, as each client sends it."""
    r = str(root)
    return {
        "claude-code": lambda: claude(root, "Bash", {"command": command}),
        "codex": lambda: codex(root, "Bash", {"command": command}),
        "gemini-cli": lambda: ("gemini-cli", {"session_id": "s", "cwd": r, "hook_event_name": "BeforeTool",
                                              "tool_name": "run_shell_command", "tool_input": {"command": command}}),
        "copilot-cli": lambda: ("copilot-cli", {"cwd": r, "timestamp": 1, "toolName": "bash",
                                                "toolArgs": {"command": command, "description": "push"}}),
    }[agent]()


def classic(root, tool, **parameters):
    """Cline's classic extension: `preToolUse{toolName, parameters}`, non-string values JSON-encoded."""
    return "cline", {"hookName": "PreToolUse", "taskId": "t", "workspaceRoots": [str(root)],
                     "preToolUse": {"toolName": tool, "parameters": parameters}}


def cursor_mcp(root, url, tool, arguments="{}"):
    return "cursor", {"hook_event_name": "beforeMCPExecution", "tool_name": tool, "tool_input": arguments,
                      "url": url, "workspace_roots": [str(root)], "conversation_id": "c"}


def run(call):
    agent, payload = call
    return entry.handle(agent, EVENTS[agent], json.dumps(payload))


def asked(reply):
    """The hook held the call for a person (and, with no time to ask, denied it)."""
    return "needed a person's approval" in reply.stdout + reply.stderr


def filed(call, root, sentinel_home):
    """What the hook files for `call` (ask.build, as hold() files it), in the user's store: its approval id."""
    from sentinel.engine import asks
    from sentinel.engine.store import Store
    from sentinel.policy.gate.engine import Finding, Verdict

    agent, payload = call
    verdict = Verdict()
    verdict.findings.append(Finding("asks", "ask", "asks", kind="scope"))
    built = ask.build(agents.get(agent), verdict, payload, acts_of(agent, payload, root), str(root))
    with Store.open(sentinel_home / "state" / "sentinel.db") as store:
        return asks.file(store, built, 600, str(sentinel_home / "runs")).approval_id


def always(call, root, sentinel_home, cli):
    """A person reads the call (`sentinel show ID`) and approves it with `sentinel approve ID --always`; returns
    what was shown."""
    approval_id = filed(call, root, sentinel_home)
    shown = cli("show", approval_id, check=0).stdout
    cli("approve", approval_id, "--always", check=0)
    return shown


def listing(cli):
    return cli("hook", "allowlist", check=0).stdout, cli.json("hook", "allowlist", "--json", check=0)


# -- finding 1: "always" is for the coding agent that asked ----------------------------------------------------

OTHERS = ["codex", "gemini-cli", "copilot-cli"]


def test_always_for_one_coding_agent_lets_no_other_agent_run_the_same_call(root, sentinel_home, cli):
    """The audit's repro: Claude Code asks for `git push origin main`, a person approves it always (the card said
    "asked by: claude-code's hook"); Codex, Gemini CLI and Copilot CLI sending the same command, keyed the same,
    still ask."""
    calls = {agent: shell(agent, root) for agent in ["claude-code", *OTHERS]}
    assert len({json.dumps(ask.keys_of(*acts_of(*c, root), str(root))) for c in calls.values()}) == 1  # one key
    assert "asked by: claude-code's hook" in always(calls["claude-code"], root, sentinel_home, cli)

    assert (run(calls["claude-code"]).stdout, run(calls["claude-code"]).code) == ("", 0)  # allowed, nothing filed
    for agent in OTHERS:
        assert asked(run(calls[agent])), agent
    assert asked(run(shell("claude-code", root, COMMAND + " --force")))  # and the same agent's other call asks


def test_each_agent_allowed_always_runs_its_own_and_the_listing_names_it(root, sentinel_home, cli):
    always(shell("claude-code", root), root, sentinel_home, cli)
    always(shell("codex", root), root, sentinel_home, cli)
    assert not asked(run(shell("codex", root))) and not asked(run(shell("claude-code", root)))
    assert asked(run(shell("gemini-cli", root)))
    text, entries = listing(cli)
    value = json.dumps([".", COMMAND])
    assert [(e["client"], e["kind"], e["value"]) for e in entries] == [("claude-code", "command", value),
                                                                       ("codex", "command", value)]
    assert "(for claude-code, by " in text and "(for codex, by " in text and "old entry" not in text

    revoked = cli("hook", "allowlist", "--revoke", "--client", "codex", "--repo", str(root), "command", value,
                  check=0)
    assert "revoked 1 entry" in revoked.stdout
    assert asked(run(shell("codex", root))) and not asked(run(shell("claude-code", root)))


def test_an_entry_naming_no_client_matches_no_call_and_revoke_removes_it(root, sentinel_home, cli):
    """An entry made before entries named their client (kept as it was) matches no agent's call, is listed as
    old, and `--revoke KIND VALUE` removes it with every client's entry of that call."""
    from sentinel.engine.store import Store

    value = json.dumps([".", COMMAND])
    with Store.open(sentinel_home / "state" / "sentinel.db") as store:
        store.conn.execute("INSERT INTO hook_allowlist VALUES (?, 'command', ?, 'bob', 0, 'a-old')",
                           (ask.repository(str(root)), value))
    for agent in ["claude-code", *OTHERS]:
        assert asked(run(shell(agent, root))), agent
    always(shell("claude-code", root), root, sentinel_home, cli)
    text, entries = listing(cli)
    assert [e["client"] for e in entries] == ["claude-code", None]
    old = [line for line in text.splitlines() if "a-old" in line]
    assert old and old[0].endswith("(no client, by bob, approval a-old)  (old entry: matches no call; revoke it)")
    assert "--client" in cli("hook", "allowlist", "--client", "codex").stderr  # only with --revoke
    assert "revoked 0 entries" in cli("hook", "allowlist", "--revoke", "--client", "codex", "--repo", str(root),
                                      "command", value, check=0).stdout  # a client's revoke leaves the old one
    assert "revoked 2 entries" in cli("hook", "allowlist", "--revoke", "--repo", str(root), "command", value,
                                      check=0).stdout
    assert "the allowlist is empty" in listing(cli)[0]


def test_the_listing_escapes_the_client(sentinel_home, cli, tmp_path):
    """The client comes from the hook (an operator's hook names it on the supervisor's socket): shown escaped."""
    from sentinel.engine.store import Store

    with Store.open(sentinel_home / "state" / "sentinel.db") as store:
        store.conn.execute("INSERT INTO hook_client_allowlist VALUES (?, ?, 'command', '[\".\", \"ls\"]', 'alice', 0,"
                           " 'a-1')", (str(tmp_path), "codex\x1b[2K\rclaude-code\u2028"))
    text, entries = listing(cli)
    assert not set(text) & {"\x1b", "\r", "\u2028"} and "(for codex\\x1b[2K\\rclaude-code\\u2028, by alice" in text
    assert entries[0]["client"] == "codex\x1b[2K\rclaude-code\u2028"  # the data exact
    assert "\\u001b" in cli("hook", "allowlist", "--json", check=0).stdout


def test_the_operators_queue_asks_for_the_client_too(sentinel_home):
    """The supervisor's `hook_allowlisted` op: an entry for one client is no entry for another; a hook that names
    no client is refused (and so asks: a store error keeps every ask rule)."""
    from sentinel.engine import asks
    from sentinel.engine.store import Store
    from sentinel.errors import UsageError
    from sentinel.supervisor import hookasks

    key = ["command", json.dumps([".", COMMAND])]
    with Store.open(sentinel_home / "state.db") as store:
        store.conn.execute("INSERT INTO hook_client_allowlist VALUES ('/r', 'claude-code', ?, ?, 'alice', 0, 'a-1')",
                           key)
        hub = types.SimpleNamespace(store=store)
        assert hookasks._allowlisted(hub, None, {"repository": "/r", "client": "claude-code", "keys": [key]})[
            "result"] == {"allowlisted": True}
        assert hookasks._allowlisted(hub, None, {"repository": "/r", "client": "codex", "keys": [key]})[
            "result"] == {"allowlisted": False}
        with pytest.raises(UsageError, match="client"):
            hookasks._allowlisted(hub, None, {"repository": "/r", "keys": [key]})
        assert not asks.allowlisted(store, "/r", "", [key])


# -- finding 2: Cline's classic MCP calls are shown and keyed by the tool they run -------------------------------

def test_cline_use_mcp_tool_shows_and_keys_the_mcp_tool(root, sentinel_home, cli):
    read = classic(root, "use_mcp_tool", server_name="db", tool_name="read_rows", arguments='{"table":"users"}')
    approval_id = filed(read, root, sentinel_home)
    shown = cli("show", approval_id, check=0).stdout.splitlines()
    assert shown[0].endswith(" asks to run db/read_rows") and "  table: users" in shown
    assert not [line for line in shown if "use_mcp_tool" in line and "in repository:" not in line]
    assert "db/read_rows" in cli("approvals", check=0).stdout
    (act,) = acts_of(*read, root)
    assert ask.keys_of(act, str(root))[1].startswith("db/read_rows ")
    drop = classic(root, "use_mcp_tool", server_name="db", tool_name="drop_table", arguments='{"table":"users"}')
    other = classic(root, "use_mcp_tool", server_name="prod", tool_name="read_rows", arguments='{"table":"users"}')
    assert len({json.dumps(ask.keys_of(*acts_of(*c, root), str(root))) for c in (read, drop, other)}) == 3


def test_always_on_one_mcp_tool_lets_no_other_tool_of_the_server_run(root, sentinel_home, cli):
    """The audit's repro: `read_rows` approved always; the same payload naming `drop_table` passed unasked."""
    read = classic(root, "use_mcp_tool", server_name="db", tool_name="read_rows", arguments='{"table":"users"}')
    always(read, root, sentinel_home, cli)
    assert run(read).stdout == ""  # allowed, nothing filed
    for tool, arguments in (("drop_table", '{"table":"users"}'), ("read_rows", '{"table":"secrets"}')):
        reply = run(classic(root, "use_mcp_tool", server_name="db", tool_name=tool, arguments=arguments))
        assert asked(reply), tool
        assert json.loads(reply.stdout)["cancel"] is True
    assert asked(run(("cline", {"hookName": "tool_call", "taskId": "t", "workspaceRoots": [str(root)],  # 3.x
                                "tool_call": {"id": "1", "name": "db__drop_table", "input": {"table": "users"}}})))
    assert not asked(run(("cline", {"hookName": "tool_call", "taskId": "t", "workspaceRoots": [str(root)],
                                    "tool_call": {"id": "1", "name": "db__read_rows",
                                                  "input": {"table": "users"}}})))  # the same call, 3.x-spelled


def test_a_rule_scoped_to_one_mcp_tool_sees_clines_classic_tool(repo):
    root = repo({"no-drops": {"kind": "scope", "trigger": "mcp", "severity": "block", "scope": ["db:drop_table"],
                              "description": "no dropped tables"}})
    drop = run(classic(root, "use_mcp_tool", server_name="db", tool_name="drop_table", arguments='{"table":"u"}'))
    assert "no-drops" in json.loads(drop.stdout)["errorMessage"]
    assert run(classic(root, "use_mcp_tool", server_name="db", tool_name="read_rows", arguments="{}")).stdout == ""


def test_cline_access_mcp_resource_shows_and_keys_the_uri(root, sentinel_home, cli):
    """Every URI keyed `db/access_mcp_resource sha256({})` before: one "always" read any resource of the server."""
    def resource(uri):
        return classic(root, "access_mcp_resource", server_name="db", uri=uri)

    users, secrets = resource("db://tables/users"), resource("db://tables/secrets")
    shown = always(users, root, sentinel_home, cli)
    assert 'asks to run db/"db://tables/users"' in shown and "uri: db://tables/users" in shown
    assert run(users).stdout == ""
    assert asked(run(secrets))
    assert asked(run(classic(root, "access_mcp_resource", server_name="b", uri="db://tables/users")))


# -- finding 3: an MCP call's name always says its server and its tool -----------------------------------------

def test_cursor_servers_whose_names_are_in_the_tools_name_are_other_calls(root, sentinel_home, cli):
    """The audit's repro: server `db` and server `b`, each with a tool `db_drop`, both keyed `db_drop <sha>` and
    shown with no server."""
    (root / ".cursor").mkdir()
    (root / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"db": {"url": "http://db"},
                                                                          "b": {"url": "http://b"}}}))
    on_db, on_b = cursor_mcp(root, "http://db", "db_drop"), cursor_mcp(root, "http://b", "db_drop")
    assert "asks to run db/db_drop" in always(on_db, root, sentinel_home, cli)
    assert json.loads(run(on_db).stdout or "{}").get("permission") != "deny"
    reply = run(on_b)
    assert asked(reply) and json.loads(reply.stdout)["permission"] == "deny"
    (act,) = acts_of(*on_b, root)
    assert ask.call_name(act) == "b/db_drop"


def names(calls, root):
    return [ask.call_name(a) for call in calls for a in acts_of(*call, root)]


def test_every_client_names_the_same_mcp_call_alike(root):
    """Shown and keyed as SERVER/TOOL whatever the client's own spelling, server in the tool's name or not."""
    r, args = str(root), {"q": 1}
    calls = [
        claude(root, "mcp__db__db_drop", args), codex(root, "mcp__db__db_drop", args),
        ("gemini-cli", {"session_id": "s", "cwd": r, "hook_event_name": "BeforeTool", "tool_name": "mcp_db_db_drop",
                        "tool_input": args, "mcp_context": {"server_name": "db", "tool_name": "db_drop"}}),
        ("copilot-cli", {"cwd": r, "toolName": "db-db_drop", "toolArgs": args}),
        ("cline", {"hookName": "tool_call", "taskId": "t", "workspaceRoots": [r],
                   "tool_call": {"id": "1", "name": "db__db_drop", "input": args}}),
        classic(root, "use_mcp_tool", server_name="db", tool_name="db_drop", arguments=json.dumps(args)),
        ("windsurf", {"agent_action_name": "pre_mcp_tool_use", "tool_info": {
            "mcp_server_name": "db", "mcp_tool_name": "db_drop", "mcp_tool_arguments": args, "cwd": r}}),
        ("amazon-q", {"hook_event_name": "preToolUse", "cwd": r, "tool_name": "@db/db_drop", "tool_input": args}),
    ]
    assert names(calls, root) == ["db/db_drop"] * len(calls)
    keys = {ask.keys_of(a, r)[1] for call in calls for a in acts_of(*call, root)}
    assert len(keys) == 1  # one call, one key (whose client is held beside it)


def test_a_call_name_determines_its_server_and_tool():
    """No two (server, tool) pairs, and no MCP call and other tool, share a name; each reads back one way."""
    from sentinel.policy.gate.action import Action, mcp

    pairs = [("db", "db_drop"), ("b", "db_drop"), ("db", "drop"), ("", "db_drop"), ("a/b", "c"), ("a", "b/c"),
             ('"a"', "b"), ("a b", "c"), ("a", ""), ("x", "y/z\u3164")]
    shown = [ask.call_name(mcp("t", {}, server, tool)) for server, tool in pairs]
    assert shown[:4] == ["db/db_drop", "b/db_drop", "db/drop", '""/db_drop']
    assert shown[4:6] == ['"a/b"/c', 'a/"b/c"']
    others = [ask.call_name(Action("other", name)) for name in ("db/db_drop", "b/db_drop", '"a/b"/c', "Read")]
    assert others == ['"db/db_drop"', '"b/db_drop"', '"\\"a/b\\"/c"', "Read"]
    assert len(set(shown + others)) == len(shown + others)
    decoder = json.JSONDecoder()
    for (server, tool), name in zip(pairs, shown):
        head, end = decoder.raw_decode(name) if name.startswith('"') else (name.split("/")[0], len(name.split("/")[0]))
        rest = name[end + 1:]
        assert (head, decoder.decode(rest) if rest.startswith('"') else rest) == (server, tool)
