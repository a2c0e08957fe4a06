"""A coding agent cannot switch its gate off without a person: every call that writes the gate's own files
(the repository's rules and config, the hook cache, each client's hook settings in the repository and in the
home, Sentinel's home) asks, whatever the repository's rules say, however the write is spelled: each file tool's
payload, shell redirections and commands, a directory above, a symlink on the way, an absolute path. The rule
is made on every call, never read from the cache in the repository (which the agent can rewrite).

A command whose writes are unknown only because it runs a program (`npm test`, `python gen.py`) is not held by
it (a documented limit: it would hold every build); one whose line does not spell where it writes (`~`, `$VAR`,
a glob) is. Reads and ordinary writes stay out of its scope."""

from __future__ import annotations

import json
import os

import pytest

from sentinel.hooks import agents, entry
from sentinel.policy.gate.loader import load_repo
from sentinel.policy.gate.rules import applicable

OWN = "sentinel-own-files"


@pytest.fixture
def root(repo, home):
    made = repo({})
    (made / "src").mkdir()
    return made


def held(root, agent, payload):
    """The rule ids the hook's evaluation puts in scope of the payload's actions (the built-in one included)."""
    bundle = load_repo(str(root))
    adapter = agents.get(agent)
    text = json.loads(json.dumps(payload).replace("ROOT", str(root)))
    found = adapter.action(text, bundle.config, "pre")
    acts = [a.locate(str(root), text.get("cwd") or str(root)) for a in (found if isinstance(found, list) else [found])]
    return {r.id for a in acts for r in applicable([*bundle.rules, bundle.own], a, "pre")}


def claude(tool, args, cwd="ROOT"):
    return "claude-code", {"session_id": "s", "cwd": cwd, "tool_name": tool, "tool_input": args}


def bash(command, cwd="ROOT"):
    return claude("Bash", {"command": command}, cwd)


WRITES = [
    claude("Write", {"file_path": "ROOT/.claude/sentinel/rules/off.yaml", "content": "x"}),
    claude("Edit", {"file_path": ".claude/sentinel/config.yaml", "old_string": "a", "new_string": "b"}),
    claude("Write", {"file_path": "ROOT/.claude/settings.local.json", "content": '{"disableAllHooks": true}'}),
    claude("Write", {"file_path": "ROOT/.sentinel/cache/gate.json", "content": "{}"}),
    claude("Write", {"file_path": "sentinel/x.yaml", "content": "x"}, cwd="ROOT/.claude"),
    ("codex", {"session_id": "s", "cwd": "ROOT", "hook_event_name": "PreToolUse", "tool_name": "apply_patch",
               "tool_input": {"command": "*** Begin Patch\n*** Delete File: .codex/hooks.json\n*** End Patch\n"}}),
    ("gemini-cli", {"session_id": "s", "cwd": "ROOT", "hook_event_name": "BeforeTool", "tool_name": "write_file",
                    "tool_input": {"file_path": ".gemini/settings.json", "content": "{}"}}),
    ("copilot-cli", {"cwd": "ROOT", "toolName": "create", "toolArgs": {"path": ".github/hooks/sentinel.json",
                                                                         "file_text": "{}"}}),
    bash("rm -rf .claude/sentinel"),
    bash("rm -rf .claude"),
    bash("cd .. && rm -rf repo"),  # a directory above the protected ones
    bash("echo '{\"disableAllHooks\": true}' > .claude/settings.local.json"),
    bash("sed -i 's/sentinel/true/' .claude/settings.json"),
    bash("mv .claude/sentinel/rules /tmp/away"),
    bash("cp /dev/null .claude/sentinel/rules/billing.yaml"),
    bash("git status; tee .cursor/hooks.json < /dev/null"),
    bash("r''m -r .claude/sent''inel"),
    bash("rm -r sentinel", cwd="ROOT/.claude"),
    # where the write goes is computed when the line runs: held, as it may be the gate's files
    bash("rm -rf ~/.sentinel"),
    bash("echo '{\"disableAllHooks\": true}' > ~/.claude/settings.json"),
    bash('echo off > "$SENTINEL_HOME/config.yaml"'),
    bash("d=.claude; rm -rf $d"),
    bash("rm -rf .cl*"),
    bash("cp /dev/null $(ls -d .claude/sentinel/rules/*)"),
]


@pytest.mark.parametrize("agent,payload", WRITES, ids=[json.dumps(p)[:70] for _, p in WRITES])
def test_every_spelling_of_a_write_to_the_gates_own_files_asks(root, agent, payload):
    assert OWN in held(root, agent, payload)


def test_user_level_settings_and_sentinels_home_are_the_gates_too(root, home, sentinel_home):
    for path in (home / ".claude" / "settings.json", home / ".codex" / "config.toml", sentinel_home / "config.yaml",
                 sentinel_home / "rules" / "mine.yaml", sentinel_home / "state" / "approvals.db"):
        assert OWN in held(root, *claude("Write", {"file_path": str(path), "content": "x"})), path
    assert OWN in held(root, *bash(f"rm -rf {sentinel_home}"))


def test_a_symlink_on_the_way_is_followed_to_where_the_write_lands(root):
    (root / "notes").symlink_to(root / ".claude" / "sentinel" / "rules")
    (root / "src" / "cfg.json").symlink_to(root / ".claude" / "settings.json")
    assert OWN in held(root, *claude("Write", {"file_path": "ROOT/notes/x.yaml", "content": "x"}))
    assert OWN in held(root, *claude("Write", {"file_path": "ROOT/src/cfg.json", "content": "{}"}))
    assert OWN in held(root, *bash("echo x > notes/x.yaml"))


NOT_HELD = [
    claude("Read", {"file_path": "ROOT/.claude/settings.json"}),
    claude("Write", {"file_path": "ROOT/src/app.py", "content": "x"}),
    claude("Write", {"file_path": "ROOT/.claude/agents/reviewer.md", "content": "x"}),  # not the gate's
    bash("cat .claude/settings.json .claude/sentinel/rules/*.yaml"),
    bash("ls -la .claude && git status"),
    bash("grep -r sentinel .claude > /tmp/found.txt"),
    bash("echo x > src/.claude-notes"),
    # what a program writes is unknown, and the line spells every word: not this rule's (the module's limit)
    bash("npm test"),
    bash("python gen.py --out build/"),
    bash("git pull --rebase && make -j2"),
]


@pytest.mark.parametrize("agent,payload", NOT_HELD, ids=[json.dumps(p)[:70] for _, p in NOT_HELD])
def test_reads_and_ordinary_writes_are_not_held(root, agent, payload):
    assert OWN not in held(root, agent, payload)


def test_a_rewritten_cache_cannot_drop_the_rule(root):
    load_repo(str(root))  # writes the cache
    cache = root / ".sentinel" / "cache" / "gate.json"
    data = json.loads(cache.read_text())
    data["rules"] = []
    stat = cache.stat()
    cache.write_text(json.dumps(data))
    os.utime(cache, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    bundle = load_repo(str(root))
    assert bundle.rules == [] and bundle.own is not None and bundle.own.id == OWN
    assert OWN in held(root, *claude("Write", {"file_path": "ROOT/.claude/sentinel/config.yaml", "content": "x"}))


def test_the_hook_holds_the_call_for_a_person_and_names_why(root, monkeypatch):
    """Through the hook's own entry: an ask (no person answers within the shortest window here: denied)."""
    monkeypatch.setattr(entry, "ASK_ARGS", ["--ask-within", "1"])
    payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "rm -rf .claude/sentinel/rules"}}
    reply = entry.handle("claude-code", "pre-tool-use", json.dumps(payload))
    decision = json.loads(reply.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert f"[{OWN}]" in decision["permissionDecisionReason"] and "a person" in decision["permissionDecisionReason"]
    assert (root / ".claude" / "sentinel").is_dir()
    quiet = dict(payload, tool_input={"command": "cat .claude/sentinel/config.yaml"})
    assert entry.handle("claude-code", "pre-tool-use", json.dumps(quiet)).stdout == ""


# -- the fast path: a plain line the rule cannot hold is let through without the shell parser -----------------

PLAIN_LINES = ["npm test", "python gen.py --out build/", "git pull --rebase && make -j2", "make -C docs html",
               "rm -rf build dist", "rm -rf .", "rm -rf ..", "rm -rf /", "rm -rf ROOT", "mv src/a.py src/b.py",
               "git clean -fdx", "git -C .. clean -fdx", "ls src | xargs rm -rf", "find . -name x -delete",
               "cp x notes/x.yaml", "cp x src/cfg.json", "sort -o.claude/settings.json x",
               "install -m644 x --target-directory=.codex", "tar -C .. -xf a.tar", "touch .claude/sentinel/rules/n",
               "cp x /proc/self/cwd/.claude/settings.json", "rsync -a --delete src/ ROOT/", "env A=1 rm -r .sentinel",
               "cp -r src .github", "ln src/a.py src/link.py", "truncate -s0 .gemini/settings.json"]


@pytest.mark.parametrize("cwd", ["ROOT", "ROOT/src", "ROOT/.claude"])
def test_the_fast_path_never_lets_through_what_the_parse_would_hold(root, cwd):
    """For every line and directory: when the pre-check says the rule cannot hold it, the full parse agrees."""
    from sentinel.policy.gate import own
    from sentinel.policy.gate.action import Action
    from sentinel.policy.gate.scope import writes_match

    (root / "notes").symlink_to(root / ".claude" / "sentinel" / "rules")
    os.link(root / ".claude" / "sentinel" / "config.yaml", root / "src" / "cfg.json")
    (root / "src" / "a.py").write_text("x")
    rule = own.own_rule()
    where = cwd.replace("ROOT", str(root))
    skipped = []
    for line in PLAIN_LINES:
        line = line.replace("ROOT", str(root))
        act = Action("bash", "Bash", {"command": line}, command=line).locate(str(root), where)
        parsed = writes_match(rule["scope_c"], [], act, unknown=False, unspelled=True)
        if not own.may_hold(line, str(root), where):
            skipped.append(line)
            assert not parsed, f"{line!r} from {cwd}: the pre-check let through what the parse holds"
    assert "npm test" in skipped and "python gen.py --out build/" in skipped  # builds take the fast path


def test_a_broken_config_fails_open_for_the_rules_not_for_the_gates_own_files(root, monkeypatch):
    """The repository's config.yaml unreadable: its rules are off (fail_open), the built-in rule is not, so an
    agent that finds the gate broken cannot make that last by rewriting the hook settings unasked."""
    (root / ".claude" / "sentinel" / "config.yaml").write_text("fail_open: [unclosed\n")
    monkeypatch.setattr(entry, "ASK_ARGS", ["--ask-within", "1"])
    payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Write",
               "tool_input": {"file_path": str(root / ".claude" / "settings.local.json"),
                              "content": '{"disableAllHooks": true}'}}
    reply = entry.handle("claude-code", "pre-tool-use", json.dumps(payload))
    assert json.loads(reply.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", reply
    assert "gate off but for its own files" in reply.stderr and "config.yaml" in reply.stderr
    ordinary = dict(payload, tool_input={"file_path": str(root / "src" / "a.py"), "content": "x = 1\n"})
    reply = entry.handle("claude-code", "pre-tool-use", json.dumps(ordinary))
    assert reply.stdout == "" and reply.code == 0 and "gate off but for its own files" in reply.stderr
