"""OpenAI Codex CLI: hooks in .codex/hooks.json; PreToolUse payloads follow Claude Code's shape.

Shell calls arrive as `Bash{command}`, every file edit as `apply_patch` with the patch envelope in
`tool_input.command` (the paths are inside it: one action per file), or as a `Bash` command running
`apply_patch <<'EOF'` (which Codex intercepts and applies: judged as the command and as each write), MCP calls as
`mcp__<server>__<tool>` with the tool's own arguments. Block: exit 2 with the reason on stderr
(the model reads `Command blocked by PreToolUse hook: <reason>`); warnings and context go to
`hookSpecificOutput.additionalContext` (stderr at exit 0 is dropped).

An `ask` rule holds the hook until a person decides (sentinel/hooks/ask.py): Codex reads only a deny, so an
approval is a clean exit 0 and a denial exit 2 with the reason.

Codex runs a project hook only in a trusted project and only once the hook's hash is trusted;
an untrusted hook is skipped silently. `trust_steps` and `status` say so (see `sentinel.hooks.trust`).
"""

from __future__ import annotations

import os
import re
TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: the hook's fast path imports neither typing nor the gate's engine
    from sentinel.jsontypes import JSONObject
    from sentinel.policy.gate.action import Action
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.engine import Verdict

from sentinel.hooks import common
from sentinel.hooks.agents import claude_code
from sentinel.policy.gate import action as actions

NAME = "codex"
HOOK_TIMEOUT_S = 600   # the pre-tool hook's `timeout` Sentinel writes (Codex's default too)
PATCH_COMMAND = re.compile(r"\s*(?:cd\s+\S+\s*&&\s*)?(?:apply_patch|applypatch)\b[^\n]*\n.*\*\*\* Begin Patch", re.S)
CD = re.compile(r"\s*cd\s+(\S+)\s*&&")
HOOKS_FILE = os.path.join(".codex", "hooks.json")
session = claude_code.session


def action(payload: JSONObject, cfg: GateConfig, phase: str) -> Action | list[Action] | None:
    """Relative paths are taken from the payload's `cwd`, where Codex applies a patch (and from the directory of
    a leading `cd DIR &&`, which Codex applies it in)."""
    tool_input = payload.get("tool_input")
    if payload.get("tool_name") == "apply_patch":
        # a patch sent as a plain string is shown and bound as that string (`sent`), never as `{}`
        files = actions.patch("apply_patch", common.sent(tool_input), common.patch_text(tool_input))
        if not files:
            raise ValueError("apply_patch carries no file header (*** Add File: / *** Update File: ...)")
        return actions.files(files, common.text(payload, "cwd"))
    acts = claude_code.action(payload, cfg, phase)
    act = acts[0] if isinstance(acts, list) and len(acts) == 1 else acts if not isinstance(acts, list) else None
    if act is not None and act.trigger == "bash" and PATCH_COMMAND.match(act.command):
        # `apply_patch <<'EOF' ...` run as a shell command: Codex intercepts it and applies the patch,
        # and its hook sees Bash. The files it writes are judged as writes, the command as a command.
        cd, cwd = _cd(act.command), common.text(payload, "cwd")
        writes = actions.files(actions.patch("apply_patch", act.tool_input, act.command),
                               os.path.join(cwd, cd) if cwd and cd else cd or cwd)
        return [act, *(writes if isinstance(writes, list) else [writes])]
    return acts


def _cd(command: str) -> str | None:
    """The directory of a leading `cd DIR &&`, unquoted (relative: to the payload's `cwd`)."""
    found = CD.match(command)
    if found is None:
        return None
    import shlex

    try:
        words = shlex.split(found.group(1))
    except ValueError:
        return found.group(1)
    return words[0] if len(words) == 1 else found.group(1)


def render(phase: str, verdict: Verdict, payload: JSONObject | None = None) -> common.Reply:
    if verdict.blocks and phase == "pre":
        return common.exit2(common.block_text(verdict))
    return claude_code.render(phase, verdict, payload)


def install(root: str, command: str) -> list[str]:
    path = os.path.join(root, HOOKS_FILE)
    data = common.read_json(path)
    hooks = common.hooks_of(data, path)
    for event, argument, timeout in (("PreToolUse", "pre-tool-use" + common.pre_args(HOOK_TIMEOUT_S), HOOK_TIMEOUT_S),
                                     ("PostToolUse", "post-tool-use", 30), ("Stop", "stop", 10)):
        # No matcher: every tool, so apply_patch and MCP calls reach the gate, not only Bash.
        entry: JSONObject = {"hooks": [{"type": "command", "command": f"{command} hook {NAME} {argument}",
                                        "timeout": timeout}]}
        common.merge_event(hooks, event, entry)
    return [common.write_json(path, data)]
