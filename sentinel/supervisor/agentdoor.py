"""The agent door: an agent's own Linux user chats with its agent through the supervisor
(`sudo -u AGENT sentinel chat`), never through a Muzzle or a database of its own.

    /run/sentinel-agent/agent.sock     0666; who is calling comes from the kernel (SO_PEERCRED)

Why through the supervisor: the turns run as supervised runs (a worker under Leash, whose model calls go
through the system Muzzle on the port the agent's egress rules allow, holding no upstream key), and the
approvals are rows in the supervisor's root-only database, which nothing running as the agent can write.
A local-mode chat would keep both in the agent's own account, and its in-process Muzzle would run as
the agent's uid, which the egress rules let reach no upstream.

Who may call: a registered agent's own user, from outside any sandbox (no_new_privs clear). Every
tool and worker runs with no_new_privs set, so whatever the agent runs can neither start a session
here nor answer an approval; what is left is a person who became the agent's user at a terminal
(`sudo -u AGENT`, `runuser -u AGENT`), answering y/N in the chat.

What they may do: their own chat sessions only, the ones started through this door by the same user:
start (chat only, as their own agent, in its own workspace), send, interrupt, resume, show, events, undo
(the chat's /undo: the restore runs as their own uid, as an operator's undo does), and the approvals of those
sessions (and of the runs under them that execute as their own uid: nothing under a door session may run as
another user, doorscope.py). An operator's run of the agent
(`sudo sentinel run ... --agent AGENT`) and its approvals stay the operator's.
"""

from __future__ import annotations

from sentinel.engine.store import Store
from sentinel.errors import NotFound, UsageError
from sentinel.frames import failure, reply
from sentinel.jsontypes import JSON, JSONObject
from sentinel.supervisor import doorscope, layout, ops, registry
from sentinel.supervisor.auth import Peer
from sentinel.supervisor.hub import Client, Hub

DOOR = doorscope.DOOR
OWN_RUN = ("send", "interrupt", "resume", "show", "events", "undo")


def agent_of(store: Store, peer: Peer) -> str | None:
    """The registered agent whose own user `peer` is (name and uid both match), if any."""
    for agent in registry.all_agents(store):
        if agent.user == peer.name and agent.uid == peer.uid:
            return agent.name
    return None


def handle(sup: Hub, conn: Client, msg: JSONObject) -> ops.Reply:
    peer, op = conn.peer, msg.get("op")
    refusal = _refusal(peer)
    if refusal is None and op not in HANDLERS:
        refusal = f"{str(op)[:64]!r} is for operators; an agent's own user may only chat with its agent here"
    if refusal is not None:
        sup.store.audit("agent_door_refused", {"op": str(op)[:64], "uid": peer.uid if peer else None,
                                               "user": peer.name if peer else None})
        return failure("denied", refusal)
    assert peer is not None and peer.agent is not None and isinstance(op, str)
    return ops.answer(HANDLERS[op], sup, conn, msg)


def _refusal(peer: Peer | None) -> str | None:
    if peer is None:
        return "permission denied: unknown peer"
    if peer.sandboxed:
        return (f"permission denied: {peer.name} (uid {peer.uid}) runs inside a sandbox (no_new_privs): "
                "whatever an agent runs never talks to the agent door")
    if peer.agent is None:
        return (f"permission denied: {peer.name} (uid {peer.uid}) is no registered agent's user; the agent door "
                "is for `sudo -u AGENT sentinel chat`")
    return None


# -- what is theirs ---------------------------------------------------------------------------------

def mine(store: Store, peer: Peer, run_id: str) -> bool:
    """Whether the run is (under) a chat session this user started through the door, and executes as this
    user's own uid: a run as another user is never theirs, whichever session it sits under."""
    opener = doorscope.door_opener(store, run_id)
    if opener is None or opener.uid != peer.uid or opener.agent != peer.agent or peer.agent is None:
        return False
    return doorscope.runs_as(store, store.get_run(run_id), peer.uid, peer.agent)


def _own_run(store: Store, peer: Peer, run_id: JSON) -> None:
    if not isinstance(run_id, str) or not run_id:
        raise UsageError("run_id: must be given")
    store.get_run(run_id)  # NotFound for an id that names nothing
    if not mine(store, peer, run_id):
        raise NotFound(f"run {run_id} is not one of your chat sessions (an operator's runs, and runs as "
                       "another user, are an operator's: sudo sentinel show / approve)")


# -- the operations -----------------------------------------------------------------------------------

def _start(sup: Hub, conn: Client, msg: JSONObject) -> ops.Reply:
    peer = conn.peer
    assert peer is not None
    agent = msg.get("agent") or peer.agent
    if not isinstance(agent, str) or agent.partition("/")[0] != peer.agent:
        raise UsageError(f"--agent: you chat as {peer.agent} only (or one of its profiles, {peer.agent}/NAME)")
    if not msg.get("chat"):
        raise UsageError("through the agent door only chat sessions start (sentinel chat)")
    if msg.get("workspace") or msg.get("hook"):
        raise UsageError("a chat through the agent door works in the agent's own workspace")
    return ops.start(sup, conn, {**msg, "agent": agent}, door=DOOR)


def _own(handler: ops.Handler) -> ops.Handler:
    def checked(sup: Hub, conn: Client, msg: JSONObject) -> ops.Reply:
        assert conn.peer is not None
        _own_run(sup.store, conn.peer, msg.get("run_id"))
        return handler(sup, conn, msg)

    return checked


def _resolve(handler: ops.Handler) -> ops.Handler:
    """approve / deny: only an approval of a session this user started here."""
    def checked(sup: Hub, conn: Client, msg: JSONObject) -> ops.Reply:
        assert conn.peer is not None
        ident = msg.get("ident")
        if not isinstance(ident, str):
            raise UsageError("ident: must be a string")
        approval = sup.store.get_approval(sup.store.approval_id(ident))
        if not mine(sup.store, conn.peer, approval.run_id):
            raise NotFound(f"no approval {ident} of your chat sessions (an operator's run, or a run as another "
                           "user, is approved by an operator: sudo sentinel approve)")
        return handler(sup, conn, msg)

    return checked


def _sessions(sup: Hub, conn: Client, msg: JSONObject) -> ops.Reply:
    assert conn.peer is not None
    rows = [r.to_dict() for r in sup.store.list_sessions() if mine(sup.store, conn.peer, r.id)]
    return reply(rows[:ops.MAX_ROWS])


def _approvals(sup: Hub, conn: Client, msg: JSONObject) -> ops.Reply:
    assert conn.peer is not None
    store, peer = sup.store, conn.peer
    return reply([{**a.public(), "parents": store.parent_chain(a.run_id)}
                  for a in store.pending_approvals() if mine(store, peer, a.run_id)])


def _catalog(sup: Hub, conn: Client, msg: JSONObject) -> ops.Reply:
    """The operators' catalog of this agent, naming no other agent: nothing here may run as another user."""
    peer = conn.peer
    assert peer is not None
    answer = ops.OPS["catalog"](sup, conn, {**msg, "agent": peer.agent})
    if answer is not None and answer.get("ok"):
        result = answer["result"]
        result["agents"] = [a for a in result["agents"] if str(a["name"]).partition("/")[0] == peer.agent]
    return answer


def _status(sup: Hub, conn: Client, msg: JSONObject) -> ops.Reply:
    assert conn.peer is not None
    store, peer = sup.store, conn.peer
    return reply({"mode": "system", "door": DOOR, "you": peer.name, "agent": peer.agent,
                  "socket": str(layout.agent_socket_path()),
                  "pending_approvals": sum(1 for a in store.pending_approvals() if mine(store, peer, a.run_id))})


HANDLERS: dict[str, ops.Handler] = {
    "start": _start, "sessions": _sessions, "pending": _approvals, "catalog": _catalog, "status": _status,
    "approve": _resolve(ops.OPS["approve"]), "deny": _resolve(ops.OPS["deny"]),
    **{op: _own(ops.OPS[op]) for op in OWN_RUN},
}
