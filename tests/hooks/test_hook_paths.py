"""A file tool call meets a path rule when ANY path it could write is in scope, through each agent's hook entry:
every path key at any depth (lists of edits too), every key when several name a file, none found at all (it may
write anything), and relative paths taken from where the client resolves them (the payload's `cwd`, Cline's
workspace root). Scope-only rules (`kind: scope`, no judge): the scope alone decides."""

from __future__ import annotations

import json

import pytest

from sentinel.hooks import agents
from sentinel.hooks.entry import handle
from sentinel.policy.gate.loader import load_repo

FROZEN = {"kind": "scope", "trigger": "file_write", "severity": "block", "scope": ["src/billing/**"],
          "description": "billing is frozen"}
PUSH = {"kind": "scope", "trigger": "bash", "severity": "block", "scope": ["git push*"]}
PATCH = "*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch\n"


@pytest.fixture
def root(repo):
    made = repo({"frozen": FROZEN})
    (made / "src" / "billing").mkdir(parents=True)
    (made / "docs").mkdir()
    return made


def run(agent, event, payload, root):
    text = json.dumps(payload).replace("ROOT", str(root))
    return handle(agent, event, text)


def blocked(reply):
    said = reply.stdout + reply.stderr
    if "Sentinel blocked this action: [frozen] billing is frozen" in said:
        return True
    assert (reply.stdout, reply.code) == ("", 0), reply
    return False


def actions_of(agent, payload, root):
    """The located actions the agent's adapter makes of a payload (several: the test wants a list)."""
    adapter = agents.get(agent)
    assert adapter is not None
    found = adapter.action(payload, load_repo(str(root)).config, "pre")
    assert isinstance(found, list)
    return [a.locate(str(root), payload.get("cwd") or str(root)) for a in found]


def claude(tool, args, cwd="ROOT"):
    return "claude-code", "PreToolUse", {"session_id": "s", "cwd": cwd, "tool_name": tool, "tool_input": args}


def copilot(tool, args, cwd="ROOT"):
    return "copilot-cli", "preToolUse", {"cwd": cwd, "toolName": tool, "toolArgs": args}


def gemini(tool, args, cwd="ROOT"):
    return "gemini-cli", "BeforeTool", {"session_id": "s", "cwd": cwd, "hook_event_name": "BeforeTool",
                                        "tool_name": tool, "tool_input": args}


def amazon_q(tool, args, cwd="ROOT"):
    return "amazon-q", "preToolUse", {"hook_event_name": "preToolUse", "cwd": cwd, "tool_name": tool,
                                      "tool_input": args}


def codex(tool, args, cwd="ROOT"):
    return "codex", "PreToolUse", {"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse",
                                   "tool_name": tool, "tool_input": args}


def cline(tool, args, workspace="ROOT"):
    return "cline", "PreToolUse", {"hookName": "tool_call", "taskId": "t", "workspaceRoots": [workspace],
                                   "tool_call": {"id": "1", "name": tool, "input": args}}


def cursor(tool, args, workspace="ROOT"):
    return "cursor", "preToolUse", {"hook_event_name": "preToolUse", "conversation_id": "c",
                                    "workspace_roots": [workspace], "tool_name": tool, "tool_input": args}


def windsurf(info):
    return "windsurf", "pre_write_code", {"agent_action_name": "pre_write_code", "trajectory_id": "t",
                                          "tool_info": info}


def replacements(*paths):
    return {"explanation": "x", "replacements": [{"filePath": p, "oldString": "a", "newString": "b"} for p in paths]}


# -- L: every path of a multi-file call ----------------------------------------------------------------------------

MULTI_IN = [
    copilot("multi_replace_string_in_file", replacements("ROOT/README.md", "ROOT/src/billing/tax.py")),
    copilot("multi_replace_string_in_file", replacements("ROOT/src/billing/tax.py")),
    claude("MultiEdit", {"edits": [{"file_path": "ROOT/docs/a.md", "new_string": "x"},
                                   {"file_path": "ROOT/src/billing/tax.py", "new_string": "y"}]}),
    claude("Edit", {"file_path": "ROOT/README.md", "new_string": "x",
                    "also": {"deeper": [{"path": "src/billing/tax.py"}]}}),
    gemini("write_file", {"files": ["ROOT/README.md", "ROOT/src/billing/tax.py"], "content": "x"}),
    amazon_q("fs_write", {"command": "create", "args": {"path": "ROOT/src/billing/tax.py", "file_text": "x"}}),
    amazon_q("fs_write", {"command": "create", "path": "ROOT/README.md", "new_path": "ROOT/src/billing/tax.py"}),
    cline("editor", {"edits": [{"path": "src/billing/tax.py", "new_text": "x"}]}),
    cursor("Write", {"target_file": "ROOT/docs/a.md", "moves": [{"newPath": "ROOT/src/billing/tax.py"}]}),
    windsurf({"file_path": "ROOT/docs/a.md", "edits": [{"file_path": "ROOT/src/billing/t.py", "new_string": "b"}]}),
]
MULTI_OUT = [
    copilot("multi_replace_string_in_file", replacements("ROOT/README.md", "ROOT/docs/guide.md")),
    claude("MultiEdit", {"file_path": "ROOT/docs/a.md", "edits": [{"old_string": "a", "new_string": "b"}]}),
    gemini("write_file", {"files": ["ROOT/README.md", "ROOT/src/billingx/a.py"], "content": "x"}),
    cline("editor", {"edits": [{"path": "docs/billing/tax.py", "new_text": "x"}]}),
]


def test_each_path_is_its_own_action_with_what_it_writes(root):
    """One file action per path, each with the edit that names it: a judged rule is shown that file and text."""
    agent, _, payload = copilot("multi_replace_string_in_file", {"replacements": [
        {"filePath": f"{root}/README.md", "oldString": "a", "newString": "readme"},
        {"filePath": f"{root}/src/billing/tax.py", "oldString": "a", "newString": "RATE = 0"}]})
    located = actions_of(agent, payload, root)
    assert [(a.target, a.content) for a in located] == [("README.md", "readme"), ("src/billing/tax.py", "RATE = 0")]


def test_an_input_too_large_to_read_whole_is_in_scope(root):
    many = [{"filePath": f"ROOT/docs/{n}.md", "oldString": "a", "newString": "b"} for n in range(2500)]
    assert blocked(run(*copilot("multi_replace_string_in_file", {"replacements": many}), root))
    deep: dict[str, object] = {"filePath": "ROOT/docs/a.md"}
    for _ in range(12):
        deep = {"inner": deep}
    assert blocked(run(*copilot("edit", {"path": "ROOT/docs/b.md", **deep}), root))


# -- M: a decoy key beside the real one -----------------------------------------------------------------------------

DECOYS = [
    copilot("edit", {"path": "src/billing/tax.py", "file_path": "README.md", "old_str": "a", "new_str": "b"}),
    copilot("edit", {"file_path": "README.md", "path": "src/billing/tax.py", "old_str": "a", "new_str": "b"}),
    copilot("create", {"path": "README.md", "filePath": "ROOT/src/billing/tax.py", "file_text": "x"}),
    claude("Write", {"file_path": "ROOT/README.md", "path": "ROOT/src/billing/tax.py", "content": "x"}),
    claude("Write", {"file_path": "ROOT/README.md", "notebook_path": "src/billing/tax.py", "content": "x"}),
    gemini("replace", {"file_path": "ROOT/docs/a.md", "absolute_path": "ROOT/src/billing/tax.py"}),
    cline("editor", {"path": "README.md", "target_file": "src/billing/tax.py", "new_text": "x"}),
]


def test_two_path_keys_both_outside_pass(root):
    assert not blocked(run(*copilot("edit", {"path": "docs/a.md", "file_path": "README.md", "new_str": "b"}), root))
    assert not blocked(run(*claude("Write", {"file_path": "ROOT/README.md", "path": "ROOT/docs/a.md"}), root))


def test_a_single_file_edit_decides_as_before(root):
    assert blocked(run(*claude("Edit", {"file_path": "ROOT/src/billing/tax.py", "new_string": "x"}), root))
    assert not blocked(run(*claude("Edit", {"file_path": "ROOT/src/billingx/tax.py", "new_string": "x"}), root))
    assert not blocked(run(*copilot("edit", {"path": "ROOT/README.md", "new_str": "x"}), root))


# -- a file tool whose paths cannot be found at all -----------------------------------------------------------------

PATHLESS = [
    claude("Write", {"content": "x"}),
    claude("Edit", {"file_path": "", "new_string": "x"}),
    copilot("edit", {"old_str": "a", "new_str": "b"}),
    copilot("create", {"path": 7, "file_text": "x"}),
    gemini("write_file", {"content": "x"}),
    amazon_q("fs_write", {"command": "create", "file_text": "x"}),
    cline("editor", {"new_text": "x"}),
    cline("apply_patch", {"input": "*** Begin Patch\n*** End Patch\n"}),
    cursor("StrReplace", {"new_string": "x"}),
    windsurf({"cwd": "ROOT", "edits": [{"old_string": "a", "new_string": "b"}]}),
]


def test_a_pathless_write_meets_path_rules_only(repo):
    """It may write anything, so every path rule (here only the built-in one for the gate's own files), no bash rule."""
    from sentinel.policy.gate.rules import applicable

    made = repo({"push": PUSH})
    bundle = load_repo(str(made))
    agent, _, payload = copilot("edit", {"old_str": "a", "new_str": "b"})
    found = agents.get(agent).action(payload, bundle.config, "pre")
    (act,) = [a.locate(str(made), str(made)) for a in (found if isinstance(found, list) else [found])]
    assert act.unbounded
    assert [r.id for r in applicable([*bundle.rules, bundle.own], act, "pre")] == ["sentinel-own-files"]


def test_an_unknown_windsurf_shape_still_passes(root):
    """Windsurf's tool_info keys are unverified: a tool_info carrying no write at all is an unknown shape."""
    assert not blocked(run(*windsurf({"cwd": "ROOT", "shape": "unknown"}), root))


# -- N: relative paths from where the client resolves them ----------------------------------------------------------

RELATIVE_IN = [
    codex("apply_patch", {"command": PATCH.format(path="billing/tax.py")}, cwd="ROOT/src"),
    codex("apply_patch", {"command": "*** Begin Patch\n  *** Add File: billing/new.py\n+x\n*** End Patch\n"},
          cwd="ROOT/src"),
    codex("apply_patch", {"command": PATCH.format(path="../src/billing/tax.py")}, cwd="ROOT/docs"),
    claude("Write", {"file_path": "billing/tax.py", "content": "x"}, cwd="ROOT/src"),
    copilot("edit", {"path": "billing/tax.py", "old_str": "a", "new_str": "b"}, cwd="ROOT/src"),
    copilot("multi_replace_string_in_file", replacements("README.md", "tax.py"), cwd="ROOT/src/billing"),
    gemini("write_file", {"file_path": "tax.py", "content": "x"}, cwd="ROOT/src/billing"),
    amazon_q("fs_write", {"command": "create", "path": "billing/tax.py", "file_text": "x"}, cwd="ROOT/src"),
    cline("editor", {"path": "billing/tax.py", "new_text": "x"}, workspace="ROOT/src"),
    cline("apply_patch", {"input": PATCH.format(path="billing/tax.py")}, workspace="ROOT/src"),
    cursor("Write", {"target_file": "billing/tax.py", "content": "x"}, workspace="ROOT/src"),
]
RELATIVE_OUT = [
    codex("apply_patch", {"command": PATCH.format(path="billing/tax.py")}, cwd="ROOT/docs"),
    codex("apply_patch", {"command": PATCH.format(path="billing/tax.py")}),
    claude("Write", {"file_path": "billing/tax.py", "content": "x"}, cwd="ROOT/docs"),
    copilot("edit", {"path": "billing/tax.py", "new_str": "b"}),
    cline("editor", {"path": "billing/tax.py", "new_text": "x"}),
    cursor("Write", {"target_file": "billing/tax.py", "content": "x"}),
]


def test_cursor_takes_a_relative_path_from_the_workspace_and_from_cwd(root):
    """Cursor's base is unverified: a relative path meets the rules of both readings."""
    agent, event, payload = cursor("Write", {"target_file": "billing/tax.py", "content": "x"})
    assert blocked(run(agent, event, {**payload, "cwd": "ROOT/src"}, root))


@pytest.mark.parametrize("cd", ["src", "'src'", '"src"', "ROOT/src"])
def test_codex_patch_run_after_cd_writes_from_that_directory(root, cd):
    """`cd DIR && apply_patch <<'EOF'`: Codex applies the patch in DIR (its bash action is judged as well)."""
    command = f"cd {cd} && apply_patch <<'EOF'\n" + PATCH.format(path="billing/tax.py") + "EOF\n"
    agent, _, payload = codex("Bash", {"command": command.replace("ROOT", str(root))}, cwd=str(root))
    writes = [a for a in actions_of(agent, payload, root) if a.trigger == "file_write"]
    assert [w.target for w in writes] == ["src/billing/tax.py"]


# L: any path of a multi-file call; M: a decoy key does not hide the one in scope; no path found: in scope of every
# path rule; N: a relative path resolved where the client resolves it, and the same path from elsewhere passing
CASES = [(c, True) for c in MULTI_IN + DECOYS + PATHLESS + RELATIVE_IN] + [(c, False) for c in MULTI_OUT + RELATIVE_OUT]


@pytest.mark.parametrize("call,hit", CASES, ids=lambda c: c[0] if isinstance(c, tuple) else str(c))
def test_a_file_tool_call_is_in_scope_when_any_path_it_may_write_is(root, call, hit):
    assert blocked(run(*call, root)) is hit


def test_an_approval_names_one_file_as_the_client_resolves_it(root):
    """An `ask` approval is kept per file (sentinel/hooks/ask.py keys_of): each path of a multi-file call is its own
    key, and a relative path is keyed where it lands from the payload's `cwd`, not from the repository root."""
    from sentinel.hooks.ask import keys_of

    agent, _, payload = copilot("multi_replace_string_in_file", replacements("README.md", "billing/tax.py"),
                                cwd=f"{root}/src")
    keys = [keys_of(a, str(root)) for a in actions_of(agent, payload, root)]
    assert [(kind, json.loads(value)[0]) for kind, value in keys] == [("write", "src/README.md"),
                                                                      ("write", "src/billing/tax.py")]
