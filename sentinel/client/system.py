"""The CLI's side of the operator socket: find the supervisor, send one request, render its stream.

    connect() -> SystemEngine | None     None means local mode
    system_mode() -> bool                the same rule, for commands that work on files

Mode: SENTINEL_MODE=local forces local mode; SENTINEL_SOCKET (or SENTINEL_MODE=system) names a
supervisor that must answer; SENTINEL_HOME set (and neither of those) keeps local mode on that home;
otherwise the default socket is used when it exists and answers, and the command says so in one line on
stderr (a running supervisor never takes a command over silently). A user
the socket's directory hides from (not root, not in the operator group) gets local mode, with a note in
`status`, or, when a supervisor was asked for, one line saying why not; never a traceback.
SystemEngine implements the engine protocol (`sentinel.engine.api.Engine`) over the socket.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from sentinel.engine import events
from sentinel.engine.api import Closing, Outcome, RunDetail
from sentinel.engine.events import Event, Listener
from sentinel.engine.rows import ApprovalRow, FiringRow, InboxRow, RunRow, SessionRow
from sentinel.errors import Busy, NotFound, SentinelError, UsageError
from sentinel import frames as protocol
from sentinel.client import paths
ERRORS: dict[str, type[SentinelError]] = {"usage": UsageError, "not_found": NotFound, "busy": Busy}


class Denied(SentinelError):
    """The supervisor refused the caller (not an operator)."""

    exit_code = 2


def _explicit() -> bool:
    return bool(os.environ.get("SENTINEL_SOCKET")) or os.environ.get("SENTINEL_MODE", "") == "system"


def _local_asked() -> bool:
    return os.environ.get("SENTINEL_MODE", "") == "local" or bool(os.environ.get("SENTINEL_HOME") and not _explicit())


def system_mode() -> bool:
    """The mode rule, without asking the supervisor anything: system mode when it is asked for, or when
    nothing asks for local mode and this user can see the socket. Commands that work on files rather than
    through the socket (`sentinel mcp add`: /etc/sentinel's config.yaml or $SENTINEL_HOME's) choose by it."""
    if _local_asked():
        return False
    return _explicit() or bool(_visible(paths.socket_path()))


def connect() -> "SystemEngine | None":
    explicit = _explicit()
    if _local_asked():
        return None
    path = paths.socket_path()
    seen = _visible(path)
    if not explicit and not seen:
        return None
    if seen is None:
        raise Denied(_not_yours(path))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except PermissionError:
        sock.close()
        raise Denied(_not_yours(path)) from None
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        sock.close()
        if explicit:
            raise UsageError(f"no supervisor is listening on {path} (start it: sentinel supervisor)") from None
        return None
    sock.close()
    if not explicit:
        print(f"sentinel: system mode: the supervisor on {path} runs this (SENTINEL_MODE=local or "
              "SENTINEL_HOME=DIR for local mode)", file=sys.stderr, flush=True)
    return SystemEngine(path)


def connect_agent() -> "SystemEngine | None":
    """The agent door (sentinel/supervisor/agentdoor.py), for an agent's own user: its chat runs under the
    supervisor. None when there is no door, local mode is asked for, or the supervisor says this user is
    no agent's (then local mode, as before)."""
    mode = os.environ.get("SENTINEL_MODE", "")
    if mode == "local" or (os.environ.get("SENTINEL_HOME") and not os.environ.get("SENTINEL_AGENT_SOCKET")):
        return None
    path = paths.agent_socket_path()
    if not _visible(path):
        return None
    engine = SystemEngine(path)
    try:
        status = engine.status()
    except SentinelError:  # Denied: not a registered agent's user; or no supervisor behind a stale door
        return None
    print(f"sentinel: system mode: the supervisor runs this chat as agent {status.get('agent')} "
          f"(through {path}; SENTINEL_MODE=local for local mode)", file=sys.stderr, flush=True)
    return engine


def local_note() -> str | None:
    """Why local mode was chosen on a machine that has a supervisor directory, if it does."""
    path = paths.socket_path()
    seen = _visible(path)
    if seen is None:
        return (f"a supervisor runs system mode here, for root and members of group {paths.operator_group()!r} "
                "only; you are in local mode, in your own account")
    if not seen and _visible(path.parent):
        return "a supervisor directory exists but its socket is missing (is `sentinel supervisor` running?)"
    return None


def hidden() -> bool:
    """Whether this machine's supervisor hides its socket from this user: they are not an operator."""
    return _visible(paths.socket_path()) is None


def _visible(path: Path) -> bool | None:
    """Whether `path` exists; None when a directory on the way hides it from this user."""
    try:
        os.stat(path)
        return True
    except PermissionError:
        return None
    except OSError:
        return False


def _not_yours(path: Path) -> str:
    return (f"permission denied on the supervisor socket {path}: only root and members of group "
            f"{paths.operator_group()!r} may use it (SENTINEL_MODE=local for local mode)")


class SystemEngine(Closing):
    """The engine protocol (`sentinel.engine.api.Engine`) answered by the supervisor over its socket."""

    mode = "system"

    def __init__(self, path: Path):
        self.path = path

    def close(self) -> None:
        pass

    # -- transport --------------------------------------------------------------------------------

    def call(self, op: str, listener: Listener | None = None, **args: Any) -> Any:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(self.path))
            protocol.send(sock, {"op": op, **args})
            return _answer(sock, listener)
        except (ConnectionError, protocol.ProtocolError) as exc:
            raise SentinelError(f"lost the supervisor connection ({exc})") from None
        finally:
            sock.close()

    # -- the engine protocol ------------------------------------------------------------------------

    def start(self, task: str, *, model: str | None = None, agent: str | None = None,
              workspace: Path | None = None, on_event: Listener | None = None, chat: bool = False,
              skills: Sequence[str] = (), hook: str | None = None) -> Outcome:
        """A hook session (`hook`: its firing) is not followed: its relay contract's timer is in the database."""
        ws = str(workspace.expanduser().resolve()) if workspace else None
        return Outcome.from_dict(self.call("start", on_event, task=task, model=model, agent=agent, workspace=ws,
                                           follow=not hook, chat=chat, skills=list(skills), hook=hook))

    def firings(self, *, watcher: str | None = None, limit: int | None = None) -> list[FiringRow]:
        return [FiringRow.from_dict(f) for f in protocol.result_objects(self.call("firings", watcher=watcher,
                                                                                    limit=limit))]

    def inbox(self, *, limit: int | None = None) -> list[InboxRow]:
        return [InboxRow.from_dict(n) for n in protocol.result_objects(self.call("inbox", limit=limit))]

    def send(self, run_id: str, text: str, *, skills: Sequence[str] = (), model: str | None = None,
             on_event: Listener | None = None) -> Outcome:
        return Outcome.from_dict(self.call("send", on_event, run_id=run_id, text=text, skills=list(skills),
                                           model=model, follow=True))

    def interrupt(self, run_id: str) -> Outcome:
        return Outcome.from_dict(self.call("interrupt", run_id=run_id))

    def sessions(self, *, limit: int | None = None) -> list[SessionRow]:
        return [SessionRow.from_dict(r) for r in protocol.result_objects(self.call("sessions", limit=limit))]

    def catalog(self, agent: str | None = None) -> dict[str, list[dict[str, str]]]:
        return protocol.result_object(self.call("catalog", agent=agent))

    def resume(self, run_id: str, *, on_event: Listener | None = None) -> Outcome:
        return Outcome.from_dict(self.call("resume", on_event, run_id=run_id, follow=True))

    def approve(self, ident: str, *, digest: str | None = None, on_event: Listener | None = None,
                follow: bool = True, always: bool = False) -> Outcome:
        """The supervisor records the decision and resumes the run in its worker (`follow`: hear it until it
        pauses or ends)."""
        extra = {"always": True} if always else {}
        return Outcome.from_dict(self.call("approve", on_event, ident=ident, digest=digest, follow=follow, **extra))

    def deny(self, ident: str, *, reason: str = "", digest: str | None = None,
             on_event: Listener | None = None, follow: bool = True) -> Outcome:
        return Outcome.from_dict(self.call("deny", on_event, ident=ident, reason=reason, digest=digest,
                                           follow=follow))

    def cancel(self, run_id: str) -> Outcome:
        return Outcome.from_dict(self.call("cancel", run_id=run_id))

    def undo(self, run_id: str, to: int | None = None) -> dict[str, Any]:
        """Not in system mode yet: the restore must run as the agent's user (never root in the agent's tree), in a worker the
        supervisor starts, and that path is not built. The checkpoints are kept; `show` lists them."""
        raise UsageError("undo is not available in system mode yet (it must run as the agent's user); the "
                         f"run's checkpoints are kept: `sentinel show {run_id}` lists them")

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
        return Outcome.from_dict(self.call("workflow_start", on_event, name=name, input=input_text,
                                           workflow=read_yaml(path), source=str(path), follow=True))

    def roster(self) -> list[str]:
        """The system agents a workflow step may name."""
        return list(self.status().get("agents") or [])

    def trust_list(self, agent: str | None = None) -> list[dict[str, Any]]:
        return protocol.result_objects(self.call("trust_list", agent=agent))

    def trust_revoke(self, tool: str, *, agent: str | None = None, code_sha256: str | None = None) -> int:
        answer = protocol.result_object(self.call("trust_revoke", tool=tool, agent=agent, code_sha256=code_sha256))
        return int(answer["revoked"])

    def fire_watcher(self, ident: str, payload: Any, *, on_event: Listener | None = None) -> FiringRow:
        """The supervisor fires one of the operator's watchers; follow its hook session's events, then wait
        (polling its history) until the relay settled it."""
        firing = FiringRow.from_dict(protocol.result_object(self.call("watch_fire", id=ident, payload=payload)))
        if firing.run_id and on_event is not None:
            for event in self.events(firing.run_id, follow=True):
                on_event(event)
        while firing.status == "pending":
            time.sleep(0.2)
            firing = next(f for f in self.firings(watcher=ident, limit=50) if f.id == firing.id)
        return firing

    def mcp_trust(self, server: str) -> dict[str, Any] | None:
        pin = self.call("mcp_trust_get", server=server)
        return protocol.result_object(pin) if pin is not None else None

    def mcp_trust_set(self, server: str, sha256: str, document: str) -> None:
        self.call("mcp_trust_set", server=server, sha256=sha256, document=document)

    def mcp_trust_forget(self, server: str) -> None:
        self.call("mcp_trust_forget", server=server)

    def audit_quarantined(self, scope: str, findings: list[dict[str, Any]]) -> None:
        self.call("audit_quarantined", scope=scope, findings=findings)

    def show(self, run_id: str) -> RunDetail:
        return RunDetail.from_dict(protocol.result_object(self.call("show", run_id=run_id)))

    def runs(self, *, status: str | None = None, limit: int | None = None,
             all_hosts: bool = False) -> list[RunRow]:
        rows = protocol.result_objects(self.call("runs", limit=limit, all_hosts=all_hosts))
        return [RunRow.from_dict(r) for r in rows if not status or r.get("status") == status]

    def pending(self, *, all_hosts: bool = False) -> list[ApprovalRow]:
        return [ApprovalRow.from_dict(a) for a in protocol.result_objects(self.call("approvals", all_hosts=all_hosts))]

    def events(self, run_id: str | None = None, *, after: int = 0, follow: bool = False) -> Iterator[Event]:
        """Streams as the supervisor sends: each event is yielded as soon as its frame arrives."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(self.path))
            protocol.send(sock, {"op": "logs", "run_id": run_id, "follow": follow, "after": after})
            while True:
                message = protocol.recv(sock)
                if message is None or "event" not in message:
                    if message is not None and not message.get("ok", True):
                        _raise(message)
                    return
                event = events.parse(message["event"]) if isinstance(message["event"], dict) else None
                if event is not None and (event.seq > after or (run_id and event.run_id != run_id)):
                    yield event  # a child's events are numbered on their own
        except (ConnectionError, protocol.ProtocolError) as exc:
            raise SentinelError(f"lost the supervisor connection ({exc})") from None
        finally:
            sock.close()

    def status(self) -> dict[str, Any]:
        return protocol.result_object(self.call("status"))

    def web_token(self, listening: str | None = None) -> dict[str, Any]:
        """A one-time sign-in token for the web console, issued to operators only: {token, operator, prefix}."""
        return protocol.result_object(self.call("web_token", **({"listening": listening} if listening else {})))

    def web_sign_in(self, token: str, session_ttl_s: float) -> dict[str, Any] | None:
        return protocol.result_optional(self.call("web_sign_in", token=token, ttl_s=session_ttl_s))

    def web_session(self, secret: str) -> dict[str, Any] | None:
        return protocol.result_optional(self.call("web_session", secret=secret))

    def link(self, secret: str) -> dict[str, Any]:
        return protocol.result_object(self.call("link", secret=secret))

    def decide_link(self, secret: str, *, approved: bool, reason: str = "",
                    on_event: Listener | None = None, follow: bool = True, always: bool = False) -> Outcome:
        extra = {"always": True} if always else {}
        return Outcome.from_dict(self.call("link_decide", on_event, secret=secret, approved=approved, reason=reason,
                                           follow=follow, **extra))


def _answer(sock: socket.socket, listener: Listener | None) -> Any:
    """The reply, after handing streamed events to `listener` and gathering streamed parts into it."""
    parts: dict[str, list[Any]] = {}
    while True:
        message = protocol.recv(sock)
        if message is None:
            raise ConnectionError("the supervisor closed the connection")
        if "event" in message:
            event = events.parse(message["event"]) if isinstance(message["event"], dict) else None
            if listener is not None and event is not None:
                listener(event)
            continue
        if "part" in message:
            parts.setdefault(str(message["part"]), []).extend(message.get("items") or [])
            continue
        if "started" in message:
            continue
        if message.get("ok"):
            result = message.get("result")
            if isinstance(result, dict):
                for name, items in parts.items():
                    result[name] = list(result.get(name) or []) + items
            return result
        _raise(message)


def _raise(message: dict[str, Any]) -> None:
    kind = message.get("kind", "error")
    if kind == "denied":
        raise Denied(message.get("error", "permission denied"))
    raise ERRORS.get(kind, SentinelError)(message.get("error", "the supervisor refused"))
