"""Rendering the engine's typed events and rows for a person: rich progress on a terminal (stderr), silence
when piped, JSON for scripts. The CLI, `sentinel watch`, the chat and the web console share it.

    with Progress() as progress:     # a listener: one line per interesting event, on a terminal only,
        engine.start(task, on_event=progress)   # and a spinner while a model call is in flight
    progress.warnings                # every warning event seen (also shown when piped: they matter)
    describe(event)                  # one rich-markup line per event, or None (the chat's lines too)
    plain(event)                     # one human line per event (`sentinel logs`), never JSON
    arguments_text(args), task_title(kind, task), short(value), one_line(text)   # one line each, agent text visible
    call_in_full(approval)           # a pending call whole, as it would run: what `approvals`, `show`, `approve` print
"""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import TYPE_CHECKING

from sentinel.engine.rows import ApprovalRow
from sentinel.ui.escape import json_visible, visible

if TYPE_CHECKING:  # the events are imported by what renders them: a listing renders rows only
    from rich.console import Console

    from sentinel.engine import events as ev

    from sentinel.ui.spinner import LiveCall

PIPED_WIDTH = 400


def short(value: object, limit: int = 100) -> str:
    """One line for a person (`one_line`), cut at `limit`."""
    text = one_line(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: object) -> str:
    """Agent text on one line: escaped first (sentinel/ui/escape.py: newlines, tabs, U+2028, no-break and other
    Unicode spaces each show as their escape), then runs of plain spaces (U+0020, all that is left) folded to one.
    Folding before escaping would show `main\u2028--dry-run`, one word to bash, as two."""
    return " ".join(part for part in visible(text).split(" ") if part)


class Progress:
    """A listener printing one line per interesting event; collects warnings for `--json`. Child runs' events
    (a parent hears its children live) are indented under the run that made them. While a model call is in
    flight a spinner shows its seconds and tokens so far, when stdout and stderr are terminals."""

    def __init__(self, enabled: bool | None = None):
        self._enabled = enabled
        self.warnings: list[str] = []
        self.safeguards: list[str] = []  # the kinds of safeguard that fired, in order, each once (`run --json`)
        self.depths = Depths()

    # rich is imported at the first event: a command that ends before any (`deny` of no such approval) never needs it
    @functools.cached_property
    def console(self) -> Console:
        from rich.console import Console

        return Console(stderr=True, highlight=False)

    @functools.cached_property
    def enabled(self) -> bool:
        if self._enabled is not None:
            return self._enabled
        if not sys.stderr.isatty() and not {"FORCE_COLOR", "TTY_COMPATIBLE"} & set(os.environ):
            return False  # as rich would say (Console.is_terminal), without importing it for a piped run
        return bool(self.console.is_terminal)

    @functools.cached_property
    def call(self) -> LiveCall | None:
        from sentinel.ui.spinner import LiveCall, allowed

        return LiveCall(self.console) if self.enabled and allowed(self.console) else None

    def __call__(self, event: ev.Event) -> None:
        from sentinel.engine import events as ev

        depth = self.depths.of(event)
        if isinstance(event, ev.Safeguard) and depth == 0 and event.kind not in self.safeguards:
            self.safeguards.append(event.kind)
        if isinstance(event, ev.Warned):
            self.warnings.append(event.message)
            if not self.enabled:  # a skipped safety rule is said even when the progress is quiet
                self.console.print(f"warning: {visible(event.message)}", markup=False)
        if not self.enabled or self._live(event):
            return
        line = describe(event)
        if line:
            self.console.print(f"{'  ' * depth}{'[dim]│[/] ' if depth else ''}{line}")

    def _live(self, event: ev.Event) -> bool:
        """The spinner takes a call's transient events; any other event ends it before its line is printed."""
        from sentinel.engine import events as ev

        if self.call is None:
            return False
        if isinstance(event, ev.ModelCallStarted):
            self.call.start(event)
            return True
        if isinstance(event, (ev.TextDelta, ev.ModelProgress)):
            self.call.feed(event)
            return True
        self.call.stop()
        return False

    def close(self) -> None:
        if "call" in self.__dict__ and self.call is not None:  # a spinner was made: stop it
            self.call.stop()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Depths:
    """How far below the first run an event's run is, learnt from the events that start child runs."""

    def __init__(self) -> None:
        self.depth: dict[str, int] = {}

    def of(self, event: ev.Event) -> int:
        from sentinel.engine import events as ev

        here = self.depth.setdefault(event.run_id, 0 if not self.depth else self.depth.get(event.run_id, 1))
        if isinstance(event, ev.ChildStarted):
            self.depth[event.child_id] = here + 1
        elif isinstance(event, ev.RunStarted) and event.parent_id in self.depth and event.run_id != event.parent_id:
            here = self.depth[event.run_id] = self.depth[event.parent_id] + 1
        return here


def describe(e: ev.Event) -> str | None:
    """One rich-markup line for an event, or None for events the progress view leaves out."""
    from sentinel.engine import events as ev
    from sentinel.ui.spinner import usage_text

    if isinstance(e, ev.RunStarted):
        return f"[bold]▶ run {_t(e.run_id)}[/] [dim]{_t(e.agent)} · {_t(e.model)} · workspace {_t(e.workspace)}[/]"
    if isinstance(e, ev.Resumed):
        return f"[bold]↻ resumed[/] [dim]run {_t(e.run_id)}[/]"
    if isinstance(e, ev.ModelCallEnded):
        what = (f"{len(e.tool_calls)} tool call(s)" if e.tool_calls else
                f"[yellow]not an answer ({_t(e.rejected)})[/]" if e.rejected else "final answer")
        tokens = f" [dim]· {usage_text(e.usage)}[/]" if e.usage else ""
        return f"[cyan]● model[/] {_t(e.model)} [dim]{e.latency_ms:.0f} ms[/] → {what}{tokens}"
    if isinstance(e, ev.Decision):
        color = {"auto": "green", "needs_approval": "yellow", "deny": "red"}.get(e.outcome, "white")
        return (f"  [{color}]▸ {_t(e.tool)}[/] {_esc(arguments_text(e.arguments, 80))} → [{color}]{_t(e.outcome)}[/] "
                f"[dim]{_esc(short(e.reason, 80))}[/]")
    if isinstance(e, ev.ToolCallEnd):
        return f"    [dim]↳ {_esc(short(e.result, 110))}[/]"
    if isinstance(e, ev.Paused):
        return (f"[yellow]⏸ paused[/]: approval [bold]{_t(e.approval_id)}[/] needed for {_t(e.tool)} "
                f"({_esc(short(e.reason, 80))})")
    if isinstance(e, ev.Resolved):
        verdict = "[green]approved[/]" if e.approved else "[red]denied[/]"
        return f"  {verdict} {_t(e.approval_id)} by {_t(e.by or '?')}"
    if isinstance(e, ev.ChildStarted):
        return f"[magenta]⇢ child run[/] {_t(e.child_id)} [dim]{_t(e.agent)}: {_esc(short(e.task, 80))}[/]"
    if isinstance(e, ev.ChildFinished):
        return f"[magenta]⇠ child run[/] {_t(e.child_id)} {_t(e.status)}"
    if isinstance(e, ev.Compaction):
        return f"[dim]⇊ compacted {e.summarized} messages ({e.chars_before} → {e.chars_after} chars)[/]"
    if isinstance(e, ev.Warned):
        return f"[yellow]! warning[/]: {_t(e.message)}"
    if isinstance(e, ev.Safeguard):
        color = "red" if e.action in ("stopped", "refused") else "yellow"
        return f"[{color}]⚑ safeguard {_t(e.kind)}[/] → {_t(e.action)}: [dim]{_esc(short(e.detail, 110))}[/]"
    if isinstance(e, ev.SelfEdited):
        return f"[magenta]✎ {_t(e.tool)}[/] {_esc(self_edit_line(e))}"
    if isinstance(e, ev.ContractMade):
        return f"[dim]§ contract: {_t('; '.join(e.clauses) or 'nothing the harness can check (the answer is the deliverable)')}[/]"
    if isinstance(e, ev.Verdict):
        return ("[green]✓ verified[/] [dim]against the contract[/]" if e.verified else
                f"[yellow]○ not verified[/]: {_t('; '.join([*e.unmet, *e.unchecked]) or 'nothing was checked')}")
    if isinstance(e, ev.WorkspaceChanged):
        return f"  [magenta]✎ {_t(workspace_line(e))}[/]"
    if isinstance(e, ev.Done):
        return f"[yellow]■ done, not verified[/]: {_t(unverified_text(e.unverified))}" if e.unverified \
            else "[green]■ done[/]"
    if isinstance(e, ev.Idle):
        return f"[red]■ turn ended[/]: {_t(e.error)}" if e.error else "[green]■ answered[/] [dim](waiting)[/]"
    if isinstance(e, ev.Failed):
        return f"[red]✗ {_t(e.status)}[/]: {_t(e.error or '')}"
    return None


def unverified_text(why: str | None) -> str:
    """What a `done_unverified` run's harness did not check, without the `not verified: ` its error starts with."""
    return (why or "").removeprefix("not verified: ") or "the harness checked nothing"


def workspace_line(e: ev.WorkspaceChanged) -> str:
    """What a checkpoint changed, as the harness saw it: `step 2 bash: changed when.txt; removed a.tmp`."""
    what = "; ".join(p for p in (f"changed {', '.join(e.changed)}" if e.changed else "",
                                 f"removed {', '.join(e.removed)}" if e.removed else "") if p) or "no file recorded"
    head = f"undo to step {e.undo}" if e.undo is not None else e.tool
    return f"step {e.step} {head}: {short(what, 160)}"


def self_edit_line(e: ev.SelfEdited) -> str:
    """What an edit of the agent's own self-state changed, and for the soul how to undo it."""
    if e.tool == "edit_soul":
        version = f" --version {e.version}" if e.version else ""
        undo = f"; undo: sentinel agent restore-soul {visible(e.agent or '<agent>')}{visible(version)}"
        return f"soul rewritten ({e.chars} chars){undo} — \"{short(e.excerpt, 80)}\""
    return f"{visible(e.file)}: appended {e.chars} chars — \"{short(e.excerpt, 80)}\""


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _t(value: object) -> str:
    """A field for a markup line: hiding characters shown (one line), rich markup inert."""
    return _esc(visible(value))


def plain(e: ev.Event) -> str:
    """One line per event for `sentinel logs` (no markup, never an event's JSON: `--json` prints that)."""
    from rich.text import Text

    return Text.from_markup(describe(e) or _log_only(e)).plain


def _log_only(e: ev.Event) -> str:
    """The events the progress view leaves out, in words, for the log."""
    from sentinel.engine import events as ev

    if isinstance(e, ev.MessageAdded):
        return f"[dim]✉ {_t(e.role)}:[/] {_esc(short(e.content, 110))}"
    if isinstance(e, ev.ToolCallBegin):
        return f"    [dim]▶ {_t(e.tool)} started ({_t(e.call_id)})[/]"
    return e.type.replace("_", " ")  # a live-only event (a spinner's): its kind


def arguments_text(arguments: object, limit: int = 100) -> str:
    """A tool call's arguments for a person: a lone argument's value (`bash` → its command), else `k=v, …`."""
    if isinstance(arguments, dict):
        shown = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in arguments.values()]
        if len(arguments) != 1:
            shown = [f"{k}={v}" for k, v in zip(arguments, shown)]
        return short(", ".join(shown), limit)
    return short(arguments, limit)


def task_title(kind: str | None, task: str | None, limit: int = 80) -> str:
    """A run's task on one line; a watcher's hook session by the watcher that fired it (its task is the firing's
    JSON envelope, which the session reads and a person does not)."""
    if kind == "hook":
        try:
            watcher = json.loads(task or "")["watcher"]
            return short(f"⚑ watcher {watcher['id']} fired ({watcher.get('eventName') or 'event'})", limit)
        except (ValueError, TypeError, KeyError):
            return "⚑ watcher firing"
    return short(str(task or ""), limit)


def listing_console() -> "Console":
    """stdout for tables: on a terminal, its width; piped, wide enough that a row stays one line (for grep)."""
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = PIPED_WIDTH
    return console


def print_json(obj: object) -> None:
    sys.stdout.write(json_text(obj, indent=2) + "\n")


def json_text(obj: object, indent: int | None = None) -> str:
    """JSON for `--json`: the exact data, with every character that would hide, reorder or move text on a terminal
    written as a `\\uXXXX` escape (sentinel/ui/escape.py json_visible); readable accents and symbols stay as written."""
    return json_visible(json.dumps(obj, ensure_ascii=False, indent=indent, default=str))


# The argument that names what a call acts on, shown first when present; every other one follows, sorted by name.
IDENTIFYING = ("command", "path", "file_path", "url")


def call_in_full(approval: ApprovalRow) -> str:
    """A pending call whole, for a person deciding it: the approval, its run and tool, why it waits, the call digest
    a decision is bound to (`sentinel approve ID --digest D`), where it runs (`where_in_full`), then every argument:
    the identifying one first (IDENTIFYING), the rest sorted by name; nothing cut, no space collapsed, hiding characters escaped, and a
    value of many lines kept as lines, each behind `    | ` (so none can pass for a line of Sentinel's)."""
    chain = "".join(f" ← {visible(parent)}" for parent in approval.parents)
    lines = [f"approval {visible(approval.id)}: run {visible(approval.run_id)}{chain} asks to run "
             f"{visible(approval.tool)}",
             f"  why: {visible(approval.reason or '')}",
             f"  call digest: {visible(approval.digest)}", *where_in_full(approval)]
    arguments = approval.arguments
    if not isinstance(arguments, dict):
        return "\n".join(lines + _value_lines("arguments", arguments))
    if not arguments:
        lines.append("  (no arguments)")
    first = [k for k in IDENTIFYING if k in arguments]
    for key in first + sorted(k for k in arguments if k not in first):
        lines += _value_lines(key, arguments[key])
    return "\n".join(lines)


def where_in_full(approval: ApprovalRow) -> list[str]:
    """Where the call runs, whole (a table's cells cut it): the coding agent that asks and its repository, or the
    run's workspace; the user it runs as; the host. Each escaped, on one line; each label has a space, which an
    argument's name shown below cannot have unquoted (`_value_lines`), so no argument passes for one of these."""
    lines = [f"  asked by: {visible(approval.client)}'s hook"] if approval.client else []
    if approval.workspace:
        lines.append(f"  in {'repository' if approval.client else 'workspace'}: {visible(approval.workspace)}")
    if approval.user:
        lines.append(f"  runs as: {visible(approval.user)}")
    if approval.host:
        lines.append(f"  on host: {visible(approval.host)}")
    return lines


def _value_lines(key: str, value: object) -> list[str]:
    import re

    name = key if re.fullmatch(r"[A-Za-z0-9_.-]+", key) else json.dumps(key, ensure_ascii=False)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
    shown = visible(text, newlines=True).split("\n")
    if len(shown) == 1:
        return [f"  {visible(name)}: {shown[0]}"]
    return [f"  {visible(name)}: ({len(shown)} lines)", *(f"    | {line}" for line in shown)]


def code_listing(approval: ApprovalRow) -> str:
    """The code an approval of an agent-authored tool would run, file by file, with its SHA-256."""
    lines = [f"    code sha256 {approval.code_sha256}"]
    for name, text in (approval.code or {}).items():
        lines.append(f"    --- {visible(name)}")
        lines += [f"    | {line}" for line in visible(text.rstrip("\n"), newlines=True).split("\n")]
    return "\n".join(lines)
