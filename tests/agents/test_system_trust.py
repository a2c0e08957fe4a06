"""Issue 12 in system mode: the worker runs as the agent, its authored tool under the Leash tool profile; the
approval shows the code over the operator socket; trust lives in the supervisor's root-owned database, which the
agent can neither write nor reach, and the next run of the same code runs without a pause."""

from __future__ import annotations

import json
import pwd
import sys

import pytest

from sx_helpers import agent_config, as_user

pytestmark = pytest.mark.root

PARAMS = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
WORDS = 'import os\ndef run(args):\n    return f"{len(args[\'text\'].split())} words as uid {os.getuid()}"\n'


def call(tool, **arguments):
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def test_authored_tool_trust_in_system_mode(system, make_agent, sentinel_cmd, supervisor, scripted_server):
    name = make_agent()
    uid = pwd.getpwnam(name).pw_uid
    first = scripted_server([call("create_tool", name="word_count", description="Count words", parameters=PARAMS,
                                  code=WORDS), call("word_count", text="one two three"), "done"])
    second = scripted_server([call("word_count", text="a b"), "done"])
    sandboxed = {"leash": {"tools": "sandboxed"}}
    agent_config(name, first, sandboxed)
    sup = supervisor()

    out = json.loads(sentinel_cmd("run", "count", "--agent", name, "--json", check=3).stdout)
    [pending] = json.loads(sentinel_cmd("approvals", "--json", check=0).stdout)
    assert pending["code"]["tool.py"] == WORDS and len(pending["code_sha256"]) == 64

    forge = (f"import sqlite3; sqlite3.connect('{system.state / 'sentinel.db'}').execute(\"INSERT INTO tool_trust "
             f"VALUES ('{name}', 'word_count', '{pending['code_sha256']}', 'me', 0)\")")
    assert as_user(name, sys.executable, "-c", forge).returncode != 0
    refused = as_user(name, sys.executable, "-m", "sentinel", "approve", out["approval_id"],
                      env={"SENTINEL_SOCKET": system.env["SENTINEL_SOCKET"], "PYTHONPATH": _repo()})
    assert refused.returncode == 2 and "permission denied" in refused.stderr
    assert json.loads(sentinel_cmd("trust", "list", "--json", check=0).stdout) == []

    done = json.loads(sentinel_cmd("approve", out["approval_id"], "--json", check=4).stdout)
    assert done["status"] == "done_unverified"
    assert _tool_results(first)[-1] == f"3 words as uid {uid}"  # out of the worker, as the agent
    trusted = json.loads(sentinel_cmd("trust", "list", "--json", check=0).stdout)
    assert [(t["agent"], t["tool"], t["code_sha256"], t["trusted_by"]) for t in trusted] == [
        (name, "word_count", pending["code_sha256"], "root")]

    agent_config(name, second, sandboxed)  # the operator serves another script: read when the supervisor starts
    sup.stop()
    supervisor()
    out = json.loads(sentinel_cmd("run", "count again", "--agent", name, "--json", check=4).stdout)
    assert out["status"] == "done_unverified" and _tool_results(second) == [f"2 words as uid {uid}"]


def _tool_results(server):
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


def _repo() -> str:
    from sentinel import paths

    return str(paths.REPO_DIR)
