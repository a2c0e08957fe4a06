"""The agents system mode knows: created by `sentinel setup` or registered by `sentinel init --leash`.

Only a registered agent's user can run a worker. An agent is its Linux user; its head profile has the
same name. `--agent USER/PROFILE` names another profile in that user's ~/.sentinel/agents/.
"""

from __future__ import annotations

import pwd
import time
from dataclasses import dataclass

from sentinel.agents.profile import NAME
from sentinel.engine.store import Store
from sentinel.errors import NotFound, UsageError

DEFAULT_KEY = "default_agent"


@dataclass(frozen=True)
class Agent:
    name: str
    display_name: str
    user: str
    uid: int | None
    home: str
    origin: str
    created_at: float

    def public(self) -> dict[str, object]:
        return {"name": self.name, "display_name": self.display_name, "user": self.user, "uid": self.uid,
                "home": self.home, "origin": self.origin}


def register(store: Store, name: str, display_name: str, *, home: str, origin: str, uid: int | None = None) -> None:
    """Record an agent (idempotent; the first origin and creation time stay)."""
    store.conn.execute(
        "INSERT INTO agents (name, display_name, user, uid, home, origin, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (name) DO UPDATE SET uid=COALESCE(excluded.uid, agents.uid), display_name=excluded.display_name,"
        " home=excluded.home", (name, display_name, name, uid, home, origin, time.time()))


def get(store: Store, name: str) -> Agent | None:
    row = store.conn.execute("SELECT * FROM agents WHERE name=?", (name,)).fetchone()
    return Agent(**dict(row)) if row else None


def all_agents(store: Store) -> list[Agent]:
    return [Agent(**dict(r)) for r in store.conn.execute("SELECT * FROM agents ORDER BY created_at")]


def set_default(store: Store, name: str) -> None:
    store.conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                       (DEFAULT_KEY, name))


def default(store: Store) -> str | None:
    row = store.conn.execute("SELECT value FROM meta WHERE key=?", (DEFAULT_KEY,)).fetchone()
    return row[0] if row else None


def resolve(store: Store, ident: str | None) -> tuple[Agent, str]:
    """(agent, profile name) for `--agent` (None: the default agent)."""
    ident = ident or default(store)
    if not ident:
        raise UsageError("no agent given and no default agent: run `sentinel setup` first, or pass --agent")
    user, _, profile = ident.partition("/")
    profile = profile or user
    if not NAME.match(profile):
        raise UsageError(f"--agent: {profile!r} is not a valid agent name")
    agent = get(store, user)
    if agent is None:
        known = ", ".join(a.name for a in all_agents(store)) or "none yet; run `sentinel setup`"
        raise NotFound(f"--agent: no system agent {user!r} (registered: {known})")
    return agent, profile


def account(agent: Agent, operator_group: str) -> pwd.struct_passwd:
    """The agent's Linux account, checked again at every spawn: it exists, is unprivileged, is no operator."""
    from sentinel.supervisor.auth import is_operator

    try:
        pw = pwd.getpwnam(agent.user)
    except KeyError:
        raise UsageError(f"agent {agent.name!r}: Linux user {agent.user!r} no longer exists") from None
    if pw.pw_uid == 0 or pw.pw_gid == 0:
        raise UsageError(f"agent {agent.name!r}: user {agent.user!r} is privileged (uid or gid 0); refusing")
    if agent.uid is not None and pw.pw_uid != agent.uid:
        raise UsageError(f"agent {agent.name!r}: user {agent.user!r} has uid {pw.pw_uid}, registered as {agent.uid}")
    if is_operator(pw.pw_uid, pw.pw_name, operator_group):
        raise UsageError(f"agent {agent.name!r}: user {agent.user!r} is an operator (group {operator_group}); "
                         "an agent may never approve its own actions")
    return pw
