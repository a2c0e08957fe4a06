"""The supervisor itself on the operator socket: `status` (what it knows; without a reachable shared store,
what it knows without it), and the web console's sign-in (kept in the store: sentinel/supervisor/console.py)."""

from __future__ import annotations

from sentinel.engine import db, outbox
from sentinel.engine.operations import Status, WebSession, WebSignIn, WebToken
from sentinel.engine.store import Store
from sentinel.errors import SentinelError
from sentinel.frames import reply
from sentinel.jsontypes import JSONObject
from sentinel.supervisor import console, registry
from sentinel.supervisor.hub import Client, Hub
from sentinel.supervisor.ops.common import Reply


def status(sup: Hub, conn: Client, req: Status) -> Reply:
    """What the supervisor knows; with the shared store unreachable, what it knows without it, and that."""
    store = sup.store
    doc: dict[str, object] = {
        "mode": "system", "socket": str(sup.settings.socket_path), "state_dir": str(sup.settings.state_dir),
        "operator_group": sup.settings.group, "you": conn.peer.name if conn.peer else None,
        "store": _store_state(store), "sandbox": sup.config.sandbox, "resume_interrupted": sup.settings.resume,
        "default_model": sup.config.default_model, "muzzle": sup.muzzle_state(), "workers": sorted(sup.workers),
        "config": _config_state()}
    try:
        counts: dict[str, int] = {}
        for row in store.list_runs():
            counts[row.status] = counts.get(row.status, 0) + 1
        return reply(doc | {"default_agent": registry.default(store),
                            "agents": [a.name for a in registry.all_agents(store)], "runs": counts,
                            "pending_approvals": len(store.pending_approvals()), "model_hosts": _model_hosts(sup),
                            "unreadable": _unreadable(sup), "exposed": _exposed(sup), **_notify(sup)})
    except db.Unavailable as exc:
        return reply(doc | {"store": _store_state(store) | {"reachable": False, "error": str(exc)}})


def _config_state() -> str:
    """Whether the operator's config.yaml still loads: the supervisor runs on what it read when it started, and
    an edit that broke the file shows only at its next start unless status says so now."""
    from sentinel import config as config_mod
    from sentinel.supervisor import layout

    path = layout.etc_dir() / "config.yaml"
    try:
        config_mod.load(layout.etc_dir())
    except SentinelError as exc:
        return (f"BROKEN: {exc} (the supervisor runs on the config it read when it started; fix the file before "
                "it restarts)")
    return f"ok ({path})"


def _store_state(store: Store) -> JSONObject:
    if not store.shared:
        return {"backend": "sqlite", "host": store.host}
    return {"backend": "postgresql", "url": db.redact(str(store.path)), "host": store.host, "reachable": True}


def _unreadable(sup: Hub) -> list[str]:
    """Files a part of system mode (Muzzle, an agent's worker) cannot read, one line each."""
    from sentinel.supervisor import readable

    return readable.problems(sup.config, [a.user for a in registry.all_agents(sup.store)])


def _exposed(sup: Hub) -> list[str]:
    """Secrets an agent's user can read (it must not), one line each."""
    from sentinel.supervisor import readable

    return readable.exposed(sup.config, [a.user for a in registry.all_agents(sup.store)])


def _notify(sup: Hub) -> dict[str, object]:
    """The `notify:` targets of /etc/sentinel/config.yaml, each ok or failing (the watcher child delivers)."""
    if not sup.config.notify:
        return {}
    return {"notify": outbox.target_status(sup.store.conn, [t.label for t in sup.config.notify])}


def _model_hosts(sup: Hub) -> list[JSONObject]:
    """The `local/*` model hosts Muzzle runs (read from Muzzle's state directory)."""
    from sentinel.models.hosts import status as host_status
    from sentinel.muzzle.layout import system_layout

    return list(host_status(system_layout(sup.config).state_dir))


def web_token(sup: Hub, conn: Client, req: WebToken) -> Reply:
    return console.web_token(sup, conn, req.listening)


def web_sign_in(sup: Hub, conn: Client, req: WebSignIn) -> Reply:
    return console.web_sign_in(sup, conn, req.token, req.session_ttl_s)


def web_session(sup: Hub, conn: Client, req: WebSession) -> Reply:
    return console.web_session(sup, conn, req.secret)
