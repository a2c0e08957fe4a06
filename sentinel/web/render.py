"""Server-side rendering: the Jinja2 templates shipped in the package, and what they are given.

    html = templates.render("inbox.html", prefix=..., approvals=[...])
    cards = approval_views(pending, runs)       # each approval with its run's task and parent chain
    rows = run_tree(runs)                       # child runs listed under their parent

Autoescaping is on for every template: whatever an agent wrote (arguments, messages, code) is text. Every
`{{ value }}` also passes `sentinel.ui.escape.visible` first (the environment's `finalize`): control characters,
bidirectional overrides and invisible characters, which HTML escaping leaves as they are, are shown as escapes
(`\u202e`), newlines kept (a `<pre>` shows them, inline text folds them).
"""

from __future__ import annotations

import json
import time
from typing import Mapping

import jinja2
import markupsafe

from sentinel.ui.render import one_line, task_title
from sentinel.engine.events import Event
from sentinel.engine.rows import ApprovalRow, RunRow
from sentinel.engine.status import RunStatus
from sentinel.jsontypes import JSONObject
from sentinel.ui.escape import visible

STATUS_LABELS: dict[str, str] = {RunStatus.WAITING_APPROVAL: "waiting for approval",
                                  RunStatus.WAITING_CHILD: "waiting for a child run",
                                  RunStatus.DONE_UNVERIFIED: "done, not verified"}


def _pretty(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def _when(ts: object) -> str:
    if not isinstance(ts, (int, float, str)):
        return ""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(ts)))
    except (TypeError, ValueError):
        return ""


def _short(value: object, limit: int = 80) -> str:
    """One line of agent text for inline HTML (`one_line`: escaped first, then only plain spaces folded; a value
    other than text as compact JSON, whose only line breaks are escapes), cut at `limit`."""
    text = one_line(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True,
                                                                    default=str))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(value: object) -> object:
    """Every expression's value before it is escaped: text with its hiding characters shown; markup a template
    built (`| safe` of an event already rendered) as it is."""
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return visible(value, newlines=True)
    return value


def status_label(value: object) -> str:
    return STATUS_LABELS.get(str(value), str(value))


class Templates:
    def __init__(self) -> None:
        self.env = jinja2.Environment(loader=jinja2.PackageLoader("sentinel.web", "templates"),
                                      autoescape=True, undefined=jinja2.StrictUndefined, finalize=_shown,
                                      trim_blocks=True, lstrip_blocks=True)
        self.env.filters.update(pretty=_pretty, when=_when, short=_short, status=status_label, run_title=_run_title)

    def render(self, name: str, **context: object) -> str:
        return self.env.get_template(name).render(**context)

    def event(self, prefix: str, event: Event) -> str:
        return self.render("_event.html", prefix=prefix, e=event.to_dict())


def _run_title(view: Mapping[str, object], limit: int = 80) -> str:
    kind, task = view.get("kind"), view.get("task")
    return task_title(kind if isinstance(kind, str) else None, task if isinstance(task, str) else None, limit)


def chain(run_id: str, runs: dict[str, RunRow]) -> list[RunRow]:
    """The run's ancestors, the root first (as far as the registry rows reach)."""
    out: list[RunRow] = []
    seen = {run_id}
    parent = row.parent_id if (row := runs.get(run_id)) else None
    while parent and parent not in seen and parent in runs:
        seen.add(parent)
        out.insert(0, runs[parent])
        parent = runs[parent].parent_id
    return out


def approval_views(pending: dict[str, ApprovalRow], runs: dict[str, RunRow]) -> list[JSONObject]:
    """Each pending approval with its run's registry row and parent chain, oldest first (what the
    approval card template reads)."""
    return [{**a.to_dict(), "run": run.to_dict() if (run := runs.get(a.run_id)) else {"id": a.run_id},
             "chain": [JSONObject(r.to_dict()) for r in chain(a.run_id, runs)]}
            for a in sorted(pending.values(), key=lambda a: a.created_at or 0)]


def run_tree(runs: dict[str, RunRow], status: str | None = None) -> list[dict[str, object]]:
    """Rows in display order, each with its `depth`: roots newest first, each child under its parent.

    With a status filter, a matching child is still shown under its parent (the parent dimmed as context)."""
    children: dict[str | None, list[RunRow]] = {}
    for row in runs.values():
        parent = row.parent_id if row.parent_id in runs else None
        children.setdefault(parent, []).append(row)
    keep = _with_ancestors(runs, status) if status else set(runs)
    out: list[dict[str, object]] = []

    def walk(parent: str | None, depth: int) -> None:
        for row in sorted(children.get(parent, []), key=lambda r: -(r.created_at or 0)):
            if row.id in keep:
                out.append({**row.to_dict(), "depth": depth, "context": bool(status) and row.status != status})
                walk(row.id, depth + 1)

    walk(None, 0)
    return out


def _with_ancestors(runs: dict[str, RunRow], status: str) -> set[str]:
    keep: set[str] = set()
    for row in runs.values():
        if row.status == status:
            keep.add(row.id)
            keep.update(r.id for r in chain(row.id, runs))
    return keep


def children_of(run_id: str, runs: dict[str, RunRow]) -> list[RunRow]:
    return sorted((r for r in runs.values() if r.parent_id == run_id), key=lambda r: r.created_at or 0)
