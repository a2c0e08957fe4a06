"""Run commands: run, runs, show, approvals, approve, deny, resume, logs, status.

Each command is a thin call into the engine (local mode) or the supervisor's
socket (system mode); exit codes (docs/architecture.md, Runs): 0 done, 3 paused
waiting for approval, 1 failed, 2 bad usage or input.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Optional

from sentinel.cli.params import Argument, Option, typed
from sentinel.config_stamp import Facts
from sentinel.engine.api import Engine, Outcome
from sentinel.engine.rows import ApprovalRow, RunRow
from sentinel.engine.status import ANSWERED, TERMINAL, RunStatus
from sentinel.errors import NotFound
from sentinel.jsontypes import JSON, JSONObject, list_in, object_in
from sentinel.ui.escape import for_stream, visible
from sentinel.ui.render import (Progress, arguments_text, call_in_full, code_listing, json_text, listing_console,
                                plain, print_json, self_edit_line, short, task_title)

if TYPE_CHECKING:
    import typer
    from rich.console import Console
    from rich.text import Text

    from sentinel.engine.events import Event

# The exit code of `run`/`resume`/`approve`, by the status the run stopped in (3: waiting for approval; 4: done,
# but nothing the harness could check: docs/safeguards.md)
STATUS_EXIT: dict[str, int] = {
    RunStatus.DONE: 0, RunStatus.DONE_UNVERIFIED: 4, RunStatus.IDLE: 0, RunStatus.WAITING_APPROVAL: 3, RunStatus.FAILED: 1, RunStatus.CANCELLED: 1,
    RunStatus.INTERRUPTED: 1, RunStatus.WAITING_CHILD: 1, RunStatus.RUNNING: 1}

ALL_HOSTS_HELP = "Every host's, each labelled with its host (system mode on a shared store: docs/system-mode.md)."


def _engine() -> Engine:
    """The supervisor's client when one answers (system mode), else the in-process engine (local mode)."""
    from sentinel.connect import open_engine

    return open_engine()


def _finish(outcome: Outcome, as_json: bool, progress: Progress | None = None) -> None:
    warnings = list(dict.fromkeys([*outcome.warnings, *(progress.warnings if progress else [])]))
    if as_json:
        print_json({"id": outcome.id, "status": outcome.status, "output": outcome.output,
                    **({"error": outcome.error} if outcome.error else {}),
                    **({"approval_id": outcome.approval_id} if outcome.approval_id else {}),
                    **({"warnings": warnings} if warnings else {}),
                    **({"safeguards": progress.safeguards} if progress and progress.safeguards else {})})
    elif outcome.status == RunStatus.DONE or (outcome.status == RunStatus.IDLE and not outcome.error):
        print(for_stream(outcome.output or "", sys.stdout))
    elif outcome.status == RunStatus.DONE_UNVERIFIED:  # the answer, and beside it what nobody checked
        print(for_stream(outcome.output or "", sys.stdout))
        print(f"run {outcome.id} done_unverified: {visible(outcome.error or '')}", file=sys.stderr)
    elif outcome.status == RunStatus.WAITING_APPROVAL:
        print(f"run {outcome.id} is waiting for approval {outcome.approval_id}: "
              f"sentinel approve {outcome.approval_id}  |  sentinel deny {outcome.approval_id}", file=sys.stderr)
    else:
        print(f"run {outcome.id} {outcome.status}: {visible(outcome.error or '')}", file=sys.stderr)
    raise SystemExit(STATUS_EXIT.get(outcome.status, 1))


def run(task: str = Argument(..., help="What the agent should do."),
        model: Optional[str] = Option(None, "--model", "-m", help="provider/model, e.g. local/smollm2-135m."),
        agent: Optional[str] = Option(None, "--agent", "-a", help="Agent profile to run."),
        workspace: Optional[Path] = Option(None, "--workspace", "-w", help="Directory the agent works in."),
        as_json: bool = Option(False, "--json", help="Print one JSON document: id, status, output.")) -> None:
    """Run an agent task until it finishes or pauses for approval.

    In local mode the agent works in the current directory unless --workspace names another; in system
    mode, in its own user's workspace."""
    with _engine() as engine, Progress(False if as_json else None) as progress:
        if workspace is None and engine.mode == "local":
            workspace = Path.cwd()
        outcome = engine.start(task, model=model, agent=agent, workspace=workspace, on_event=progress)
    _finish(outcome, as_json, progress)


def runs(as_json: bool = Option(False, "--json"),
         status: Optional[str] = Option(None, "--status", help="Only runs with this status."),
         all_hosts: bool = Option(False, "--all-hosts", help=ALL_HOSTS_HELP)) -> None:
    """List runs, newest first."""
    with _engine() as engine:
        rows = engine.runs(status=status, all_hosts=all_hosts)
    if as_json:
        return print_json([r.to_dict() for r in rows])
    from rich.table import Table

    table = Table("id", "status", "agent", "model", "created", "task", *(["host"] if all_hosts else []),
                  box=None, pad_edge=False)
    table.columns[5].no_wrap, table.columns[5].overflow = True, "ellipsis"
    for r, level in _tree(rows):
        table.add_row(*_cells(("  " * (level - 1) + "└ " if level else "") + r.id, r.status, r.agent,
                              r.model, time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at)),
                              task_title(r.kind, r.task), *([r.host or "?"] if all_hosts else [])))
    listing_console().print(table)


def _cells(*values: object) -> "list[Text]":
    """Table cells: text, never markup, each on one line with its hiding characters shown (an agent wrote them)."""
    from rich.text import Text

    return [Text(visible(v)) for v in values]


def _tree(rows: list[RunRow]) -> list[tuple[RunRow, int]]:
    """Runs newest first, each child run right under its parent (oldest child first), with its level."""
    ids = {r.id for r in rows}
    kids: dict[str, list[RunRow]] = {}
    for r in rows:
        if r.parent_id is not None and r.parent_id in ids:
            kids.setdefault(r.parent_id, []).append(r)
    out: list[tuple[RunRow, int]] = []

    def add(row: RunRow, level: int) -> None:
        out.append((row, level))
        for kid in sorted(kids.get(row.id, []), key=lambda k: k.created_at):
            add(kid, level + 1)

    for r in rows:
        if r.parent_id not in ids:
            add(r, 0)
    return out


def show(run_id: str = Argument(..., help="Run id, or the id of a pending approval (a-…): that call in full."),
         as_json: bool = Option(False, "--json")) -> None:
    """Show a run: status, messages, every decision with its reason and its pending call in full (an approval id:
    that pending call in full)."""
    if run_id.startswith("a-"):
        return _show_approval(run_id, as_json)
    with _engine() as engine:
        detail = engine.show(run_id)
        events = [e.to_dict() for e in engine.events(run_id) if e.durable] if as_json else []
    if as_json:  # the events as `logs --json` prints them, the same in both modes
        return print_json(detail.to_dict() | {"events": events})
    say = _sayer()  # every line through `visible`: no field of the run reaches the terminal unescaped
    say(f"{detail.id} {detail.status}  agent={detail.agent} model={detail.model}", "bold")
    say(f"task: {detail.task}", newlines=True)
    if detail.parent_id:
        say(f"parent: {detail.parent_id}")
    for d in detail.decisions:
        say(f"  {d['tool']} {d['call_id']}: {d['outcome']} — {d['reason']}{_resolved(d)}")
    for c in detail.children:
        say(f"  child {c['id']} {c['status']}  agent={c['agent']}  ({c['call_id']}): {str(c['task'])[:60]}")
    for g in detail.safeguards:
        say(f"  safeguard {g['kind']} → {g['action']}: {g['detail']}")
    from sentinel.engine.events import SelfEdited, parse as parse_event

    for e in detail.self_edits:
        edit = parse_event({**e, "type": SelfEdited.type, "run_id": detail.id, "seq": 0})
        if isinstance(edit, SelfEdited):
            say(f"  {edit.tool}: {self_edit_line(edit)}")
    if detail.contract is not None:
        say(f"contract: {'; '.join(detail.contract) or 'nothing the harness can check'}")
    if detail.verified is not None:
        say("verified: " + ("yes, against the contract" if detail.verified else "no"))
    if detail.unchecked:
        say(f"not checked: {'; '.join(detail.unchecked)}")
    for c in detail.checkpoints:
        say(f"  {checkpoint_line(c)}")
    if detail.checkpoints:
        say(f"  (sentinel undo {detail.id} [--to STEP] puts the workspace back)")
    for a in detail.pending_approvals:
        _say_pending(say, a, head="pending ")
    if detail.output:
        say(f"output: {detail.output}", newlines=True)
    if detail.error:
        say(f"error: {detail.error}", "red")


def _sayer(console: "Console | None" = None) -> "Callable[..., None]":
    """say(text, style=None, newlines=False): one line (or a block, `newlines`) on stdout, always through
    `visible` (sentinel/ui/escape.py), never markup, never wrapped by rich (a terminal wraps it; piped, a line
    stays one line). Escaping text already escaped changes nothing, so a line may mix both."""
    from rich.text import Text

    out = console or listing_console()

    def say(text: str, style: str | None = None, *, newlines: bool = False) -> None:
        out.print(Text(visible(text, newlines=newlines), style=style or ""), soft_wrap=True)

    return say


def _say_pending(say: "Callable[..., None]", a: ApprovalRow, head: str = "") -> None:
    """A pending call in full (sentinel/ui/render.py call_in_full), then what it would run: an authored tool's or
    an MCP server's code."""
    say(f"{head}{call_in_full(a)}", newlines=True)
    if a.mcp:
        say(f"  MCP server {a.mcp['server']}, tool {a.mcp['tool']}")
    if a.code_sha256:
        say(f"  approval {a.id}{_code_label(a)}")
        if not _trusted_mcp(a):
            say(code_listing(a), newlines=True)
    say(f"  decide: sentinel approve {a.id}  |  sentinel deny {a.id} --reason R")


def _show_approval(approval_id: str, as_json: bool) -> None:
    """`show a-…`: a pending approval, its call in full (a decided one is in `show RUN`'s decisions)."""
    with _engine() as engine:
        found = [a for a in engine.pending(all_hosts=True) if a.id == approval_id]
    if not found:
        raise NotFound(f"no pending approval {approval_id} (a decided one shows in `sentinel show RUN`)")
    if as_json:
        return print_json(found[0].to_dict())
    _say_pending(_sayer(), found[0])


def _resolved(decision: Mapping[str, object]) -> str:
    """Who answered the call's approval, and how: `; approved by alice`, `; denied by bob: not now`."""
    approval = decision.get("approval")
    if not approval or not isinstance(approval, dict):
        return ""
    verb = "approved" if approval.get("approved") else str(approval.get("status") or "resolved")
    who = f" by {approval['by']}" if approval.get("by") else ""
    why = f": {approval['reason']}" if approval.get("reason") and not approval.get("approved") else ""
    return visible(f"; {verb}{who}{why}")


def approvals(as_json: bool = Option(False, "--json"),
              all_hosts: bool = Option(False, "--all-hosts", help=ALL_HOSTS_HELP)) -> None:
    """List pending approvals."""
    with _engine() as engine:
        pending = engine.pending(all_hosts=all_hosts)
    if as_json:
        listed = [a.to_dict() for a in pending]
        return print_json([{k: a[k] for k in ("id", "run_id", "parents", "client", "tool", "arguments", "user",
                                              "workspace", "host", "reason", "digest", "code", "code_sha256", "mcp") if k in a}
                           for a in listed])
    if not pending:
        print("no pending approvals")
        return
    from rich.table import Table

    table = Table("approval", "asks", "run", "tool", "call", "runs as", "workspace", "why",
                  *(["host"] if all_hosts else []), box=None, pad_edge=False)
    table.columns[4].overflow = table.columns[7].overflow = "fold"
    for a in pending:
        chain = "".join(f" ← {parent}" for parent in a.parents)  # a child run's: under its parents
        asks = a.client or "sentinel"  # which coding agent asks, through its hook; else one of Sentinel's own runs
        table.add_row(*_cells(a.id, asks, f"{a.run_id}{chain}", a.tool, arguments_text(a.arguments, 200),
                              a.user or "?", a.workspace or "?", short(a.reason or "", 120),
                              *([a.host or "?"] if all_hosts else [])))
    console = listing_console()
    console.print(table)
    say = _sayer(console)
    for a in pending:  # then each call whole: the table's cell is cut, this is what a decision runs
        say("")
        _say_pending(say, a)


def _trusted_mcp(a: ApprovalRow) -> bool:
    """An MCP call paused by policy or the gate alone: its server's listing and code are the trusted ones."""
    from sentinel.mcp.pin import paused_by_pin

    return bool(a.mcp) and not paused_by_pin(a.reason or "")


def _code_label(a: ApprovalRow) -> str:
    """What an approval's code is, by the real reason it waits (the pin, or only policy or the gate)."""
    if not a.mcp:
        return " would run this code:"
    server = visible(a.mcp["server"])
    if _trusted_mcp(a):
        return (f": MCP server {server} runs the listing and code trusted with `sentinel mcp trust {server}` "
                f"(sha256 {(a.code_sha256 or '')[:16]}…); the call waits only for: {visible(a.reason or '')}")
    return f" would run MCP server {server} with this listing and code, not the ones trusted:"


@contextlib.contextmanager
def _operator() -> Iterator[Engine]:
    """The engine for approve/deny. Someone the supervisor does not take as an operator is told that, in one
    line, rather than that their own local mode has no such approval."""
    from sentinel.client.paths import operator_group
    from sentinel.client.system import Denied, hidden

    refused = f"you are not an operator (root or group {operator_group()})"
    try:
        engine = _engine()
    except Denied as exc:
        raise Denied(f"{refused}: {exc}") from None
    with engine:
        try:
            yield engine
        except NotFound:
            if engine.mode != "local" or os.environ.get("SENTINEL_MODE") == "local" or not hidden():
                raise
            raise Denied(f"{refused}: only operators answer the approvals of this machine's supervisor") from None


IDENT_HELP = "Approval id (it names one call), or a run id with one pending approval (see `approve --help`)."
DIGEST_HELP = ("Decide only if the call's digest is this one (`approvals` and `show` print it as `call digest`): "
               "a script's binding to the call it read.")


def approve(ident: str = Argument(..., help=IDENT_HELP),
            always: bool = Option(False, "--always", help="A coding agent's ask: also allow this exact call "
                                        "by the same coding agent in this repository from now on: the same command in the same directory, "
                                        "the same write of the same content to the same file, the same tool "
                                        "with the same arguments (sentinel hook allowlist). Refused for a write "
                                        "to Sentinel's own files."),
            digest: Optional[str] = Option(None, "--digest", help=DIGEST_HELP),
            as_json: bool = Option(False, "--json")) -> None:
    """Approve a pending tool call; the run resumes in the foreground (a coding agent's ask: its hook lets the
    call run).

    The call being approved is printed in full first (stderr), and the decision is bound to it: an approval id
    names one call that never changes; a run id names whatever its run waits for now, so on a terminal it asks
    `approve this call? [y/N]` first, and elsewhere decides exactly the call it printed. --digest binds either form
    to the call a script read."""
    with _operator() as engine:
        target, bound = _bound(engine, ident, digest, "approve")
        with Progress(False if as_json else None) as progress:
            outcome = engine.approve(target, digest=bound, on_event=progress, always=always)
    _finish(outcome, as_json, progress)


def deny(ident: str = Argument(..., help=IDENT_HELP),
         reason: str = Option("", "--reason", "-r", help="Told to the agent as the tool result."),
         digest: Optional[str] = Option(None, "--digest", help=DIGEST_HELP),
         as_json: bool = Option(False, "--json")) -> None:
    """Deny a pending tool call; the run resumes with the denial as the tool result. The call is printed and bound
    as `approve` does it."""
    with _operator() as engine:
        target, bound = _bound(engine, ident, digest, "deny")
        with Progress(False if as_json else None) as progress:
            outcome = engine.deny(target, reason=reason, digest=bound, on_event=progress)
    _finish(outcome, as_json, progress)


def _bound(engine: Engine, ident: str, digest: str | None, verb: str) -> tuple[str, str | None]:
    """What `approve`/`deny IDENT` decides, printed in full on stderr, and the (approval id, digest) that binds the
    decision to exactly that call.

    An approval id names one immutable call: it is decided as named (not listed, e.g. already decided: the engine
    says so). A run id names whatever its run waits for at this moment, which may not be the call the person
    looked at (another decider answered that one and the agent asked again): it is resolved here, once, to one
    approval, printed, and decided with that approval's digest, so a call filed after this point is never the
    one decided; on a terminal, only after `y`."""
    from sentinel.errors import UsageError

    by_approval = ident.startswith("a-")
    listed = [a for a in engine.pending(all_hosts=True) if (a.id if by_approval else a.run_id) == ident]
    if not listed:
        if by_approval:
            return ident, digest
        engine.show(ident)  # NotFound for an unknown run
        raise UsageError(f"run {ident} has no pending approval")
    if len(listed) > 1:
        raise UsageError(f"run {ident} has {len(listed)} pending approvals; name one: "
                         + ", ".join(a.id for a in listed))
    (approval,) = listed
    if digest is not None and digest != approval.digest:
        raise UsageError(f"approval {approval.id}: the digest given ({visible(digest)[:12]}…) is not the call's "
                         f"({approval.digest[:12]}…): it is not the call you read; nothing was decided")
    said = "" if by_approval else f" (what run {ident} waits for now)"
    print(visible(f"{verb} {approval.id}{said}:\n{call_in_full(approval)}", newlines=True), file=sys.stderr)
    if not by_approval and digest is None and _terminal():
        print(f"{verb} this call? [y/N] ", end="", file=sys.stderr, flush=True)
        try:
            answer = input()
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            raise UsageError(f"not {'approved' if verb == 'approve' else 'denied'}: nothing was decided")
    return approval.id, approval.digest


def _terminal() -> bool:
    """A person at a terminal, who can be asked (stdin and stderr both are one)."""
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def resume(run_id: str = Argument(...), as_json: bool = Option(False, "--json")) -> None:
    """Resume an interrupted or paused run (a finished run reports its status, with the exit code `run` gave it)."""
    with _engine() as engine, Progress(False if as_json else None) as progress:
        outcome = engine.resume(run_id, on_event=progress)
    if outcome.status in TERMINAL and not as_json:
        print(f"run {outcome.id} is {outcome.status}" + (f": {visible(outcome.error)}" if outcome.error else ""),
              file=sys.stderr)
        if outcome.status in ANSWERED:
            print(for_stream(outcome.output or "", sys.stdout))
        raise SystemExit(STATUS_EXIT.get(outcome.status, 1))  # as `run` ended: a script reads the same code
    if outcome.status in TERMINAL:
        print_json(outcome.to_dict())
        raise SystemExit(STATUS_EXIT.get(outcome.status, 1))
    _finish(outcome, as_json, progress)


def logs(run_id: Optional[str] = Argument(None, help="Run id (default: the newest run)."),
         follow: bool = Option(False, "--follow", "-f", help="Keep streaming until the run pauses or ends."),
         as_json: bool = Option(False, "--json", help="One JSON event per line.")) -> None:
    """Print a run's events (one JSON object per line with --json). --follow follows the run until it ends,
    through its pauses for approval, and says so when nothing new has come for a while."""
    with _engine() as engine:
        if not follow:
            for event in engine.events(run_id):
                _print_event(event, as_json)
            return
        _follow(engine, run_id or _newest(engine), as_json)


HEARTBEAT_S = 10.0     # nothing new for this long: say the run is still going (a model call journals nothing)
PAUSE_POLL_S = 1.0     # how often a paused run is looked at for its answer


def _print_event(event: Event, as_json: bool) -> None:
    if event.durable:  # a line, escaped as a whole: a field a new event kind adds cannot slip through raw
        print(json_text(event.to_dict()) if as_json else visible(plain(event)), flush=True)


def _newest(engine: Engine) -> str:
    rows = engine.runs(limit=1)
    if not rows:
        raise NotFound("no runs yet")
    return rows[0].id


def _follow(engine: Engine, run_id: str, as_json: bool) -> None:
    """Stream the run's events until it ends; at a pause, wait for its answer and go on streaming."""
    after = 0
    while True:
        after = _stream(engine, run_id, after, as_json)
        status = engine.show(run_id).status
        if status == RunStatus.RUNNING:  # the stream ended as the run changed hands: look again
            time.sleep(PAUSE_POLL_S)
            continue
        if status != RunStatus.WAITING_APPROVAL:
            return
        if not as_json:
            print(f"  … waiting for approval (sentinel approvals); following run {run_id} until it goes on",
                  flush=True)
        while engine.show(run_id).status == RunStatus.WAITING_APPROVAL:
            time.sleep(PAUSE_POLL_S)


def _stream(engine: Engine, run_id: str, after: int, as_json: bool) -> int:
    """One follow of the event stream (until the run pauses or ends), with a line when it is quiet for long."""
    import queue
    import threading

    items: "queue.Queue[Event | BaseException | None]" = queue.Queue()  # None: the stream ended

    def pump() -> None:
        try:
            for event in engine.events(run_id, after=after, follow=True):
                items.put(event)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            items.put(exc)
        items.put(None)

    threading.Thread(target=pump, name="logs-follow", daemon=True).start()
    quiet_since = time.monotonic()
    while True:
        try:
            item = items.get(timeout=HEARTBEAT_S)
        except queue.Empty:
            if not as_json:
                print(f"  … still running: nothing new for {time.monotonic() - quiet_since:.0f} s (a model call or "
                      "a tool shows when it ends)", flush=True)
            continue
        if item is None:
            return after
        if isinstance(item, BaseException):
            raise item
        _print_event(item, as_json)
        quiet_since = time.monotonic()
        if item.run_id == run_id:
            after = max(after, item.seq)


def status(as_json: bool = Option(False, "--json")) -> None:
    """Mode (system: the supervisor answers; local: this process runs the engine), home, defaults, runs."""
    with _engine() as engine:
        data = engine.status()
        if engine.mode == "local":
            data.update(_system_files())
        facts = getattr(engine, "facts", None)
    data.update(_gate_status(facts if isinstance(facts, Facts) else _local_facts()))  # yours, where you are
    if as_json:
        return print_json(data)
    for key, value in data.items():
        print(_status_line(key, value))
    if str(data.get("config") or "").startswith("BROKEN"):
        print("warning: the operator's config.yaml no longer loads: see `config` above")
    if data.get("sandbox") == "best_effort":
        print("warning: sandbox is best_effort: a sandbox layer that cannot be applied does not stop a launch")
    if object_in(data.get("store")).get("reachable") is False:
        print("warning: the store does not answer: no run executes or is decided until it does (the supervisor "
              "retries)")


def _gate_status(facts: Facts | None) -> JSONObject:
    """Each judge of the local config's gate probed, and the hooks installed around the cwd. `facts`: the local
    config's, as its last validation recorded them (sentinel/config_stamp.py)."""
    from sentinel.hooks.trust import summary
    from sentinel.policy.gate.probe import probe_configured

    return {"judges": [*probe_configured(facts)], **summary(str(Path.cwd()))}


def _local_facts() -> Facts | None:
    """System mode: this user's own config's facts, for the judges of their hooks (None: it does not load, and the
    probe says why)."""
    from sentinel import paths
    from sentinel.errors import ConfigError
    from sentinel.local.engine import checked_facts

    try:
        return checked_facts(paths.home())
    except ConfigError:
        return None


def _system_files() -> JSONObject:
    """Root beside a system-mode setup with no supervisor answering: which files its parts cannot read."""
    import os

    from sentinel.supervisor import admin

    if os.geteuid() != 0 or not admin.system_installed():
        return {}
    return {"unreadable": [*admin.unreadable_files()], "exposed": [*admin.exposed_files()]}


def _status_line(key: str, value: object) -> str:
    """`key: value` for people: a mapping as `k v, ...`, a list one item per indented line, empty as none."""
    def flat(item: object) -> str:
        if isinstance(item, dict):
            return ", ".join(f"{k} {v}" for k, v in item.items() if v is not None) or "none"
        return str(item)

    if isinstance(value, list):  # a notify target's last error can quote what its server answered
        return f"{key}: none" if not value else "\n".join([f"{key}:"] + [f"  {visible(flat(v))}" for v in value])
    return visible(f"{key}: {flat(value) if isinstance(value, dict) else value}")


def cancel(run_id: str = Argument(..., help="Run id."), as_json: bool = Option(False, "--json")) -> None:
    """Cancel a run: its worker is stopped and its pending approvals can never be used."""
    with _engine() as engine:
        outcome = engine.cancel(run_id)
    if as_json:
        return print_json(outcome.to_dict())
    print(f"run {outcome.id} is {outcome.status}", file=sys.stderr)


def checkpoint_line(c: Mapping[str, object]) -> str:
    """One checkpoint as `show` lists it: `step 2 bash: changed a.txt; removed b.txt`."""
    what = "; ".join(part for part in (f"changed {', '.join(_texts(c['changed']))}" if c["changed"] else "",
                                       f"removed {', '.join(_texts(c['removed']))}" if c["removed"] else "") if part)
    head = f"step {c['step']} " + (f"undo to step {c['undo']}" if c.get("undo") is not None else str(c["tool"]))
    return f"{head}: {what or 'no file recorded'}" + ("" if c.get("complete", True) else " (not all recorded)")


def undo(run_id: str = Argument(..., help="Run id."),
         to: int = Option(0, "--to", help="Keep the run's changes up to this checkpoint (0: undo them all)."),
         as_json: bool = Option(False, "--json")) -> None:
    """Put a run's workspace back as it was before its changes (or after checkpoint --to STEP; `show` lists them)."""
    with _engine() as engine:
        done = engine.undo(run_id, to)
    if as_json:
        print_json(done)
        raise SystemExit(1 if done["missing"] else 0)  # as the text form: not all put back is a failure
    for path in list_in(done.get("restored")):  # paths as the run's journal has them: shown escaped
        print(f"restored {_shown(path)}")
    for path in list_in(done.get("removed")):
        print(f"removed {_shown(path)}")
    children = _records(done.get("children"))  # the runs below it in its workspace: undone with it
    for child in children if done["restored"] or done["removed"] or done["missing"] else []:
        steps = ", ".join(str(n) for n in list_in(child.get("steps")))
        print(f"undone with it: child run {child.get('id')}, steps {steps} (it worked in the same workspace)")
    said = _undo_reasons(done)
    why = ("its stored copy is missing or damaged, a directory holding files is in its place, or its directory is "
           "out of the workspace's reach")
    for path in list_in(done.get("missing")):
        if path not in said:
            print(f"could not restore {_shown(path)}: {why}", file=sys.stderr)
    for whose, numbers in [("", done.get("incomplete")),
                           *((f" of child run {c.get('id')}", c.get("incomplete")) for c in children)]:
        if steps := ", ".join(str(n) for n in list_in(numbers)):
            print(f"steps {steps}{whose} were not recorded whole (a file over 32 MiB, a workspace too large to copy, "
                  "or a crash before the step was recorded): files they changed may differ", file=sys.stderr)
    for child in _records(done.get("elsewhere")):
        print(f"not undone with it: child run {child.get('id')}, which worked in another workspace "
              f"({visible(str(child.get('workspace')))}): `sentinel undo {child.get('id')}` puts that back",
              file=sys.stderr)
    if not (done["restored"] or done["removed"] or done["missing"]):
        # undo records files and symlinks, not directories: an empty one the run made is not known, so not claimed
        with_children = f" and its child runs {', '.join(str(c.get('id')) for c in children)}" if children else ""
        print(f"the workspace's files and symlinks already match checkpoint {done['to']} of run {run_id}"
              f"{with_children} (directories are not recorded: an empty one the run made stays)")
    elif done["missing"]:
        back = len(list_in(done.get("restored"))) + len(list_in(done.get("removed")))
        print(f"undo of run {run_id} to checkpoint {done['to']}: {back} put back, {len(list_in(done['missing']))} not "
              "(said above)", file=sys.stderr)
    raise SystemExit(1 if done["missing"] else 0)


def _undo_reasons(done: JSONObject) -> set[str]:
    """Print why each path `undo` kept, could not bring back, or restored without its owner or mode; the paths."""
    reasons = {"kept": "kept {} as it is: it changed after the run's last step, and undo would lose that (move it "
                       "aside, then undo again to have the earlier version put back)",
               "unstored": "could not restore {}: it was over 32 MiB, so the run never stored it (it is left as it is)",
               "attributes": "restored {} without its owner, group or setuid/setgid bits: this user may not set "
                             "them"}
    said: set[str] = set()
    for kind, line in reasons.items():
        for path in list_in(done.get(kind)):
            print(line.format(_shown(path)), file=sys.stderr)
            said.add(str(path))
    return said


def _shown(path: object) -> str:
    """A path `undo` names, as the journal keys it: a byte of its name that is not UTF-8 (kept as NUL and two hex
    digits, sentinel/worker/undo.py) shown as `\\xff`, and nothing that could move the cursor."""
    return visible(str(path).replace("\0", "\\x"))


def register(app: "typer.Typer") -> None:
    for fn in (run, runs, show, approvals, approve, deny, resume, logs, status, cancel, undo):
        app.command(fn.__name__)(typed(fn))


def _records(value: JSON) -> list[JSONObject]:
    """The child runs `undo` names (a JSON array of objects)."""
    return [item for item in list_in(value) if isinstance(item, dict)]


def _texts(value: object) -> list[str]:
    """The paths a checkpoint lists (a JSON array of them, as the journal records it)."""
    return [str(item) for item in value] if isinstance(value, (list, tuple)) else []
