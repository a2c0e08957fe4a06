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
if TYPE_CHECKING:
    from typing import Any

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


def as_json(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def loads_maybe(value: Any) -> Any:
    """Tool arguments some agents send as a JSON string."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return {"raw": value}
    return value


def tool_action(name: str, args: Any, cfg: Any, naming: tuple[str, str] | None = None, server: str = "",
                tool: str = "") -> Any:
    """A tool call as an Action. The tool map decides first; then MCP under the agent's own naming
    (`naming` = (prefix, separator): Claude Code `mcp__s__t`, Gemini `mcp_s_t`, Cline `s__t`, Copilot
    `s-t`), with the server the client names itself (`server`, `tool`) preferred over splitting the
    name; then the config's `mcp_prefix` / `mcp_separator`."""
    from sentinel.policy.gate import action as actions

    data = args if isinstance(args, dict) else {}
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


def patch_text(tool_input: Any) -> str:
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


def output_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def first_root(payload: dict[str, Any], *keys: str) -> str | None:
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


def block_text(verdict: Any) -> str:
    return f"Sentinel blocked this action: {verdict.block_reason()}"


def warn_text(verdict: Any) -> str:
    return f"Sentinel warning: {verdict.warning_text()}"


def unchecked_text(verdict: Any) -> str:
    """Rules that were not checked (their judge failed, fail_open): the agent learns the call went unchecked."""
    errors = list(getattr(verdict, "errors", ()))
    if not errors:
        return ""
    return ("Sentinel could not check this call and let it through unchecked (fail_open): "
            + "; ".join(e.removesuffix(" (skipped: fail_open)") for e in errors))


def advisory(verdict: Any) -> str:
    """Warnings, unchecked rules and context as one message (for agents with a context channel)."""
    parts = [warn_text(verdict)] if verdict.warnings else []
    parts += list(getattr(verdict, "held", ()))
    if unchecked_text(verdict):
        parts.append(unchecked_text(verdict))
    if verdict.contexts:
        parts.append(verdict.context_text())
    return "\n\n".join(parts)


def stderr_advisory(verdict: Any) -> Reply:
    """Agents without a context channel: warnings on stderr, exit 0 (the action proceeds)."""
    text = advisory(verdict)
    return Reply(stderr=text + "\n") if text else SILENT


def render_exit2(phase: str, verdict: Any, payload: dict[str, Any] | None = None) -> Reply:
    """Answer for agents whose only channels are exit 2 (block) and stderr (Codex, Windsurf, Amazon Q)."""
    if verdict.blocks and phase == "pre":
        return exit2(block_text(verdict))
    return stderr_advisory(verdict)


# -- hook config files (sentinel hook install) -------------------------------------------------


def read_json(path: str) -> dict[str, Any]:
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        text = fh.read().strip()
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level is not a JSON object")
    return data


def write_json(path: str, data: dict[str, Any]) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def is_ours(entry: Any) -> bool:
    return "sentinel hook" in json.dumps(entry)


def merge_event(hooks: dict[str, Any], event: str, entry: dict[str, Any]) -> None:
    """Replace our previous entry for `event` (idempotent install), keep everyone else's."""
    existing = [e for e in hooks.get(event) or [] if not is_ours(e)]
    hooks[event] = existing + [entry]


def drop_ours(hooks: dict[str, Any], event: str) -> None:
    """Remove our entry for an event we no longer hook (an earlier install's), keep everyone else's."""
    kept = [e for e in hooks.get(event) or [] if not is_ours(e)]
    if kept:
        hooks[event] = kept
    else:
        hooks.pop(event, None)
