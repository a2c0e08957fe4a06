"""A link the agent made never becomes a run's workspace (system mode): the operator's `sentinel run -w` sends the
path as typed, and the supervisor resolves it for the agent's user, refusing a link that user could have made
(sentinel/leash/links.py `resolve`). Before, the operator's command followed the link, and a link to `/` in the
agent's workspace made `/` the next run's workspace: Landlock then granted the whole machine, as far as the
agent's user may write it."""

from __future__ import annotations

import json
import pwd
import secrets
from pathlib import Path

import pytest

from sx_helpers import agent_config

pytestmark = pytest.mark.root

BASH_AUTO = {"policy": {"bash": {"default": "auto"}}}


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_a_workspace_through_the_agents_link_is_refused_and_nothing_runs(system, make_agent, supervisor,
                                                                          scripted_server, sentinel_cmd):
    name = make_agent()
    ws = Path(pwd.getpwnam(name).pw_dir) / ".sentinel" / "workspace"
    target = Path("/var/tmp") / f"sentinel-owned-{secrets.token_hex(4)}"  # anyone may write /var/tmp
    # every run of the agent gets this script (the scripted model answers by the turn, not by the run)
    server = scripted_server([_call("bash", command=f"mkdir -p real; ln -sfn / escape; echo inside > in.txt; "
                                                    f"echo owned > {target}"), "Done."])
    agent_config(name, server, BASH_AUTO)
    supervisor([server.port])
    first = json.loads(sentinel_cmd("run", "Make a link.", "--agent", name, "--json", check=None).stdout)
    assert first["status"] in ("done", "done_unverified") and (ws / "escape").is_symlink()
    try:
        refused = sentinel_cmd("run", "Write a file.", "--agent", name, "-w", str(ws / "escape"), check=2)
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr, refused.stderr
        assert f"--workspace: {ws / 'escape'} goes through the link {ws / 'escape'}" in refused.stderr
        assert "which the agent's user can change" in refused.stderr
        assert not target.exists()
        runs = json.loads(sentinel_cmd("runs", "--json", check=0).stdout)
        assert [r["id"] for r in runs] == [first["id"]]  # nothing was created for the refused run
        # a real directory of the agent's is a workspace like any other, and the same command stays inside it
        real = json.loads(sentinel_cmd("run", "Write a file.", "--agent", name, "-w", str(ws / "real"),
                                       "--json", check=None).stdout)
        assert real["status"] not in ("running", "interrupted"), real
        shown = json.loads(sentinel_cmd("show", real["id"], "--json", check=0).stdout)
        assert shown["workspace"] == str(ws / "real")
        assert (ws / "real" / "in.txt").read_text() == "inside\n"  # the tool ran, in that workspace...
        assert not target.exists()  # ...and Landlock kept it there: /var/tmp is no grant of that run
    finally:
        target.unlink(missing_ok=True)
