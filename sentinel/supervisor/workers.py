"""One worker per active run: spawning it as the agent's user, answering its channel, noticing its exit.

The channel is the supervisor's end of a socket pair whose other end is the worker's fd 0. A worker
may ask only about its own run (CHANNEL_OPS); each op checks the run id and that any approval it
names belongs to the run. There is no op that resolves an approval: only an operator on the
operator socket can approve or deny.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import urlparse

from sentinel.engine.store import TERMINAL, Store
from sentinel.errors import NotFound, SentinelError, UsageError
from sentinel.supervisor import layout, registry, spawn
from sentinel.supervisor.hub import Client
from sentinel.frames import failure, reply

if TYPE_CHECKING:
    from sentinel.config import Config

WORKER_STATUSES = ("running", "waiting_approval", "done", "failed")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


class Refused(SentinelError):
    pass


@dataclass
class Worker:
    run_id: str
    agent: registry.Agent
    uid: int
    home: str
    spawned: spawn.Spawned
    conn: Client | None = None
    pid: int | None = None
    error: str | None = None
    applied: list[str] = field(default_factory=list)
    relaunch: bool = False  # an approval of this run was resolved while this worker was still winding down


# -- spawning ---------------------------------------------------------------------------------------

def model_ports(config: "Config", extra: list[int]) -> list[int]:
    """TCP ports a worker may connect to: Muzzle's, plus any the operator allowed (root-side settings only:
    an agent's own config.yaml can never widen its worker's network rule)."""
    ports = [config.muzzle.port] if config.muzzle.enabled and config.muzzle.port else []
    url = muzzle_url(config)
    if url and urlparse(url).port:
        ports.append(urlparse(url).port)
    return sorted(set(ports + list(extra)))


def muzzle_url(config: "Config") -> str | None:
    """Where workers reach their model: SENTINEL_MUZZLE_URL, or the system Muzzle (`sentinel muzzle serve
    --system`, running as its own user with the credentials) when it answers on its configured port."""
    url = os.environ.get("SENTINEL_MUZZLE_URL")
    if url or not config.muzzle.enabled:
        return url
    import urllib.request

    base = f"http://{config.muzzle.host}:{config.muzzle.port}"
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=0.5) as resp:
            return f"{base}/v1" if resp.status == 200 else None
    except OSError:
        return None


def worker_env(run_id: str, pw: Any, token: str | None, url: str | None = None) -> dict[str, str]:
    home = Path(pw.pw_dir)
    env = {"HOME": str(home), "USER": pw.pw_name, "LOGNAME": pw.pw_name, "PATH": DEFAULT_PATH,
           "LANG": "C.UTF-8", "SENTINEL_HOME": str(layout.agent_sentinel_home(home)),
           "TMPDIR": str(layout.agent_sentinel_home(home) / "tmp"), "SENTINEL_SUPERVISOR_FD": "0",
           "SENTINEL_RUN_ID": run_id, "PYTHONDONTWRITEBYTECODE": "1"}
    if url and token:
        env |= {"SENTINEL_MODEL_BASE_URL": url, "SENTINEL_MODEL_TOKEN": token}
    return env


def worker_launch(run_id: str, row: dict[str, Any], pw: Any, config: "Config", ports: list[int],
                  channel_fd: int, log_fd: int, token: str | None, url: str | None = None) -> spawn.Launch:
    from sentinel.leash import policy as leash_policy
    from sentinel.leash.profile import worker_profile

    home = Path(pw.pw_dir)
    sentinel_home = layout.agent_sentinel_home(home)
    policy_dir = layout.etc_dir() / "leash"
    pol = leash_policy.load(leash_policy.policy_path(pw.pw_name, system=True, policy_dir=policy_dir))
    workspace = Path(row["workspace"]) if row.get("workspace") else sentinel_home / "workspace"
    proxy = (config.leash.proxy_host, config.leash.proxy_port)
    prof = worker_profile(sentinel_home, workspace, pol, muzzle_port=ports[0] if ports else proxy[1], proxy=proxy)
    prof.tcp_connect = sorted(set(prof.tcp_connect) | set(ports))
    env = worker_env(run_id, pw, token, url)
    return spawn.Launch([sys.executable, "-m", "sentinel.worker", run_id], env,
                        pw.pw_uid, pw.pw_gid, str(home), prof, (channel_fd, log_fd, log_fd), sandbox=config.sandbox,
                        name=f"sentinel-{run_id}")


def start(store: Store, state_dir: Path, run_id: str, config: "Config", ports: list[int],
          group: str) -> tuple[Worker, socket.socket]:
    """Spawn the worker of a run; returns it and the supervisor's end of its channel."""
    row = store.get_run(run_id)
    agent = registry.get(store, row.get("user") or "")
    if agent is None:
        raise UsageError(f"run {run_id} belongs to no registered system agent")
    pw = registry.account(agent, group)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    logs = state_dir / "logs"
    logs.mkdir(mode=0o700, exist_ok=True)
    log_fd = os.open(logs / f"{run_id}.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                     0o600)
    try:
        url = muzzle_url(config)
        token = _muzzle_token(agent.name, run_id, row.get("model"), url, config)
        launch = worker_launch(run_id, row, pw, config, ports, theirs.fileno(), log_fd, token, url)
        spawned = spawn.spawn(launch)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
        os.close(log_fd)
    return Worker(run_id, agent, pw.pw_uid, pw.pw_dir, spawned, applied=spawned.applied), ours


def _muzzle_token(agent: str, run_id: str, model: str | None, url: str | None, config: "Config") -> str | None:
    """A per-run token for the system Muzzle workers use (none when there is no system Muzzle)."""
    if not url:
        return None
    from sentinel.muzzle import issue_token
    from sentinel.muzzle.layout import system_layout

    models = [model, *system_judge_models(config)] if model else ["*"]
    return issue_token(agent, run_id, models, config.muzzle.token_ttl_s, config.muzzle.budgets,
                       store=system_layout(config).store_path)


def system_judge_models(config: "Config") -> list[str]:
    """Models the operator's rules (/etc/sentinel/rules) judge with: the run's token must allow them, since
    the worker's judge calls go through Muzzle too. An agent's own rules cannot widen its token."""
    from sentinel.policy.gate import RuleGate
    from sentinel.policy.gate.loader import system_rules_dir

    rules = system_rules_dir(str(layout.etc_dir() / "rules"))
    if rules is None or not config.gate.enabled:
        return []
    return RuleGate.for_sentinel(layout.etc_dir(), config.gate, config, system_rules=rules).judge_models()


# -- the channel ------------------------------------------------------------------------------------

def handle(store: Store, worker: Worker, msg: dict[str, Any], relay: Callable[[str, dict], None]) -> dict | None:
    """Answer one frame from a worker (None for one-way frames). Anything not listed is refused."""
    op = msg.get("op")
    if op == "event":
        event = msg.get("event")
        if isinstance(event, dict):
            relay(worker.run_id, event)
        return None
    fn = CHANNEL_OPS.get(op) if isinstance(op, str) else None
    if fn is None:
        store.audit("worker_refused", {"run_id": worker.run_id, "op": str(op)[:64], "agent": worker.agent.name})
        return failure("denied", f"a worker may not {op!r}")
    try:
        return reply(fn(store, worker, msg))
    except Refused as exc:
        store.audit("worker_refused", {"run_id": worker.run_id, "op": op, "reason": str(exc)})
        return failure("denied", str(exc))
    except NotFound as exc:
        return failure("not_found", str(exc))
    except (UsageError, KeyError, TypeError, ValueError) as exc:
        return failure("usage", f"bad {op} request: {exc}")


def _own(worker: Worker, msg: dict[str, Any]) -> str:
    run_id = msg.get("run_id", worker.run_id)
    if run_id != worker.run_id:
        raise Refused(f"worker of run {worker.run_id} may not touch run {run_id}")
    return run_id


def _own_approval(store: Store, worker: Worker, approval_id: str) -> Any:
    approval = store.get_approval(str(approval_id))
    if approval.run_id != worker.run_id:
        raise NotFound(f"no approval {approval_id!r}")
    return approval


def _hello(store: Store, worker: Worker, msg: dict[str, Any]) -> dict[str, Any]:
    worker.pid = int(msg.get("pid") or 0) or None
    row = store.get_run(worker.run_id)
    return {"id": row["id"], "task": row["task"], "profile": row["agent"], "model": row["model"] or None,
            "workspace": row["workspace"] or None, "parent_id": row["parent_id"]}


def _created(store: Store, worker: Worker, msg: dict[str, Any]) -> None:
    from sentinel.models import split

    split(str(msg["model"]))
    store.conn.execute("UPDATE runs SET model=?, workspace=? WHERE id=? AND status='running'",
                       (str(msg["model"]), str(msg["workspace"]), worker.run_id))


def _error(store: Store, worker: Worker, msg: dict[str, Any]) -> None:
    worker.error = str(msg.get("message", ""))[:2000]


def _set_status(store: Store, worker: Worker, msg: dict[str, Any]) -> None:
    status = msg["status"]
    if status not in WORKER_STATUSES:
        raise Refused(f"a worker may not set status {status!r}")
    if store.get_run(worker.run_id)["status"] in TERMINAL:
        raise Refused(f"run {worker.run_id} is already finished")
    store.set_status(_own(worker, msg), status, output=msg.get("output"), error=msg.get("error"))


def _approval_for_call(store: Store, worker: Worker, msg: dict[str, Any]) -> dict | None:
    approval = store.approval_for_call(_own(worker, msg), str(msg["call_id"]))
    return _dict(approval)


def _submit(store: Store, worker: Worker, msg: dict[str, Any]) -> dict:
    if not isinstance(msg["arguments"], dict):
        raise UsageError("arguments must be an object")
    ttl = msg.get("ttl_s")
    approval = store.submit_approval(_own(worker, msg), str(msg["call_id"]), str(msg["tool"]), msg["arguments"],
                                     str(msg["reason"]), float(ttl) if ttl else None)
    return _dict(approval)


def _get(store: Store, worker: Worker, msg: dict[str, Any]) -> dict:
    return _dict(_own_approval(store, worker, msg["approval_id"]))


def _pending(store: Store, worker: Worker, msg: dict[str, Any]) -> list[dict]:
    return [_dict(a) for a in store.pending_approvals(_own(worker, msg))]


def _expire(store: Store, worker: Worker, msg: dict[str, Any]) -> None:
    store.expire()


def _consume(store: Store, worker: Worker, msg: dict[str, Any]) -> bool:
    _own_approval(store, worker, msg["approval_id"])
    return store.consume(str(msg["approval_id"]), str(msg["digest"]))


def _audit(store: Store, worker: Worker, msg: dict[str, Any]) -> None:
    record = msg["record"]
    if not isinstance(record, dict):
        raise UsageError("record must be an object")
    store.audit(str(msg["kind"])[:40], {**record, "run_id": worker.run_id, "agent": worker.agent.name,
                                        "source": "worker"})


def _dict(approval: Any) -> dict | None:
    from dataclasses import asdict

    return asdict(approval) if approval is not None else None


CHANNEL_OPS: dict[str, Callable[[Store, Worker, dict[str, Any]], Any]] = {
    "hello": _hello, "created": _created, "error": _error, "set_status": _set_status,
    "approval_for_call": _approval_for_call, "submit_approval": _submit, "get_approval": _get,
    "pending_approvals": _pending, "expire": _expire, "consume": _consume, "audit": _audit,
}
