"""Rendering run events: rich progress on a terminal (stderr), silence when piped, JSON on request."""

from __future__ import annotations

import json
import sys
from typing import Any

STATUS_EXIT = {"done": 0, "waiting_approval": 3, "failed": 1, "cancelled": 1, "interrupted": 1, "running": 1}


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Progress:
    """A listener printing one line per interesting event."""

    def __init__(self, enabled: bool | None = None):
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False)
        self.enabled = self.console.is_terminal if enabled is None else enabled

    def __call__(self, event: dict[str, Any]) -> None:
        if not self.enabled:
            return
        line = describe(event)
        if line:
            self.console.print(line)


def describe(e: dict[str, Any]) -> str | None:
    kind = e.get("type")
    if kind == "assistant":
        calls = e["message"].get("tool_calls") or []
        what = f"{len(calls)} tool call(s)" if calls else "final answer"
        return f"[cyan]● model[/] {e.get('model', '')} [dim]{e.get('latency_ms', 0):.0f} ms[/] → {what}"
    if kind == "decision":
        color = {"auto": "green", "needs_approval": "yellow", "deny": "red"}.get(e["outcome"], "white")
        return f"  [{color}]▸ {e['tool']}[/] {_short(e.get('arguments'), 80)} → [{color}]{e['outcome']}[/] [dim]{_short(e['reason'], 80)}[/]"
    if kind == "finished":
        return f"    [dim]↳ {_short(e['result'], 110)}[/]"
    if kind == "paused":
        return f"[yellow]⏸ paused[/]: approval [bold]{e['approval_id']}[/] needed for {e['tool']} ({_short(e['reason'], 80)})"
    if kind == "resolved":
        verdict = "[green]approved[/]" if e["approved"] else "[red]denied[/]"
        return f"  {verdict} {e['approval_id']} by {e.get('by') or '?'}"
    if kind == "status":
        if e["status"] == "done":
            return "[green]■ done[/]"
        return f"[red]✗ {e['status']}[/]: {e.get('error') or ''}"
    return None


def plain(e: dict[str, Any]) -> str:
    """One line per event for `sentinel logs` (no markup)."""
    from rich.text import Text

    line = describe(e)
    if line is None:
        return f"{e.get('type')} {_short({k: v for k, v in e.items() if k not in ('type', 'seq', 't')}, 110)}"
    return Text.from_markup(line).plain


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")


def code_listing(approval: dict[str, Any]) -> str:
    """The code an approval of an agent-authored tool would run, file by file, with its SHA-256."""
    lines = [f"    code sha256 {approval['code_sha256']}"]
    for name, text in (approval.get("code") or {}).items():
        lines.append(f"    --- {name}")
        lines += [f"    | {line}" for line in text.rstrip("\n").splitlines()]
    return "\n".join(lines)
