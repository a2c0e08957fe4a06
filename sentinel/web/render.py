"""Server-side rendering: the Jinja2 templates shipped in the package, and what they are given.

    html = templates.render("inbox.html", prefix=..., approvals=[...])
    cards = approval_views(pending, runs)       # each approval with its run's task and parent chain
    rows = run_tree(runs)                       # child runs listed under their parent

Autoescaping is on for every template: whatever an agent wrote (arguments, messages, code) is text.
"""

from __future__ import annotations

import json
import time
from typing import Any

import jinja2

from sentinel.cli.render import task_title
from sentinel.engine.events import Event
from sentinel.engine.status import RunStatus

STATUS_LABELS = {RunStatus.WAITING_APPROVAL: "waiting for approval", RunStatus.WAITING_CHILD: "waiting for a child run"}


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def _when(ts: Any) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(ts)))
    except (TypeError, ValueError):
        return ""


def _short(value: Any, limit: int = 80) -> str:
    text = " ".join(_pretty(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_label(value: Any) -> str:
    return STATUS_LABELS.get(str(value), str(value))


class Templates:
    def __init__(self) -> None:
        self.env = jinja2.Environment(loader=jinja2.PackageLoader("sentinel.web", "templates"),
                                      autoescape=True, undefined=jinja2.StrictUndefined,
                                      trim_blocks=True, lstrip_blocks=True)
        self.env.filters.update(pretty=_pretty, when=_when, short=_short, status=status_label, run_title=task_title)

    def render(self, name: str, **context: Any) -> str:
        return self.env.get_template(name).render(**context)

    def event(self, prefix: str, event: Event) -> str:
        return self.render("_event.html", prefix=prefix, e=event.to_dict())


def chain(run_id: str, runs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's ancestors, the root first (as far as the registry rows reach)."""
    out: list[dict[str, Any]] = []
    seen = {run_id}
    parent = (runs.get(run_id) or {}).get("parent_id")
    while parent and parent not in seen and parent in runs:
        seen.add(parent)
        out.insert(0, runs[parent])
        parent = runs[parent].get("parent_id")
    return out


def approval_views(pending: dict[str, dict[str, Any]], runs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each pending approval with its run's registry row and parent chain, oldest first."""
    views = [{**a, "run": runs.get(a["run_id"]) or {"id": a["run_id"]}, "chain": chain(a["run_id"], runs)}
             for a in pending.values()]
    return sorted(views, key=lambda v: v.get("created_at") or 0)


def run_tree(runs: dict[str, dict[str, Any]], status: str | None = None) -> list[dict[str, Any]]:
    """Rows in display order, each with its `depth`: roots newest first, each child under its parent.

    With a status filter, a matching child is still shown under its parent (the parent dimmed as context)."""
    children: dict[str | None, list[dict[str, Any]]] = {}
    for row in runs.values():
        parent = row.get("parent_id") if row.get("parent_id") in runs else None
        children.setdefault(parent, []).append(row)
    keep = _with_ancestors(runs, status) if status else set(runs)
    out: list[dict[str, Any]] = []

    def walk(parent: str | None, depth: int) -> None:
        for row in sorted(children.get(parent, []), key=lambda r: -(r.get("created_at") or 0)):
            if row["id"] in keep:
                out.append({**row, "depth": depth, "context": bool(status) and row.get("status") != status})
                walk(row["id"], depth + 1)

    walk(None, 0)
    return out


def _with_ancestors(runs: dict[str, dict[str, Any]], status: str) -> set[str]:
    keep: set[str] = set()
    for row in runs.values():
        if row.get("status") == status:
            keep.add(row["id"])
            keep.update(r["id"] for r in chain(row["id"], runs))
    return keep


def children_of(run_id: str, runs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((r for r in runs.values() if r.get("parent_id") == run_id), key=lambda r: r.get("created_at") or 0)
