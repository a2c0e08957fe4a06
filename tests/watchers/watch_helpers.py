"""Shared by the watcher tests (imported by name: `conftest` is ambiguous across test folders)."""

from __future__ import annotations

NOTIFY = [{"tool_calls": [{"name": "sentinel_act", "arguments": {"action": "notify", "message": "ETH is low"}}]},
          "Notified."]
ESCALATE = [{"tool_calls": [{"name": "sentinel_escalate",
                             "arguments": {"reason": "needs a person", "severity": "warning"}}]}, "Escalated."]


def price_watcher(ident, endpoint, **overrides):
    """A watcher that polls `endpoint` fast and fires when its price is below 2000."""
    return {"id": ident, "eventName": "eth.price.low",
            "strategy": {"type": "http-poll", "endpoint": endpoint, "intervalS": 0.05},
            "match": {"path": "$.price", "op": "<", "value": 2000},
            "priority": "high", "tags": ["defi"],
            "fire": {"operatorGoal": "Tell the operator ETH dropped.", "environment": "test"},
            "hookResponseTimeoutMs": 3000, **overrides}
