"""The built-in rule on the gate's own files (sentinel/policy/gate/own.py): every place a client reads hook
settings or the trust that loads a repository's hooks is held; a line that hides where it writes behind a
here-document, a brace list, a symlink it moves or makes, or a directory it does not name is held; and the
documented limit (a writer outside the write model) stays what the docs say."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sentinel.hooks import entry
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.own import RULE_ID, own_rule, protected
from sentinel.policy.gate.rules import Rule


@pytest.fixture
def root(repo, home):
    made = repo({})
    (made / "src").mkdir()
    (made / "a.txt").write_text("a\n")
    return made


def held(root: Path, command: str) -> bool:
    return Rule(own_rule()).applies(actions.bash("Bash", {"command": command}).locate(str(root)))


def wrote(root: Path, path: str) -> bool:
    return Rule(own_rule()).applies(actions.file_write("Write", {"file_path": path, "content": "x"}).locate(str(root)))


@pytest.mark.parametrize("place", [".cline/hooks/PreToolUse", ".clinerules/hooks/PreToolUse"])
def test_clines_repository_hook_directories_are_held(root, place):
    assert wrote(root, str(root / place))
    assert held(root, f"rm -rf {place.rsplit('/', 1)[0]}")


@pytest.mark.parametrize("place", [".cline/hooks/PreToolUse", "Documents/Cline/Hooks/PreToolUse",
                                   ".gemini/trustedFolders.json", ".codex/config.toml", ".copilot/config.json"])
def test_user_level_hooks_and_the_trust_that_loads_a_repositorys_hooks_are_held(root, home, place):
    assert any(str(home / place) == p or str(home / place).startswith(p + "/") for p in protected())
    assert wrote(root, str(home / place))
    assert held(root, f"echo '{{}}' > {home / place}")


@pytest.mark.parametrize("place", [".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", ".amazonq/mcp.json"])
def test_a_repositorys_mcp_server_definitions_are_held(root, place):
    """A rule scoped `db:*` and an allowlisted `db/query` call mean the server named `db`: redefining it asks."""
    assert wrote(root, str(root / place)) and wrote(root, place)
    assert held(root, f"echo '{{}}' > {place}")


@pytest.mark.parametrize("place", [".claude.json", ".cursor/mcp.json", ".aws/amazonq/mcp.json",
                                   ".codeium/windsurf/mcp_config.json"])
def test_user_level_mcp_server_definitions_are_held(root, home, place):
    assert wrote(root, str(home / place))
    assert held(root, f"cp /dev/null {home / place}")


def test_ordinary_files_of_the_same_clients_stay_out(root, home):
    assert not wrote(root, str(root / ".cline" / "notes.md"))
    assert not wrote(root, str(home / ".gemini" / "GEMINI.md"))
    assert not wrote(root, str(home / "Documents" / "notes.txt"))
    assert not wrote(root, str(root / ".vscode" / "settings.json"))
    assert not wrote(root, str(root / "mcp.json"))


HIDDEN = [
    "cat <<'true' >/dev/null\ntrue\necho '{\"disableAllHooks\": true}' > .claude/settings.local.json\n'true'\n",
    "cat <<\"tr\"ue >/dev/null\ntrue\nrm -rf .claude/sentinel\n\"tr\"ue\n",
    "cat <<\\true >/dev/null\ntrue\nrm -rf .claude/sentinel\n\\true\n",
    "rm -rf {.claude/sentinel,x\\ y}",
    "echo '{}' | tee {.claude/settings.json,\"x y\"}",
    "echo x | tee {.claude/settings.json,{x}}",
    "ln -s .claude t && echo '{}' > t/settings.local.json",
    "mv d/t t && echo '{}' > t/settings.local.json",
    "cp -P d/t t && rm -rf t/sentinel",
    "find .claude -maxdepth 0 -execdir rm -rf .claude \\;",
    "shopt -s cdable_vars; x=.claude; cd x && rm -rf sentinel",
]


@pytest.mark.parametrize("command", HIDDEN)
def test_a_write_hidden_from_the_text_is_held(root, command):
    (root / "d").mkdir()
    os.symlink(".claude", root / "d" / "t")  # dangling where it is, the gate's directory once moved up
    assert held(root, command)


NOT_HELD = ["cat <<'EOF' > src/app.py\nprint('$(x)')\nEOF\n", "mv a.txt b.txt && echo x > c.txt",
            "echo {a,b} > src/list.txt", "npm test",
            # the documented limit: a writer outside the write model is not held, even naming the path
            "uniq a.txt .claude/settings.json", "curl -o .claude/settings.json http://127.0.0.1:9/x",
            "split a.txt .claude/sentinel/x"]


@pytest.mark.parametrize("command", NOT_HELD)
def test_ordinary_lines_and_the_documented_limit_are_not_held(root, command):
    assert not held(root, command)


@pytest.mark.parametrize("command", ["npm test; rm -rf .claude/sentinel",
                                     "cat <<'EOF' >/dev/null\nEOF\nrm -rf .claude/sentinel\n'EOF'\n"])
def test_a_known_write_beside_an_unknown_program_is_held(root, command):
    """What a line is known to write is matched even when another of its commands writes who knows what."""
    assert held(root, command)


def test_the_hook_holds_a_here_document_that_hides_its_write(root, monkeypatch):
    """End to end through the hook's entry: an ask nobody answers in time is denied, and nothing is written."""
    monkeypatch.setattr(entry, "ASK_ARGS", ["--ask-within", "1"])
    command = HIDDEN[0]
    payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": command}}
    decision = json.loads(entry.handle("claude-code", "pre-tool-use", json.dumps(payload)).stdout)
    assert decision["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert f"[{RULE_ID}]" in decision["hookSpecificOutput"]["permissionDecisionReason"]
