"""Listing rows read what the supervisor sends and give it back unchanged: the operator socket's wire format and
`--json` output do not move when a row is typed."""

from __future__ import annotations

import json

import pytest

from sentinel.engine.api import RunDetail
from sentinel.engine.rows import ApprovalRow, FiringRow, InboxRow, RunRow
from sentinel.errors import SentinelError

# What the agent door answers for `approvals`: no workspace, user or host (a person's own chat sessions only).
DOOR_APPROVAL = {"id": "a-1", "run_id": "r-1", "tool": "bash", "arguments": {"command": "ls"}, "reason": "why",
                 "status": "pending", "call_id": "call_1", "created_at": 1.5, "digest": "d" * 64, "parents": []}


def test_a_row_from_the_wire_gives_back_its_own_object_key_for_key():
    row = ApprovalRow.from_dict(DOOR_APPROVAL | {"from_a_newer_supervisor": 1})
    assert row.workspace is None and row.parents == []
    assert json.dumps(row.to_dict()) == json.dumps(DOOR_APPROVAL)


def test_show_keeps_its_pending_approvals_as_sent():
    detail = RunDetail.from_dict({"id": "r-1", "status": "waiting_approval", "task": "t", "agent": "a", "model": "m",
                                  "pending_approvals": [DOOR_APPROVAL]})
    assert detail.pending_approvals[0].digest == "d" * 64
    assert detail.to_dict()["pending_approvals"] == [DOOR_APPROVAL]


def test_a_row_missing_a_field_is_a_broken_peer_in_one_line():
    with pytest.raises(SentinelError, match="RunRow without a field"):
        RunRow.from_dict({"id": "r-1"})


def test_a_firing_and_an_inbox_entry_read_back_key_for_key(tmp_path):
    from sentinel.engine import relay
    from sentinel.engine.store import Store

    with Store.open(tmp_path / "s.db") as store:
        store.conn.execute("INSERT INTO watch_firings (id, watcher, dedupe_key, run_id, status, fired_at, deadline,"
                           " fallback, envelope) VALUES ('f-1', 'eth', 'k', NULL, 'pending', 1, 2, 1, '{\"a\": 1}')")
        relay.add_inbox(store.conn, "f-1", "eth", "notify", "ETH is low", now=3.0)
        [firing], [entry] = relay.history(store.conn), relay.inbox(store.conn)
        wire = json.loads(json.dumps([firing.to_dict(), entry.to_dict()]))
    assert (firing.fallback, firing.envelope, entry.message) == (True, {"a": 1}, "ETH is low")
    assert list(wire[0]) == ["id", "watcher", "dedupe_key", "run_id", "status", "fired_at", "deadline", "fallback",
                             "envelope", "escalation", "outcome", "resolved_at"]
    assert [FiringRow.from_dict(wire[0]), InboxRow.from_dict(wire[1])] == [firing, entry]
