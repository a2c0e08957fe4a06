"""The chat shell: reads messages and /commands, runs each turn on the engine, answers approvals inline.

    shell = Shell(engine, io, agent=None, model=None)
    shell.open(new=False, session=None)       # resume the newest session (one-line banner), or start fresh
    shell.loop()                              # until /quit, Ctrl-D or the end of input

It speaks only the engine protocol (`sentinel.engine.api.Engine`) and renders its events, so local and
system mode behave alike. A session is a durable run: each message is a turn (`start` for the first,
`send` after), a turn that pauses for approval asks y/N here and resolves the same approval the queue
holds, and Ctrl-C stops the turn (`interrupt`), not the shell: the command it runs, with everything
it started, is dead when "turn stopped" shows. Closing the terminal (SIGHUP) stops the turn the same
way, then leaves.
"""

from __future__ import annotations

import dataclasses
import re
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Callable

from rich.markup import escape

from sentinel.jsontypes import list_in
from sentinel.chat.complete import COMMANDS
from sentinel.chat.terminal import ChatIO
from sentinel.chat.view import View
from sentinel.engine.api import Engine, Outcome
from sentinel.engine.rows import ApprovalRow, SessionRow
from sentinel.errors import Busy, SentinelError, UsageError
from sentinel.engine.status import ANSWERED, TERMINAL, RunStatus
from sentinel.ui.escape import visible

Turn = Callable[[View], Outcome]


class HungUp(KeyboardInterrupt):
    """The terminal closed (SIGHUP): the turn stops as with Ctrl-C, then the chat leaves."""


def _hang_up(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # once: stopping the turn must not be cut short
    raise HungUp()
SKILL = re.compile(r"(?<!\S)\$([a-z0-9][a-z0-9_-]*)(?!\S)")
NOT_YET = {
    "memory": "memory search is not available in this version yet",
}


class Shell:
    def __init__(self, engine: Engine, io: ChatIO, *, agent: str | None = None, model: str | None = None):
        self.engine, self.io = engine, io
        self.agent, self.model = agent, model
        self.session: SessionRow | None = None        # the `sessions()` row of the current session
        self.skills: list[str] = []                   # attached with $name, sent with the next message
        self._catalog: dict[str, list[dict[str, str]]] | None = None

    # -- opening ----------------------------------------------------------------------------------

    def open(self, *, new: bool = False, session: str | None = None) -> None:
        row = self.find(session) if session else None if new else self.newest()
        if row is None:
            self.io.say("[dim]new session: type a message (/help lists the commands, Ctrl-D leaves)[/]")
            return
        self.session = row
        self.agent = self.agent or row.user or row.agent
        self.io.say(banner(row))
        if row.status == RunStatus.RUNNING:  # another process runs a turn of it: watch that turn end
            self.turn(lambda view: self.follow(row.id, view))
        elif row.status in (RunStatus.INTERRUPTED, RunStatus.WAITING_APPROVAL):  # take the stopped turn up again
            self.turn(lambda view: self.engine.resume(row.id, on_event=view))

    def find(self, run_id: str) -> SessionRow:
        for row in self.engine.sessions():
            if row.id == run_id:
                return row
        self.engine.show(run_id)  # NotFound for an id that names nothing
        raise UsageError(f"run {run_id} is not a chat session (`sentinel chats` lists them)")

    def newest(self) -> SessionRow | None:
        rows = [r for r in self.engine.sessions() if r.status not in TERMINAL]
        if self.agent:
            rows = [r for r in rows if self.agent in (r.agent, r.user)]
        return rows[0] if rows else None

    # -- the loop -----------------------------------------------------------------------------------

    def loop(self) -> None:
        while (line := self.io.read(self.prompt())) is not None:
            line = line.strip()
            if not line:
                continue
            try:
                if line.startswith("/"):
                    if not self.command(line):
                        return
                else:
                    self.message(line)
            except SentinelError as exc:
                self.io.error(str(exc))

    def prompt(self) -> str:
        who = (self.session.agent if self.session else None) or self.agent
        return f"{who} › " if who else "› "

    def message(self, line: str) -> None:
        if line.startswith("@"):
            return self.delegate(line)
        known = {s["name"] for s in self.catalog().get("skills", [])}
        attach = [m.group(1) for m in SKILL.finditer(line) if m.group(1) in known]
        text = SKILL.sub(lambda m: "" if m.group(1) in known else m.group(0), line).strip()
        self.skills += [name for name in attach if name not in self.skills]
        if not text:
            return self.io.say(f"[dim]attached {', '.join('$' + s for s in attach)}: "
                               "it joins the conversation with your next message[/]")
        skills, self.skills = self.skills, []
        if self.session is None:
            outcome = self.turn(lambda view: self.engine.start(text, agent=self.agent, model=self.model, chat=True,
                                                               skills=skills, on_event=view))
        else:
            session_id = self.session.id
            if self.session.status in (RunStatus.INTERRUPTED, RunStatus.WAITING_APPROVAL):
                self.turn(lambda view: self.engine.resume(session_id, on_event=view))
            outcome = self.turn(lambda view: self.engine.send(session_id, text, skills=skills,
                                                              model=self.model, on_event=view))
        if outcome is not None and (self.session is None or self.session.id != outcome.id):
            self.session = self.find(outcome.id)

    def delegate(self, line: str) -> None:
        """`@NAME message`: the operator hands the message to that specialist directly, as its own run (its
        approvals are asked here); the session's conversation is not changed."""
        name, _, text = line[1:].partition(" ")
        if not name or not text.strip():
            raise UsageError("usage: @NAME message")
        if name not in {a["name"] for a in self.catalog().get("agents", [])}:
            raise UsageError(f"@{name}: no agent {name!r} (`sentinel agent list`)")
        self.turn(lambda view: self.engine.start(text.strip(), agent=name, on_event=view))

    # -- one turn -------------------------------------------------------------------------------------

    def turn(self, op: Turn) -> Outcome | None:
        """Run one engine operation to the end of its turn, answering each approval it pauses on."""
        view = self.io.view()
        try:
            view.begin("sending")
            outcome: Outcome | None = op(view)
            while outcome is not None and outcome.status == RunStatus.WAITING_APPROVAL:
                view.close()  # no spinner left under the question
                outcome = self.approval(outcome, view)
        except KeyboardInterrupt as exc:
            view.close()
            if isinstance(exc, HungUp):  # no one reads the screen any more: stop the turn, then leave
                self.stop(view, quiet=True)
                raise
            return self.stop(view)
        finally:
            view.close()
        if outcome is not None:
            self.settle(outcome)
        return outcome

    def settle(self, outcome: Outcome) -> None:
        if self.session is not None and self.session.id == outcome.id:
            self.session = dataclasses.replace(self.session, status=outcome.status)
        if outcome.status in (RunStatus.INTERRUPTED, RunStatus.FAILED, RunStatus.CANCELLED):
            self.io.error(f"session {outcome.id} is {outcome.status}: {outcome.error or ''}")

    def stop(self, view: View, *, quiet: bool = False) -> Outcome | None:
        """Stop the turn: its command, if one runs, is already dead (its keeper killed its whole tree before
        the interrupt reached us here, sentinel/leash/launch.py `_cancel`); the session waits for a message."""
        run_id = view.run_id or (self.session.id if self.session else None)
        if run_id is None:
            return None
        try:
            outcome = self.engine.interrupt(run_id)
        except SentinelError as exc:
            if not quiet:
                self.io.error(f"could not stop the turn: {exc}")
            return None
        if quiet:
            return outcome
        self.io.say("[yellow]turn stopped[/] [dim](the session waits for your next message)[/]")
        self.settle(outcome)
        return outcome

    def approval(self, outcome: Outcome, view: View) -> Outcome | None:
        ident = outcome.approval_id or ""
        approval = self.pending(ident)
        if approval is None:  # resolved elsewhere before we could ask
            return self.follow(outcome.id, view)
        self.io.approval(approval)
        answer = self.io.confirm("approve? [y/N] ", lambda: self.resolved_elsewhere(ident))
        if answer == "closed":
            self.io.say(f"[dim]approval {ident} was resolved elsewhere[/]")
            return self.follow(outcome.id, view)
        if answer == "eof":
            self.io.say(f"approval {ident} stays pending: sentinel approve {ident}  |  sentinel deny {ident}")
            return None
        # said at once: in system mode the supervisor's first event after an answer is a second or more away,
        # and a static line (no spinner thread) leaves Ctrl-C to the command that runs next
        self.io.say(f"[dim]{'approved' if answer == 'yes' else 'denied'} {ident}: "
                    f"{'the run goes on' if answer == 'yes' else 'the agent is told'} …[/]")
        try:
            if answer == "yes":
                return self.engine.approve(ident, digest=approval.digest, on_event=view)
            return self.engine.deny(ident, reason="denied in the chat", digest=approval.digest, on_event=view)
        except UsageError as exc:
            if self.pending(ident) is not None:
                raise
            self.io.say(f"[dim]{escape(str(exc))}: someone resolved it first[/]")
            return self.follow(outcome.id, view)

    def pending(self, ident: str) -> ApprovalRow | None:
        return next((a for a in self.engine.pending() if a.id == ident), None)

    def resolved_elsewhere(self, ident: str) -> bool:
        try:
            return self.pending(ident) is None
        except SentinelError:  # the engine is out of reach for a moment: keep asking
            return False

    def follow(self, run_id: str, view: View) -> Outcome:
        """Show what happens to a run someone else moved on, then take it up where it stands."""
        while True:
            for event in self.engine.events(run_id, after=view.seq, follow=True):
                view(event)
            try:
                return self.engine.resume(run_id, on_event=view)
            except Busy:
                time.sleep(0.2)

    # -- commands -------------------------------------------------------------------------------------

    def command(self, line: str) -> bool:
        """Run one /command; False to leave the shell."""
        name, _, arg = line.partition(" ")
        arg = arg.strip()
        if name == "/quit":
            return False
        handler = getattr(self, "cmd_" + name[1:], None) if name in COMMANDS else None
        if handler is None:
            self.io.error(f"unknown command {name} (/help lists them)")
        else:
            handler(arg)
        return True

    def cmd_help(self, arg: str) -> None:
        for name, text in COMMANDS.items():
            self.io.plain(f"{name:<10} {text}")
        self.io.plain("@NAME msg  send the message to that specialist    $SKILL  attach a skill")

    def cmd_agents(self, arg: str) -> None:
        self._catalog = None
        for item in self.catalog().get("agents", []):
            self.io.plain(_item(item))

    def cmd_skills(self, arg: str) -> None:
        self._catalog = None
        attached = set(self.skills) | set(self._attached())
        for item in self.catalog().get("skills", []):
            self.io.plain(("✓ " if item["name"] in attached else "  ") + _item(item))

    def cmd_use(self, arg: str) -> None:
        if arg not in {a["name"] for a in self.catalog().get("agents", [])}:
            raise UsageError(f"/use: no agent {arg!r} (/agents lists them)")
        self.agent, self.session, self._catalog = arg, None, None
        self.io.say(f"talking to [bold]{escape(arg)}[/]: your next message starts its session")

    def cmd_model(self, arg: str) -> None:
        if not arg:
            current = self.model or (self.session.model if self.session else None) or "the agent's default"
            return self.io.plain(f"model: {current}")
        self.model = arg
        self.io.say(f"model [bold]{escape(arg)}[/] from your next message on")

    def cmd_undo(self, arg: str) -> None:
        """`/undo [STEP]`: the session's last change undone (or every change after checkpoint STEP)."""
        if self.session is None:
            return self.io.plain("nothing to undo: no session yet")
        if arg and not arg.isdigit():
            raise UsageError("usage: /undo [STEP] (a checkpoint number: `sentinel show` lists them)")
        done = self.engine.undo(self.session.id, int(arg) if arg else None)
        changed = ([f"restored {visible(p)}" for p in list_in(done.get("restored"))]
                   + [f"removed {visible(p)}" for p in list_in(done.get("removed"))])
        self.io.say(escape("; ".join(changed) or "nothing to put back") + f" [dim](checkpoint {done.get('to')})[/]")
        for child in (c for c in list_in(done.get("children")) if isinstance(c, dict)):
            self.io.plain(f"undone with it: child run {visible(str(child.get('id')))} (it worked in this workspace)")
        for child in (c for c in list_in(done.get("elsewhere")) if isinstance(c, dict)):
            self.io.plain(f"not undone with it: child run {visible(str(child.get('id')))}, which worked in "
                          f"{visible(str(child.get('workspace')))} (sentinel undo {visible(str(child.get('id')))})")
        why = {**{p: "it was over 32 MiB and never stored" for p in list_in(done.get("unstored"))},
               **{p: "restored without its owner or setuid/setgid bits" for p in list_in(done.get("attributes"))},
               **{p: "it changed after the run's last step: kept as it is (move it aside and /undo again)"
                  for p in list_in(done.get("kept"))}}
        for path in list_in(done.get("missing")):
            self.io.error(f"could not restore {visible(path)}: {why.get(path, 'its stored copy is missing')}")

    def cmd_new(self, arg: str) -> None:
        self.session = None
        self.io.say("[dim]your next message starts a new session[/]")

    def cmd_chats(self, arg: str) -> None:
        for row in self.engine.sessions():
            mark = "*" if self.session and row.id == self.session.id else " "
            self.io.plain(f"{mark} {row.id}  {row.status:<16} {_title(row)}")

    def cmd_status(self, arg: str) -> None:
        status = self.engine.status()
        self.io.plain(f"mode: {status.get('mode')}  pending approvals: {status.get('pending_approvals')}")
        if self.session is None:
            return self.io.plain("session: none yet (your next message starts one)")
        row = self.find(self.session.id)
        self.io.plain(f"session: {row.id} {row.status}  agent: {row.agent}  "
                      f"model: {self.model or row.model}  «{_title(row)}»")
        if attached := self._attached() + self.skills:
            self.io.plain("skills: " + ", ".join(attached))

    def cmd_memory(self, arg: str) -> None:
        self.io.error(NOT_YET["memory"])

    def cmd_workflow(self, arg: str) -> None:
        """`/workflow run NAME [INPUT]`: run the saved workflow here; a step's approval is asked inline."""
        verb, _, rest = arg.partition(" ")
        name, _, input_text = rest.strip().partition(" ")
        if verb != "run" or not name:
            raise UsageError("usage: /workflow run NAME [INPUT]")
        if name not in {w["name"] for w in self.catalog().get("workflows", [])}:
            raise UsageError(f"/workflow run: no saved workflow {name!r} (workflows/{name}.yaml)")
        outcome = self.turn(lambda view: self.engine.run_workflow(name, input_text.strip(), on_event=view))
        if outcome is not None and outcome.status in ANSWERED:
            self.io.plain(outcome.output or "")  # the last step's answer (the steps' own turns are their runs')
        if outcome is not None and outcome.status == RunStatus.DONE_UNVERIFIED:
            self.io.error(f"workflow run {outcome.id} done_unverified: {outcome.error or ''}")

    def cmd_mcp(self, arg: str) -> None:
        """`/mcp`: each configured MCP server, its transport and target, ✓ when this agent is granted it."""
        from sentinel import config
        from sentinel.agents import profile as profiles

        servers = config.load().mcp_servers
        granted = set(profiles.load(self.agent, check=False).mcp)
        if not servers:
            return self.io.plain("no MCP servers (sentinel mcp add NAME -- COMMAND ...)")
        for name, server in servers.items():
            mark = "✓ " if name in granted else "  "
            self.io.plain(f"{mark}{name:<16} {server.transport:<6} {server.target}")
        if not granted & set(servers):
            self.io.plain(f"{self.agent or 'this agent'} is granted none: add `mcp: [NAME]` to its profile")

    # -- helpers ------------------------------------------------------------------------------------

    def catalog(self) -> dict[str, list[dict[str, str]]]:
        if self._catalog is None:
            try:
                self._catalog = self.engine.catalog(self.agent)
            except SentinelError:
                self._catalog = {}
        return self._catalog

    def _attached(self) -> list[str]:
        if self.session is None:
            return []
        return list(self.engine.show(self.session.id).skills)


def _item(item: dict[str, str]) -> str:
    return f"{item['name']:<24} {item.get('description') or ''}".rstrip()


def _title(row: SessionRow) -> str:
    title = " ".join(visible(str(row.title or "")).split())
    return title if len(title) <= 60 else title[:59] + "…"


def _ago(t: float | None) -> str:
    if not t:
        return "?"
    s = max(0, int(time.time() - t))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s // size} {unit} ago"
    return "just now"


def banner(row: SessionRow) -> str:
    """The one line a resumed session opens with."""
    return (f"[bold]↻ session {row.id} «{escape(_title(row))}»[/] [dim]· {escape(visible(row.agent))} · "
            f"{escape(visible(row.model))} · {row.status} · active {_ago(row.updated_at)}"
            f" — /new starts a fresh one[/]")


def run(engine: Engine, history: Path, *, new: bool = False, session: str | None = None, agent: str | None = None,
        model: str | None = None) -> None:
    """The chat on this process's terminal, or line by line when stdin is not one."""
    from sentinel.chat.terminal import LineIO

    shell = Shell(engine, LineIO(), agent=agent, model=model)
    if sys.stdin.isatty() and sys.stdout.isatty():  # the completer asks the shell for its catalog
        from sentinel.chat.complete import Completer
        from sentinel.chat.terminal import TerminalIO

        shell.io = TerminalIO(history, Completer(shell.catalog))
    previous = signal.signal(signal.SIGHUP, _hang_up)
    try:
        shell.open(new=new, session=session)
        shell.loop()
    except HungUp:
        pass
    finally:
        signal.signal(signal.SIGHUP, previous)
