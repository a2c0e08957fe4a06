"""The child ops of the worker channel, attacked without root: a worker cannot start a child run for a call
that was not decided and approved as that delegation, cannot skip the operator's approval by claiming its
call was `auto`, and cannot advance (launch) a run that is not its own child."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from sentinel.config import Config
from sentinel.engine.store import Store
from sentinel.supervisor import children
from sentinel.supervisor.hub import Settings
from sentinel.supervisor.workers import Worker

PLAN = {"agent": "writer", "task": "t", "model": "fake/m", "grants": ["read_file"]}


@dataclass
class FakeHub:
    store: Store
    config: Config = field(default_factory=Config)
    settings: Settings = field(default_factory=Settings)
    workers: dict = field(default_factory=dict)
    launched: list = field(default_factory=list)

    def launch(self, run_id):
        self.launched.append(run_id)


@pytest.fixture
def hub(tmp_path):
    store = Store.open(tmp_path / "sup.db")
    for run_id in ("r-mine", "r-other"):
        store.create_run(run_id, agent="a", task="t", model="fake/m", workspace=tmp_path, run_dir=tmp_path / run_id)
    store.create_run("r-kid", agent="w", task="t", model="fake/m", workspace=tmp_path, run_dir=tmp_path / "k",
                     parent_id="r-other", call_id="c1", depth=1, grants=["read_file"])
    yield FakeHub(store)
    store.close()


def ask(hub, worker, op, **args):
    return children.handle(hub, worker, {"op": op, **args})


def decide(hub, outcome, call_id="c1"):
    hub.store.record_decision("r-mine", call_id, {"tool": "delegate", "arguments": PLAN, "outcome": outcome,
                                                  "reason": "r", "layers": []})


def test_no_child_for_a_call_never_decided_as_a_delegation(hub, worker):
    answer = ask(hub, worker, "child_start", call_id="c1")
    assert answer["kind"] == "denied" and hub.launched == [] and hub.store.children("r-mine") == []


def test_no_child_before_the_approval_was_consumed_for_exactly_that_plan(hub, worker):
    decide(hub, "needs_approval")
    approval = hub.store.submit_approval("r-mine", "c1", "delegate", PLAN, "needs approval")
    assert ask(hub, worker, "child_start", call_id="c1")["kind"] == "denied"  # pending
    hub.store.resolve(approval.id, True, "root")
    assert ask(hub, worker, "child_start", call_id="c1")["kind"] == "denied"  # approved, never consumed
    assert hub.launched == [] and hub.store.children("r-mine") == []


def test_a_worker_claiming_auto_does_not_skip_the_operators_approval(hub, worker):
    decide(hub, "auto")
    answer = ask(hub, worker, "child_start", call_id="c1")
    assert answer["kind"] == "denied" and "approval" in answer["error"] and hub.launched == []


def test_a_worker_cannot_launch_a_run_that_is_not_its_child(hub, worker):
    hub.store.set_status("r-kid", "interrupted")
    answer = ask(hub, worker, "child_advance", child_id="r-kid")
    assert answer["kind"] == "denied" and hub.launched == []


SPAWN = {"agent": "(temporary subagent)", "task": "t", "soul": "s", "model": "fake/m", "skills": [],
         "grants": ["read_file"]}
FLOW = {"workflow": "w", "input": "i", "steps": [{"name": "a", "agent": "a", "task": "t"}], "grants": ["read_file"]}


@pytest.mark.parametrize("tool, plan", [("spawn", SPAWN), ("run_workflow", FLOW)])
def test_spawn_and_run_workflow_need_the_operators_approval_whatever_the_worker_claims(hub, worker, tool, plan):
    hub.store.record_decision("r-mine", "c1", {"tool": tool, "arguments": plan, "outcome": "auto", "reason": "r",
                                               "layers": []})
    answer = ask(hub, worker, "child_start", call_id="c1")
    assert answer["kind"] == "denied" and "approval" in answer["error"] and hub.launched == []
    approval = hub.store.submit_approval("r-mine", "c2", tool, {**plan, "grants": []}, "needs approval")
    hub.store.record_decision("r-mine", "c2", {"tool": tool, "arguments": plan, "outcome": "needs_approval",
                                               "reason": "r", "layers": []})
    hub.store.resolve(approval.id, True, "root")
    assert hub.store.consume(approval.id, approval.digest)
    answer = ask(hub, worker, "child_start", call_id="c2")  # approved for other grants than the recorded plan
    assert answer["kind"] == "denied" and hub.launched == [] and hub.store.children("r-mine") == []


def test_a_child_worker_lying_about_its_grants_cannot_spawn_with_more(hub, worker):
    kid = Worker("r-kid", worker.agent, 1234, "/home/a", spawned=None)  # type: ignore[arg-type]
    answer = ask(hub, kid, "child_plan", tool="spawn", arguments={"task": "t", "soul": "s",
                                                                  "tools": ["read_file", "bash"]},
                 granted=["read_file", "bash"])  # its parent granted it read_file only (the store says so)
    assert answer["ok"] is False and "not granted bash" in answer["error"]
