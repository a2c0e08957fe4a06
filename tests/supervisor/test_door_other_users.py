"""A door user decides only for its own uid: under a chat session an agent's own user started at the agent door,
nothing runs as another Linux user. A delegation to another agent, or a workflow naming one in any step, is
refused when planned (the model reads why) and again when a child would be made; the door's show, approve and
resume never reach a run as another user. A delegation to a profile of its own agent still works."""

from __future__ import annotations

import json
import os
import pwd
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from sentinel.config import Config
from sentinel.engine.store import Store
from sentinel.errors import NotFound
from sentinel.supervisor import agentdoor, children, doorscope, ops, registry
from sentinel.supervisor.auth import Peer
from sentinel.supervisor.hub import Settings
from sentinel.supervisor.workers import Worker
from sentinel.tools import ToolError
from sx_helpers import as_user, serve_model, write_as
from test_agent_door import _door, door_call

A_UID, B_UID = 4101, 4102


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
    """Agents a and b (two users); r-door: a chat a's user started at the agent door; r-op: an operator's run of a."""
    store = Store.open(tmp_path / "sup.db")
    registry.register(store, "a", "A", home="/home/a", origin="setup", uid=A_UID)
    registry.register(store, "b", "B", home="/home/b", origin="setup", uid=B_UID)
    for run_id, started in (("r-door", {"by": "a", "uid": A_UID, "door": "agent"}),
                            ("r-op", {"by": "root", "uid": 0, "door": "operator"})):
        store.create_run(run_id, agent="a", task="t", model="fake/m", workspace=tmp_path, run_dir=tmp_path / run_id,
                         kind="chat")
        store.conn.execute("UPDATE runs SET user='a' WHERE id=?", (run_id,))
        store.audit("run_started", {"run_id": run_id, "agent": "a", "profile": "a", **started})
    yield FakeHub(store)
    store.close()


def door_peer(uid=A_UID, agent="a"):
    return Peer(1, uid, uid, agent, operator=False, door="agent", agent=agent)


def _child(store, tmp_path, run_id, parent, user, kind="task"):
    store.create_run(run_id, agent=user or "workflow:w", task="t", model="fake/m", workspace=tmp_path, run_dir=tmp_path / run_id,
                     parent_id=parent, call_id=f"c-{run_id}", depth=1, kind=kind)
    if user:
        store.conn.execute("UPDATE runs SET user=? WHERE id=?", (user, run_id))


def test_a_delegation_to_another_user_under_a_door_session_is_refused_when_planned(hub):
    worker = Worker("r-door", registry.get(hub.store, "a"), A_UID, "/home/a", spawned=None)  # type: ignore[arg-type]
    for ident in ("b", "b/writer"):
        answer = children.handle(hub, worker, {"op": "child_plan", "tool": "delegate",
                                               "arguments": {"agent": ident, "task": "read it"}, "granted": ["bash"]})
        assert answer["ok"] is False and "runs as Linux user b" in answer["error"], answer
        assert "ask an operator" in answer["error"]
    refused = [r for r in hub.store.audit_records() if r["kind"] == "door_cross_user_refused"]
    assert [(r["run_id"], r["agent"], r["door_uid"]) for r in refused] == [("r-door", "b", A_UID)] * 2


def test_no_child_as_another_user_is_made_under_a_door_session_whichever_path_asks(hub, tmp_path):
    """The last line, below every planner: a workflow step (Steps.start_step) or a plan made before this rule
    (children.create) never makes a run as another user under a door session, also deeper down."""
    _child(hub.store, tmp_path, "r-flow", "r-door", None, kind="workflow")
    for parent in ("r-door", "r-flow"):
        with pytest.raises(ToolError, match="runs as Linux user b"):
            children.create(hub, parent, "c9", {"agent": "b", "task": "t", "model": "fake/m", "grants": []})
    run = type("R", (), {"id": "r-flow"})()
    with pytest.raises(ToolError, match="runs as Linux user b"):
        children.Steps(hub).start_step(run, "step:x", "b", "t")  # type: ignore[arg-type]
    assert hub.launched == []
    assert [r["id"] for r in hub.store.children("r-door")] == ["r-flow"]


def test_an_operators_session_may_still_delegate_to_another_user(hub):
    """The rule is the door's: an operator's run of agent a delegates to b as before (an operator approves)."""
    doorscope.check_runs_as(hub.store, "r-op", registry.get(hub.store, "b"))
    doorscope.check_runs_as(hub.store, "r-door", registry.get(hub.store, "a"))  # its own agent (any profile)


def test_the_door_shows_approves_and_resumes_only_runs_as_its_own_uid(hub, tmp_path):
    store = hub.store
    _child(store, tmp_path, "r-mine", "r-door", "a")
    _child(store, tmp_path, "r-theirs", "r-door", "b")  # made before this rule, or by any other path
    _child(store, tmp_path, "r-flow", "r-door", None, kind="workflow")
    peer = door_peer()
    assert [agentdoor.mine(store, peer, r) for r in ("r-door", "r-mine", "r-flow")] == [True] * 3
    assert not agentdoor.mine(store, peer, "r-theirs")
    assert not agentdoor.mine(store, peer, "r-op")
    assert not agentdoor.mine(store, door_peer(B_UID, "b"), "r-theirs")  # b's user never started this session
    conn = type("Conn", (), {"peer": peer})()
    for op in agentdoor.OWN_RUN:  # send, interrupt, resume, show, logs
        with pytest.raises(NotFound, match="not one of your chat sessions"):
            agentdoor.HANDLERS[op](hub, conn, {"run_id": "r-theirs"})
    approval = store.submit_approval("r-theirs", "c1", "bash", {"command": "cat secret"}, "asks")
    for op in ("approve", "deny"):
        with pytest.raises(NotFound, match="approved by an operator"):
            agentdoor.HANDLERS[op](hub, conn, {"ident": approval.id})
    assert store.get_approval(approval.id).status == "pending" and hub.launched == []
    assert agentdoor.HANDLERS["pending"](hub, conn, {})["result"] == []


CODE = "ab" * 32


@pytest.mark.parametrize("tool", ["my_tool", "mcp__files__read"])  # an agent-authored tool; an unpinned MCP listing
def test_a_door_approval_runs_the_call_once_and_trusts_no_code(hub, tool):
    """Trust in code is an operator's to give (sentinel/agents/trust.py): a door user's approval of its own
    session's call lets that call run, and neither its later sessions nor an operator's runs of the agent treat
    the code as trusted. The operator's approval of the same call still records it."""
    store = hub.store
    door = type("Conn", (), {"peer": door_peer()})()
    asked = store.submit_approval("r-door", "c1", tool, {"x": 1}, "untrusted code", code={"f": "t"},
                                  code_sha256=CODE)
    agentdoor.HANDLERS["approve"](hub, door, {"ident": asked.id})
    assert store.get_approval(asked.id).status == "approved"
    assert not store.tool_trusted("r-op", tool, CODE) and not store.tool_trusted("r-door", tool, CODE)
    operator = type("Conn", (), {"peer": Peer(1, 0, 0, "root", operator=True)})()
    again = store.submit_approval("r-op", "c2", tool, {"x": 1}, "untrusted code", code={"f": "t"}, code_sha256=CODE)
    ops.OPS["approve"](hub, operator, {"ident": again.id})
    assert store.tool_trusted("r-op", tool, CODE) and store.tool_trusted("r-door", tool, CODE)

# -- the attack and its neighbours, as root against a real supervisor ----------------------------------------

def _profile(user: str, profile: str, **fields) -> None:
    path = Path(pwd.getpwnam(user).pw_dir) / ".sentinel" / "agents" / f"{profile}.yaml"
    write_as(user, path, yaml.safe_dump({"name": profile, "soul": "default", **fields}))


def _call(tool: str, **arguments) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def _serve(system, head, child) -> None:
    serve_model(system.etc, head, {"providers": {"fake": {"base_url": head.base_url},
                                                 "fake2": {"base_url": child.base_url}},
                                   "system": {"models": ["fake/*", "fake2/*"]}})


def _chat(system, user: str, text: str):
    return as_user(user, sys.executable, "-m", "sentinel", "chat", input=text,
                   env={"SENTINEL_AGENT_SOCKET": str(_door(system))})


def _tool_results(server) -> list[str]:
    return [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool"]


def _secret(user: str) -> Path:
    path = Path(pwd.getpwnam(user).pw_dir) / "secret.txt"
    write_as(user, path, "ONLY-B-READS-THIS\n")
    os.chmod(path, 0o600)
    return path


def _runs(sentinel_cmd) -> list[dict]:
    return json.loads(sentinel_cmd("runs", "--json", check=0).stdout)


def _audit(system) -> list[dict]:
    from sentinel.supervisor import layout

    with Store.open(layout.db_path(system.state)) as store:
        return store.audit_records()


@pytest.mark.root
def test_a_door_session_that_delegates_to_another_agent_is_refused(system, make_agent, supervisor,
                                                                    scripted_server, sentinel_cmd):
    """A's user at the door, A's model delegates to B, A's user would answer y: B's bash (reading B's 0600 file)
    never runs, the model reads why, and the chat goes on."""
    a, b = make_agent(), make_agent()
    secret = _secret(b)
    head = scripted_server([_call("delegate", agent=b, task=f"cat {secret}"), "Boss done.", "Still here."])
    child = scripted_server([_call("bash", command=f"cat {secret}"), "Writer done."])
    _serve(system, head, child)
    _profile(a, a, model="fake/m", tools=["delegate", "read_file"])
    _profile(b, b, model="fake2/m", tools=["bash", "read_file"])
    supervisor()
    out = _chat(system, a, "go\ny\n")  # the `y` would approve the delegation, were it ever asked
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "Boss done.", (out.stdout, out.stderr)
    assert child.requests == []  # B's model was never asked: no run as B ever started
    assert not [r for r in _runs(sentinel_cmd) if r.get("parent_id")]
    [refusal] = {t for t in _tool_results(head) if "refused" in t}  # each request carries the history
    assert f"runs as Linux user {b}" in refusal and "ask an operator" in refusal
    assert not any("ONLY-B-READS-THIS" in json.dumps(r) for r in head.requests)
    assert [r["agent"] for r in _audit(system) if r["kind"] == "door_cross_user_refused"] == [b]
    assert json.loads(sentinel_cmd("approvals", "--json", check=0).stdout) == []  # nothing left for anyone
    offered = door_call(a, _door(system), "call:catalog")["ok"]["agents"]  # the chat offers no other agent
    assert [x["name"] for x in offered] == [a]


def test_a_bare_name_of_its_own_profile_names_that_profile_never_another_user(hub, tmp_path):
    """The roster a delegating model is shown lists its own profiles by bare name; a registered agent of the same
    name is another Linux user, whom the plan (and an operator's approval) must not name by mistake."""
    home = tmp_path / "home-a"
    (home / ".sentinel" / "agents").mkdir(parents=True)
    (home / ".sentinel" / "agents" / "b.yaml").write_text("name: b\n")  # a profile of a, named like agent b
    (home / ".sentinel" / "agents" / "link.yaml").symlink_to(home / ".sentinel" / "agents" / "b.yaml")
    worker = Worker("r-op", registry.get(hub.store, "a"), os.getuid(), str(home), spawned=None)  # type: ignore[arg-type]
    assert children.own_profile(worker, "b") == "a/b"
    assert [children.own_profile(worker, n) for n in ("a", "b/b", "c", "link", "../b")] == ["a", "b/b", "c", "link",
                                                                                           "../b"]


@pytest.mark.root
@pytest.mark.parametrize("named", ["{a}/helper", "helper"])
def test_a_door_session_still_delegates_to_a_profile_of_its_own_agent(system, make_agent, supervisor,
                                                                       scripted_server, sentinel_cmd, named):
    a = make_agent()
    head = scripted_server([_call("delegate", agent=named.format(a=a), task="write hi to out.txt"), "Boss done."])
    child = scripted_server([_call("write_file", path="out.txt", content="hi\n"), "Helper done."])
    _serve(system, head, child)
    _profile(a, a, model="fake/m", tools=["delegate", "write_file"])
    _profile(a, "helper", model="fake2/m", tools=["write_file"])
    supervisor()
    out = _chat(system, a, "go\ny\n")  # y: the door user approves the delegation to its own profile
    assert out.returncode == 0 and out.stdout.strip().endswith("Boss done."), (out.stdout, out.stderr)
    pw = pwd.getpwnam(a)
    made = Path(pw.pw_dir) / ".sentinel" / "workspace" / "out.txt"
    assert made.read_text() == "hi\n" and made.stat().st_uid == pw.pw_uid
    [kid] = [r for r in _runs(sentinel_cmd) if r.get("parent_id")]
    assert kid["agent"] == "helper" and kid["status"] == "done"
    shown = json.loads(sentinel_cmd("show", kid["parent_id"], "--json", check=0).stdout)
    assert [d["arguments"]["agent"] for d in shown["decisions"] if d["tool"] == "delegate"] == [f"{a}/helper"]
    assert _tool_results(head)[-1] == "Helper done."
    resolved = [r for r in _audit(system) if r["kind"] == "approval_resolved"]
    assert [(r["by"], r["door"]) for r in resolved] == [(a, "agent")]


@pytest.mark.root
def test_a_door_sessions_workflow_naming_another_agent_is_refused_before_any_step(system, make_agent, supervisor,
                                                                                 scripted_server, sentinel_cmd):
    """Its first step names the door's own agent, its second another: refused whole when planned, so not even
    the first step runs."""
    a, b = make_agent(), make_agent()
    head = scripted_server([_call("run_workflow", name="flow", input="x"), "Boss done.", "Still here."])
    child = scripted_server(["Step done.", "Step done."])
    _serve(system, head, child)
    _profile(a, a, model="fake/m", tools=["run_workflow", "read_file"])
    _profile(a, "helper", model="fake2/m", tools=["read_file"])
    _profile(b, b, model="fake2/m", tools=["read_file"])
    flow = {"steps": [{"name": "mine", "agent": f"{a}/helper", "task": "look at {{input}}"},
                      {"name": "theirs", "agent": b, "task": "then {{previous}}"}]}
    write_as(a, Path(pwd.getpwnam(a).pw_dir) / ".sentinel" / "workflows" / "flow.yaml", yaml.safe_dump(flow))
    supervisor()
    out = _chat(system, a, "go\ny\n")
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "Boss done.", (out.stdout, out.stderr)
    assert child.requests == [] and not [r for r in _runs(sentinel_cmd) if r.get("parent_id")]
    [refusal] = {t for t in _tool_results(head) if "refused" in t}
    assert f"runs as Linux user {b}" in refusal
