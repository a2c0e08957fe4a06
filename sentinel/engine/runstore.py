"""`RunStore`: what one run's loop asks of the store, and all it may ask.

`sentinel.engine.store.Store` implements it in local mode; in system mode the worker's `RemoteStore`
(sentinel/worker/remote.py) does, each method one request on the worker's channel that the supervisor
answers for the worker's own run only (`CHANNEL_OPS` in sentinel/supervisor/workers.py). Nothing here
resolves an approval or records trust: code running as the agent can ask, never decide.
"""

from __future__ import annotations

from typing import Mapping, Protocol

from sentinel.engine.store import Approval
from sentinel.jsontypes import JSONObject


class RunStore(Protocol):
    def set_status(self, run_id: str, status: str, *, output: str | None = None,
                   error: str | None = None) -> None: ...

    def record_decision(self, run_id: str, call_id: str, decision: JSONObject) -> JSONObject:
        """Record a call's decision unless it has one; the one that stands (the first)."""
        ...

    def decision_for_call(self, run_id: str, call_id: str) -> JSONObject | None: ...

    def approval_for_call(self, run_id: str, call_id: str) -> Approval | None: ...

    def submit_approval(self, run_id: str, call_id: str, tool: str, arguments: JSONObject, reason: str,
                        ttl_s: float | None = None, code: dict[str, str] | None = None,
                        code_sha256: str | None = None) -> Approval: ...

    def get_approval(self, approval_id: str) -> Approval: ...

    def pending_approvals(self, run_id: str | None = None) -> list[Approval]: ...

    def expire(self) -> None: ...

    def consume(self, approval_id: str, digest: str) -> bool:
        """Mark an approved call as executed: True exactly once, and only for the approved payload."""
        ...

    def tool_trusted(self, run_id: str, tool: str, code_sha256: str) -> bool: ...

    def mcp_trust(self, server: str) -> JSONObject | None: ...

    def audit(self, kind: str, record: Mapping[str, object]) -> None: ...

    def relay_notify(self, run_id: str, message: str, targets: list[str] | None = None) -> JSONObject: ...

    def relay_escalate(self, run_id: str, reason: str, severity: str) -> JSONObject: ...
