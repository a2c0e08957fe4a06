"""The worker's side of its channel to the supervisor: a Store for its own run, and event relay.

    channel = Channel(sock)                 # the socket pair end the worker inherited
    store = RemoteStore(channel, run_id)    # what AgentLoop uses as deps.store in system mode

Every call is one request frame and one reply frame. The supervisor answers only what a worker may
ask about its own run (status, its decisions, its approvals, consume, audit, whether a code hash is
trusted); it never resolves an approval or records trust for a worker, so no code running as the agent's
user can approve anything or trust its own code. A decision the worker records stands once recorded: on
resume the loop reads it back from the supervisor.
"""

from __future__ import annotations

import socket
from dataclasses import asdict, fields
from typing import Any, Mapping

from sentinel.engine.events import Event
from sentinel.engine.state import RunState
from sentinel.engine.store import Approval
from sentinel.errors import NotFound, SentinelError, UsageError
from sentinel import frames as protocol
from sentinel.jsontypes import JSON, JSONObject

_APPROVAL_FIELDS = {f.name for f in fields(Approval)}
_ERRORS: dict[str, type[SentinelError]] = {"not_found": NotFound, "usage": UsageError}


class Refused(SentinelError):
    """The supervisor refused a worker request."""


class Channel:
    def __init__(self, sock: socket.socket):
        self.sock = sock

    # untyped: a frame's JSON both ways; each method below reads the answer through frames.result_object & co.
    def call(self, op: str, **args: Any) -> Any:
        protocol.send(self.sock, {"op": op, **args})
        answer = protocol.recv(self.sock)
        if answer is None:
            raise SentinelError("the supervisor closed the worker channel")
        if answer.get("ok"):
            return answer.get("result")
        error = answer.get("error", "refused")
        raise _ERRORS.get(str(answer.get("kind")), Refused)(error)

    def emit(self, event: Event) -> None:
        """Relay one typed event (no reply)."""
        try:
            protocol.send(self.sock, {"op": "event", "event": event.to_dict()})
        except OSError:
            pass  # the journal is the source of truth; a lost relay only costs a live view

    def close(self) -> None:
        self.sock.close()


def _approval(data: JSON) -> Approval:
    return Approval(**{k: v for k, v in protocol.result_object(data).items() if k in _APPROVAL_FIELDS})


def _optional_approval(data: JSON) -> Approval | None:
    return None if data is None else _approval(data)


class RemoteStore:
    """The subset of sentinel.engine.store.Store that AgentLoop uses, answered by the supervisor."""

    def __init__(self, channel: Channel, run_id: str):
        self.channel = channel
        self.run_id = run_id

    def set_status(self, run_id: str, status: str, *, output: str | None = None, error: str | None = None) -> None:
        self.channel.call("set_status", run_id=run_id, status=status, output=output, error=error)

    def record_decision(self, run_id: str, call_id: str, decision: JSONObject) -> JSONObject:
        return protocol.result_object(self.channel.call("record_decision",
                                                        run_id=run_id, call_id=call_id, decision=decision))

    def decision_for_call(self, run_id: str, call_id: str) -> JSONObject | None:
        return protocol.result_optional(self.channel.call("decision_for_call", run_id=run_id, call_id=call_id))

    def approval_for_call(self, run_id: str, call_id: str) -> Approval | None:
        return _optional_approval(self.channel.call("approval_for_call", run_id=run_id, call_id=call_id))

    def submit_approval(self, run_id: str, call_id: str, tool: str, arguments: JSONObject, reason: str,
                        ttl_s: float | None = None, code: dict[str, str] | None = None,
                        code_sha256: str | None = None) -> Approval:
        return _approval(self.channel.call("submit_approval", run_id=run_id, call_id=call_id, tool=tool,
                                           arguments=arguments, reason=reason, ttl_s=ttl_s, code=code,
                                           code_sha256=code_sha256))

    def tool_trusted(self, run_id: str, tool: str, code_sha256: str) -> bool:
        """Asked, never told: the supervisor answers from its own trust table for this run's agent."""
        return bool(self.channel.call("tool_trusted", run_id=run_id, tool=tool, code_sha256=code_sha256))

    def mcp_trust(self, server: str) -> JSONObject | None:
        return protocol.result_optional(self.channel.call("mcp_trust", run_id=self.run_id, server=server))

    def get_approval(self, approval_id: str) -> Approval:
        return _approval(self.channel.call("get_approval", approval_id=approval_id))

    def pending_approvals(self, run_id: str | None = None) -> list[Approval]:
        pending = self.channel.call("pending_approvals", run_id=run_id or self.run_id)
        return [_approval(a) for a in protocol.result_objects(pending)]

    def expire(self) -> None:
        self.channel.call("expire")

    def consume(self, approval_id: str, digest: str) -> bool:
        return bool(self.channel.call("consume", approval_id=approval_id, digest=digest))

    def audit(self, kind: str, record: Mapping[str, object]) -> None:
        self.channel.call("audit", kind=kind, record=record)

    def relay_notify(self, run_id: str, message: str, targets: list[str] | None = None) -> JSONObject:
        """A hook session's notify: the supervisor settles this run's relay contract (never another's)."""
        return protocol.result_object(self.channel.call("relay_notify",
                                                        run_id=run_id, message=message, targets=targets or []))

    def relay_escalate(self, run_id: str, reason: str, severity: str) -> JSONObject:
        return protocol.result_object(self.channel.call("relay_escalate",
                                                        run_id=run_id, reason=reason, severity=severity))

    def close(self) -> None:
        self.channel.close()


class RemoteChildren:
    """Child runs as the supervisor makes them (sentinel/supervisor/children.py): it resolves the plan, and
    starts the child only for a call decided (and approved) as exactly that plan."""

    def __init__(self, channel: Channel):
        self.channel = channel

    def plan(self, tool: str, args: JSONObject, parent: RunState, granted: frozenset[str]) -> JSONObject:
        return protocol.result_object(self.channel.call("child_plan",
                                                        tool=tool, arguments=args, granted=sorted(granted)))

    def child_for_call(self, parent_id: str, call_id: str) -> JSONObject | None:
        return protocol.result_optional(self.channel.call("child_for_call", call_id=call_id))

    def start(self, parent: RunState, call_id: str, tool: str, plan: JSONObject, granted: frozenset[str]) -> str:
        return str(self.channel.call("child_start", call_id=call_id))

    def advance(self, child_id: str) -> JSONObject:
        return protocol.result_object(self.channel.call("child_advance", child_id=child_id))


def approval_dict(approval: Approval | None) -> JSONObject | None:
    return asdict(approval) if approval is not None else None
