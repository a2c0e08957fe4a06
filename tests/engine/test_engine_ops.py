"""Each engine operation is declared once (sentinel/engine/operations.py) and executed twice: every declared
operation has a client method, a supervisor handler and a local method that take its fields, under its name."""

from __future__ import annotations

import inspect

import pytest

from sentinel.client.remote import SystemEngine
from sentinel.engine import api, operations
from sentinel.errors import UsageError
from sentinel.local.engine import LocalEngine
from sentinel.supervisor import ops

DECLARED = sorted(operations.OPERATIONS)
GROUPS = {"runs": api.RunEngine, "approvals": api.ApprovalEngine, "agents": api.AgentEngine,
          "watchers": api.WatcherEngine, "admin": api.AdminEngine}


def _parameters(cls: type, name: str) -> set[str]:
    return set(inspect.signature(getattr(cls, name)).parameters) - {"self"}


@pytest.mark.parametrize("name", DECLARED)
def test_every_declared_operation_has_its_three_executions(name):
    declared = operations.OPERATIONS[name]
    fields = {spec.name for spec in declared.specs} - set(operations.wire_only(declared))
    assert name in ops.OPS, f"no supervisor handler for {name}"
    for engine in (SystemEngine, LocalEngine, GROUPS[declared.group]):
        assert callable(getattr(engine, name, None)), f"{engine.__name__} has no method {name}"
        assert fields <= _parameters(engine, name), f"{engine.__name__}.{name} does not take {fields}"


def test_every_engine_method_is_a_declared_operation_or_says_why_not():
    """A method added to the protocol without its declaration would reach the supervisor under no name."""
    local_only = {"roster"}  # derived from `status` on the client; nothing to send
    methods = {n for group in GROUPS.values() for n, member in vars(group).items()
               if callable(member) and not n.startswith("_")}
    assert methods - local_only == set(DECLARED)


def test_the_supervisor_accepts_only_declared_names_and_its_own_hook_ops():
    from sentinel.supervisor import hookasks

    assert set(ops.OPS) == set(DECLARED) | set(hookasks.OPS)


def test_a_request_round_trips_through_its_frame_and_a_bad_field_names_itself():
    request = operations.Approve(ident="a-1", digest="d", follow=True, always=True)
    frame = operations.encode(request)
    assert frame["op"] == "approve" and operations.decode(operations.Approve, frame) == request
    with pytest.raises(UsageError, match=r"^always: must be true or false"):
        operations.decode(operations.Approve, {**frame, "always": "yes"})
    with pytest.raises(UsageError, match=r"^ident: must be a string \(missing\)$"):
        operations.decode(operations.Approve, {"op": "approve"})


def test_a_field_of_a_type_no_frame_carries_is_refused_when_declared():
    with pytest.raises(TypeError, match="no field type a frame carries"):
        @operations.operation("bogus", "runs")
        class Bogus(operations.Operation[None]):
            when: set[str]
    assert "bogus" not in operations.OPERATIONS


def test_a_request_is_a_frozen_keyword_only_value():
    request = operations.Start(task="t")
    assert request.skills == [] and request.skills is not operations.Start(task="t").skills  # a fresh list each
    assert request == operations.Start(task="t", skills=[]) and request != operations.Start(task="u")
    with pytest.raises(AttributeError):
        request.task = "other"  # type: ignore[misc]
    with pytest.raises(TypeError, match="no field tsk"):
        operations.Start(task="t", tsk="x")  # type: ignore[call-arg]
