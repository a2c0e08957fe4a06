"""SystemEngine: the engine protocol (`sentinel.engine.api.Engine`) over the operator socket. Each method sends
its operation's declared request (sentinel/engine/operations.py) and reads its declared result back; events the
supervisor streams meanwhile go to the caller's listener.

Only system mode imports this (sentinel/client/system.py's connect() makes one when a supervisor answers): a
local-mode command never loads the wire's declarations.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, NoReturn, Sequence, TypeVar

from sentinel import frames as protocol
from sentinel.client.refusals import raise_for
from sentinel.engine import operations as ops
from sentinel.engine.api import Closing, Outcome, RunDetail
from sentinel.engine.rows import ApprovalRow, FiringRow, InboxRow, RunRow, SessionRow
from sentinel.errors import NotFound, SentinelError
from sentinel.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from sentinel.engine.events import Event, Listener

R = TypeVar("R")


class SystemEngine(Closing):
    """The engine protocol (`sentinel.engine.api.Engine`) answered by the supervisor over its socket: each
    method sends its operation's declared request (sentinel/engine/operations.py) and reads its result back."""

    mode = "system"

    def __init__(self, path: Path):
        self.path = path

    def close(self) -> None:
        pass

    # -- transport --------------------------------------------------------------------------------

    def ask(self, request: ops.Operation[R], listener: Listener | None = None) -> R:
        """Send one declared request; its typed result (events streamed meanwhile go to `listener`)."""
        return request.result(self.call(request.op, listener, **request.arguments()))

    def call(self, op: str, listener: Listener | None = None, **args: object) -> JSON:
        """One raw request (the operator socket's other ops: sentinel/hooks/ask.py's queue)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(self.path))
            protocol.send(sock, {"op": op, **args})
            return _answer(sock, listener)
        except (ConnectionError, protocol.ProtocolError) as exc:
            raise SentinelError(f"lost the supervisor connection ({exc})") from None
        finally:
            sock.close()

    # -- runs -----------------------------------------------------------------------------------------

    def start(self, task: str, *, model: str | None = None, agent: str | None = None,
              workspace: Path | None = None, on_event: Listener | None = None, chat: bool = False,
              skills: Sequence[str] = (), hook: str | None = None) -> Outcome:
        """A hook session (`hook`: its firing) is not followed: its relay contract's timer is in the database."""
        # as typed, made absolute: the supervisor resolves it, refusing a link the agent's user could have made
        ws = os.path.abspath(os.path.expanduser(workspace)) if workspace else None
        return self.ask(ops.Start(task=task, model=model, agent=agent, workspace=ws, chat=chat, skills=list(skills),
                                  hook=hook, follow=not hook), on_event)

    def send(self, run_id: str, text: str, *, skills: Sequence[str] = (), model: str | None = None,
             on_event: Listener | None = None) -> Outcome:
        return self.ask(ops.Send(run_id=run_id, text=text, skills=list(skills), model=model, follow=True), on_event)

    def interrupt(self, run_id: str) -> Outcome:
        return self.ask(ops.Interrupt(run_id=run_id))

    def sessions(self, *, limit: int | None = None) -> list[SessionRow]:
        return self.ask(ops.Sessions(limit=limit))

    def resume(self, run_id: str, *, on_event: Listener | None = None) -> Outcome:
        return self.ask(ops.Resume(run_id=run_id, follow=True), on_event)

    def run_workflow(self, name: str, input_text: str = "", *, workspace: Path | None = None,
                     on_event: Listener | None = None) -> Outcome:
        """The operator's saved workflow, sent whole: the supervisor validates it against the roster and walks
        its steps (`workspace` is each step's agent's own in system mode)."""
        from sentinel.config import read_yaml
        from sentinel.workflows import model as workflows

        path = workflows.workflow_path(name)
        if not path.is_file():
            raise NotFound(f"no workflow {name!r} (no {path}; create it with `sentinel workflow create {name} "
                           "--file F`)")
        return self.ask(ops.RunWorkflow(name=name, input_text=input_text, workflow=read_yaml(path), source=str(path),
                                        follow=True), on_event)

    def cancel(self, run_id: str) -> Outcome:
        return self.ask(ops.Cancel(run_id=run_id))

    def undo(self, run_id: str, to: int | None = None) -> JSONObject:
        """The supervisor restores as the agent's user (sentinel/supervisor/workers.py `start_undo`) and answers when
        that is done."""
        return self.ask(ops.Undo(run_id=run_id, to=to))

    def runs(self, *, status: str | None = None, limit: int | None = None,
             all_hosts: bool = False) -> list[RunRow]:
        rows = self.ask(ops.Runs(limit=limit, all_hosts=all_hosts))
        return [r for r in rows if not status or r.status == status]

    def show(self, run_id: str) -> RunDetail:
        return self.ask(ops.Show(run_id=run_id))

    def events(self, run_id: str | None = None, *, after: int = 0, follow: bool = False) -> Iterator[Event]:
        """Streams as the supervisor sends: each event is yielded as soon as its frame arrives."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(self.path))
            protocol.send(sock, ops.encode(ops.Events(run_id=run_id, after=after, follow=follow)))
            while True:
                message = protocol.recv(sock)
                if message is None or "event" not in message:
                    if message is not None and not message.get("ok", True):
                        _raise(message)
                    return
                event = _event(message)
                if event is not None and (event.seq > after or (run_id and event.run_id != run_id)):
                    yield event  # a child's events are numbered on their own
        except (ConnectionError, protocol.ProtocolError) as exc:
            raise SentinelError(f"lost the supervisor connection ({exc})") from None
        finally:
            sock.close()

    # -- approvals ------------------------------------------------------------------------------------

    def pending(self, *, all_hosts: bool = False) -> list[ApprovalRow]:
        return self.ask(ops.Pending(all_hosts=all_hosts))

    def approve(self, ident: str, *, digest: str | None = None, on_event: Listener | None = None,
                follow: bool = True, always: bool = False) -> Outcome:
        """The supervisor records the decision and resumes the run in its worker (`follow`: hear it until it
        pauses or ends)."""
        return self.ask(ops.Approve(ident=ident, digest=digest, follow=follow, always=always), on_event)

    def deny(self, ident: str, *, reason: str = "", digest: str | None = None,
             on_event: Listener | None = None, follow: bool = True) -> Outcome:
        return self.ask(ops.Deny(ident=ident, reason=reason, digest=digest, follow=follow), on_event)

    def link(self, secret: str) -> JSONObject:
        return self.ask(ops.Link(secret=secret))

    def decide_link(self, secret: str, *, approved: bool, reason: str = "",
                    on_event: Listener | None = None, follow: bool = True, always: bool = False) -> Outcome:
        return self.ask(ops.DecideLink(secret=secret, approved=approved, reason=reason, follow=follow, always=always),
                        on_event)

    # -- agents ---------------------------------------------------------------------------------------

    def catalog(self, agent: str | None = None) -> dict[str, list[dict[str, str]]]:
        return self.ask(ops.Catalog(agent=agent))

    def roster(self) -> list[str]:
        """The system agents a workflow step may name."""
        agents = self.status().get("agents") or []
        return [str(a) for a in agents] if isinstance(agents, list) else []

    def trust_list(self, agent: str | None = None) -> list[JSONObject]:
        return self.ask(ops.TrustList(agent=agent))

    def trust_revoke(self, tool: str, *, agent: str | None = None, code_sha256: str | None = None) -> int:
        return self.ask(ops.TrustRevoke(tool=tool, agent=agent, code_sha256=code_sha256))

    def mcp_trust(self, server: str) -> JSONObject | None:
        return self.ask(ops.McpTrust(server=server))

    def mcp_trust_set(self, server: str, sha256: str, document: str) -> None:
        self.ask(ops.McpTrustSet(server=server, sha256=sha256, document=document))

    def mcp_trust_forget(self, server: str) -> None:
        self.ask(ops.McpTrustForget(server=server))

    def audit_quarantined(self, scope: str, findings: list[JSONObject]) -> None:
        self.ask(ops.AuditQuarantined(scope=scope, findings=findings))

    # -- watchers -------------------------------------------------------------------------------------

    def firings(self, *, watcher: str | None = None, limit: int | None = None) -> list[FiringRow]:
        return self.ask(ops.Firings(watcher=watcher, limit=limit))

    def inbox(self, *, limit: int | None = None) -> list[InboxRow]:
        return self.ask(ops.Inbox(limit=limit))

    def fire_watcher(self, ident: str, payload: JSON, *, on_event: Listener | None = None) -> FiringRow:
        """The supervisor fires one of the operator's watchers; follow its hook session's events, then wait
        (polling its history) until the relay settled it."""
        firing = self.ask(ops.FireWatcher(ident=ident, payload=payload))
        if firing.run_id and on_event is not None:
            for event in self.events(firing.run_id, follow=True):
                on_event(event)
        while firing.status == "pending":
            time.sleep(0.2)
            firing = next(f for f in self.firings(watcher=ident, limit=50) if f.id == firing.id)
        return firing

    # -- admin ----------------------------------------------------------------------------------------

    def status(self) -> JSONObject:
        return self.ask(ops.Status())

    def web_token(self, listening: str | None = None) -> JSONObject:
        """A one-time sign-in token for the web console, issued to operators only: {token, operator, prefix}."""
        return self.ask(ops.WebToken(listening=listening))

    def web_sign_in(self, token: str, session_ttl_s: float) -> JSONObject | None:
        return self.ask(ops.WebSignIn(token=token, session_ttl_s=session_ttl_s))

    def web_session(self, secret: str) -> JSONObject | None:
        return self.ask(ops.WebSession(secret=secret))


def _event(message: JSONObject) -> Event | None:
    body = message["event"]
    from sentinel.engine import events  # a command that streams none (a listing) never imports them

    return events.parse(body) if isinstance(body, dict) else None


def _answer(sock: socket.socket, listener: Listener | None) -> JSON:
    """The reply, after handing streamed events to `listener` and gathering streamed parts into it."""
    parts: dict[str, list[JSON]] = {}
    while True:
        message = protocol.recv(sock)
        if message is None:
            raise ConnectionError("the supervisor closed the connection")
        if "event" in message:
            event = _event(message)
            if listener is not None and event is not None:
                listener(event)
            continue
        if "part" in message:
            items = message.get("items")
            parts.setdefault(str(message["part"]), []).extend(items if isinstance(items, list) else [])
            continue
        if "started" in message:
            continue
        if message.get("ok"):
            result = message.get("result")
            if isinstance(result, dict):
                for name, got in parts.items():
                    before = result.get(name)
                    result[name] = (before if isinstance(before, list) else []) + got
            return result
        _raise(message)


def _raise(message: JSONObject) -> NoReturn:
    raise_for(message)
