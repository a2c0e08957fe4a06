"""The compatibility run: real coding-agent CLIs, installed from npm, driven headless against scripted
model servers on loopback with `sentinel hook install AGENT` done as documented.

    scenario.py   the rules, the judge's answers and the cases every client is put through
    servers.py    scripted model servers: Anthropic Messages, OpenAI Responses, Gemini (all SSE);
                  OpenAI Chat Completions is `sentinel.models.fake_server`
    mcp.py        a stdio MCP server with one destructive tool (`files` / `delete_file`)
    clients.py    per client: npm package, install, how to point it at a server, how to run a case
    run.py        `sentinel hook compat`: install, drive, print the matrix

Not part of the test suite (it installs from npm); `tests/hooks/test_compat_pieces.py` checks the
servers and the scenario fast and offline.
"""
