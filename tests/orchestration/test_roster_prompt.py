"""What the system prompt tells a small model about its memory and its roster, so it uses `recall` and
`delegate` without being told to by name in the task (issue 27)."""

from __future__ import annotations

import yaml


def _prompt(server):
    return server.requests[0]["messages"][0]["content"]


def test_an_orchestrator_sees_its_roster_with_descriptions_and_when_to_delegate(roster, cli, sentinel_home):
    head, _ = roster(["Nothing to do."], ["Done."])
    (sentinel_home / "agents" / "broken.yaml").write_text("tools: 3\n")  # a bad profile is left out, not fatal
    (sentinel_home / "agents" / "reviewer.yaml").write_text(yaml.safe_dump({"model": "fake2/m"}))
    cli("run", "--agent", "orchestrator", "--json", "say hi")
    prompt = _prompt(head)
    assert "- writer: Writes files\n" in prompt and "- reviewer: (no description)\n" in prompt
    assert "- orchestrator" not in prompt and "broken" not in prompt  # not itself; not a profile it cannot use
    assert "Hand every task that fits one of them to that agent with delegate" in prompt
    assert '{"tool": "delegate", "arguments": {"agent": "reviewer"' in prompt  # an example naming one of them
    assert "call recall" not in prompt  # the orchestrator is not granted recall


def test_the_default_agent_is_told_when_to_recall_and_sees_no_roster(roster, cli, sentinel_home):
    head, _ = roster(["Nothing to do."], ["Done."])
    cli("run", "--json", "when do we deploy?")
    prompt = _prompt(head)
    assert "call recall with two or three key words first" in prompt and "call remember" in prompt
    assert "work for you" not in prompt and "- writer" not in prompt  # no delegate tool: no roster


def test_a_specialist_without_memory_tools_gets_neither_guide(roster, cli, sentinel_home):
    _, child = roster(["Nothing to do."], ["Done."])
    cli("run", "--agent", "writer", "--json", "say hi")
    prompt = _prompt(child)
    assert "call recall" not in prompt and "work for you" not in prompt
