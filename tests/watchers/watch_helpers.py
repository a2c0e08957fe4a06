"""Shared by the watcher tests (imported by name: `conftest` is ambiguous across test folders)."""

from __future__ import annotations

NOTIFY = [{"tool_calls": [{"name": "sentinel_act", "arguments": {"action": "notify", "message": "ETH is low"}}]},
          "Notified."]
ESCALATE = [{"tool_calls": [{"name": "sentinel_escalate",
                             "arguments": {"reason": "needs a person", "severity": "warning"}}]}, "Escalated."]


def price_watcher(ident, endpoint, **overrides):
    """A watcher that polls `endpoint` fast and fires when its price is below 2000. Its hook session has 20 s to
    notify: a loaded machine can take seconds, and a test that wants the fallback timer sets its own."""
    return {"id": ident, "eventName": "eth.price.low",
            "strategy": {"type": "http-poll", "endpoint": endpoint, "intervalS": 0.05},
            "match": {"path": "$.price", "op": "<", "value": 2000},
            "priority": "high", "tags": ["defi"],
            "fire": {"operatorGoal": "Tell the operator ETH dropped.", "environment": "test"},
            "hookResponseTimeoutMs": 20000, **overrides}
