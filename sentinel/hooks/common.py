"""What every agent adapter shares: the reply, event names, payload helpers and config-file merging.

    Reply(stdout, stderr, code)   what the hook process prints and its exit status
    phase(event)                  pre | post | stop | None, from whatever the agent calls its event
    tool_action(name, args, cfg, naming, server, tool)
                                  the Action of one tool call under the agent's own MCP naming
"""

from __future__ import annotations

import json
import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook's fast path imports neither typing nor the gate's engine
    from sentinel.jsontypes import JSON, JSONObject
    from sentinel.policy.gate.action import Action
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.engine import Verdict

PHASES = {
    "pre": {"pretooluse", "beforetool", "beforeshellexecution", "beforemcpexecution", "prerruncommand",
            "preruncommand", "prewritecode", "premcptooluse", "prereadcode", "beforereadfile", "pre", "toolcall"},
    "post": {"posttooluse", "aftertool", "aftershellexecution", "aftermcpexecution", "afterfileedit",
             "postruncommand", "postwritecode", "postmcptooluse", "postreadcode", "post", "toolresult"},
    "stop": {"stop", "sessionend", "taskcomplete", "afteragent", "agentstop", "stophook", "agentend",
             "postcascaderesponse"},
}


class Reply:
    __slots__ = ("stdout", "stderr", "code")

    def __init__(self, stdout: str = "", stderr: str = "", code: int = 0):
        self.stdout = stdout
        self.stderr = stderr
        self.code = code

    def __repr__(self) -> str:
        return f"Reply(code={self.code}, stdout={self.stdout!r}, stderr={self.stderr!r})"


SILENT = Reply()


def normalize(event: str) -> str:
    return "".join(ch for ch in event.lower() if ch.isalnum())


def phase(event: str) -> str | None:
    key = normalize(event)
    for name, names in PHASES.items():
        if key in names:
            return name
    return None


def as_json(obj: JSONObject) -> str:
    return json.dumps(obj, ensure_ascii=False)


def loads_maybe(value: JSON) -> JSON:
    """Tool arguments some agents send as a JSON string."""
    if isinstance(value, str):
        try:
            parsed: JSON = json.loads(value)
            return parsed
        except ValueError:
            return {"raw": value}
    return value


def tool_action(name: str, args: JSON, cfg: GateConfig, naming: tuple[str, str] | None = None, server: str = "",
                tool: str = "") -> Action:
    """A tool call as an Action. The tool map decides first; then MCP under the agent's own naming
    (`naming` = (prefix, separator): Claude Code `mcp__s__t`, Gemini `mcp_s_t`, Cline `s__t`, Copilot
    `s-t`), with the server the client names itself (`server`, `tool`) preferred over splitting the
    name; then the config's `mcp_prefix` / `mcp_separator`."""
    from sentinel.policy.gate import action as actions

    data = sent(args)  # a string or list where an object belongs is kept, so a shell call of it is unbounded
    if name not in cfg.tool_map:
        if server:
            return actions.mcp(name, data, server, tool or _after_server(name, naming, server))
        if naming is not None:
            prefix, sep = naming
            rest = name[len(prefix):] if name.startswith(prefix) else ""
            head, found, tail = rest.partition(sep)
            if found and head and tail:
                return actions.mcp(name, data, head, tail)
    return actions.classify(name, data, cfg.tool_map, cfg.mcp_prefix, cfg.mcp_separator)


def _after_server(name: str, naming: tuple[str, str] | None, server: str) -> str:
    head = (naming[0] + server + naming[1]) if naming else ""
    return name[len(head):] if head and name.startswith(head) else name


def patch_text(tool_input: JSON) -> str:
    """The apply_patch envelope, however the client wraps it (Codex `command`, Cline `input`)."""
    if isinstance(tool_input, str):
        return tool_input
    if not isinstance(tool_input, dict):
        return ""
    for key in ("command", "input", "patch"):
        value = tool_input.get(key)
        if isinstance(value, list):
            value = "\n".join(str(v) for v in value)
        if isinstance(value, str) and "*** " in value:
            return value
    return ""


def output_text(value: JSON) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def text(payload: JSONObject, key: str) -> str | None:
    """A field the client sends as a string; anything else (absent, null, a number) is None."""
    value = payload.get(key)
    return value if isinstance(value, str) else None


def obj(value: JSON) -> JSONObject:
    """A field the client sends as an object; anything else is an empty one."""
    return value if isinstance(value, dict) else {}


def sent(value: JSON) -> JSONObject:
    """A call's tool input as the client sent it, as the object an Action and an approval hold: an object as it is,
    nothing (absent, null) as `{}`, anything else (a string, a list, a number) as `{"input": value}`. So a patch
    sent as a plain string is shown, digested and allowlisted as that string, never as an empty object that would
    stand for every such call."""
    if isinstance(value, dict):
        return value
    return {} if value is None else {"input": value}


def first_root(payload: JSONObject, *keys: str) -> str | None:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value and isinstance(value[0], str):
            return value[0]
    return None


def ask_window(client_timeout_s: float) -> int:
    """How long a held call may wait for a person under a client's pre-tool hook timeout: the timeout less a
    margin for the judges before the ask and the answer after it (10%, at least 5 s). docs/hooks.md."""
    return int(max(0.0, client_timeout_s - max(5.0, client_timeout_s * 0.1)))


def pre_args(client_timeout_s: float) -> str:
    """The pre-tool hook command's extra argument: the ask's deadline below the client's timeout."""
    return f" --ask-within {ask_window(client_timeout_s)}"


def exit2(text: str) -> Reply:
    """The block most agents understand: exit 2, the reason on stderr (returned to the model)."""
    return Reply(stderr=text + "\n", code=2)


def block_text(verdict: Verdict) -> str:
    return f"Sentinel blocked this action: {verdict.block_reason()}"


def warn_text(verdict: Verdict) -> str:
    return f"Sentinel warning: {verdict.warning_text()}"


def unchecked_text(verdict: Verdict) -> str:
    """Rules that were not checked (their judge failed, fail_open): the agent learns the call went unchecked."""
    errors = list(verdict.errors)
    if not errors:
        return ""
    return ("Sentinel could not check this call and let it through unchecked (fail_open): "
            + "; ".join(e.removesuffix(" (skipped: fail_open)") for e in errors))


def advisory(verdict: Verdict) -> str:
    """Warnings, unchecked rules and context as one message (for agents with a context channel)."""
    parts = [warn_text(verdict)] if verdict.warnings else []
    parts += list(verdict.held)
    if unchecked_text(verdict):
        parts.append(unchecked_text(verdict))
    if verdict.contexts:
        parts.append(verdict.context_text())
    return "\n\n".join(parts)


def stderr_advisory(verdict: Verdict) -> Reply:
    """Agents without a context channel: warnings on stderr, exit 0 (the action proceeds)."""
    text = advisory(verdict)
    return Reply(stderr=text + "\n") if text else SILENT


def render_exit2(phase: str, verdict: Verdict, payload: JSONObject | None = None) -> Reply:
    """Answer for agents whose only channels are exit 2 (block) and stderr (Codex, Windsurf, Amazon Q)."""
    if verdict.blocks and phase == "pre":
        return exit2(block_text(verdict))
    return stderr_advisory(verdict)


# -- hook config files (sentinel hook install) -------------------------------------------------


def read_json(path: str) -> JSONObject:
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        text = fh.read().strip()
    if not text:
        return {}
    try:
        data: JSON = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level is not a JSON object")
    return data


def write_json(path: str, data: JSONObject) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def is_ours(entry: JSON) -> bool:
    return "sentinel hook" in json.dumps(entry)


def hooks_of(data: JSONObject, path: str) -> JSONObject:
    """A hook config's `hooks` object (created when absent), each event's entries a list (or null). Another
    shape is a ValueError naming the file and the field: install rewrites nothing it cannot read."""
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: `hooks` is not a JSON object; fix or remove it")
    for event, listed in hooks.items():
        if listed is not None and not isinstance(listed, list):
            raise ValueError(f"{path}: `hooks.{event}` is not a list; fix or remove it")
    return hooks


def entries(hooks: JSONObject, event: str) -> list[JSON]:
    """The entries a hook config holds for one event (`hooks_of` checked that they are a list, or null)."""
    value = hooks.get(event)
    return value if isinstance(value, list) else []


def merge_event(hooks: JSONObject, event: str, entry: JSONObject) -> None:
    """Replace our previous entry for `event` (idempotent install), keep everyone else's."""
    existing = [e for e in entries(hooks, event) if not is_ours(e)]
    hooks[event] = existing + [entry]


def drop_ours(hooks: JSONObject, event: str) -> None:
    """Remove our entry for an event we no longer hook (an earlier install's), keep everyone else's."""
    kept = [e for e in entries(hooks, event) if not is_ours(e)]
    if kept:
        hooks[event] = kept
    else:
        hooks.pop(event, None)
