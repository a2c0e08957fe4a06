"""One worker per active run: spawning it as the agent's user, answering its channel, noticing its exit.

The channel is the supervisor's end of a socket pair whose other end is the worker's fd 0. A worker
may ask only about its own run (CHANNEL_OPS) and claim only what a worker may claim: each op checks the
run id and that any approval it names belongs to the run; audit records only of WORKER_AUDIT_KINDS,
stamped as the worker's; no op changes the run's model, task, workspace or grants (the supervisor
fixed them at start). There is no op that resolves an approval: only an operator on the operator
socket can approve or deny.

An undo process (`python -m sentinel.worker --undo RUN_ID`, `start_undo`) is kept here too, while it runs, so the run
counts as busy: its channel answers `hello` (the run directory, workspace and checkpoint the supervisor fixed) and
`undone` (what it restored, or why it could not), nothing else; the reply to the operator who asked waits for it.

`hello` answers once per worker: the run, the operator's settings it runs under, and Muzzle's URL with
the run token, so the token never sits in an environment another process could read. The settings are an
allowlist (WORKER_SETTINGS): what the agent loop reads, never the store's DSN, notification targets, the
web console's, Muzzle's, providers or the system section; of `mcp_servers`, only those the run's profile
grants (the worker starts them).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence
from urllib.parse import urlparse

from sentinel.engine.rows import StoredRun
from sentinel.engine.store import Approval, Store
from sentinel.errors import NotFound, SentinelError, UsageError
from sentinel.leash import spawn
from sentinel.supervisor import children, layout, registry, runmodel
from sentinel.supervisor.hub import Client
from sentinel.frames import failure, reply
from sentinel.jsontypes import JSON, JSONObject
from sentinel.mcp.names import split_name
from sentinel.mcp.pin import reshown, shows_listing
from sentinel.engine.status import TERMINAL, RunStatus

if TYPE_CHECKING:
    from sentinel.config import Config

WORKER_STATUSES = (RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.DONE, RunStatus.DONE_UNVERIFIED,
                   RunStatus.FAILED, RunStatus.IDLE, RunStatus.WAITING_CHILD)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
OUTCOMES = ("auto", "needs_approval", "deny")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# What a worker may write into the audit log: its own findings, never an operator's kind of record
# (approval_resolved, run_started, operator_refused, ...). Extend it with the worker's new findings.
WORKER_AUDIT_KINDS = frozenset({"decision", "prompt_quarantined", "memory_quarantined", "tool_broken",
                                "mcp_unavailable", "mcp_tool_withheld"})
MAX_AUDIT_BYTES = 256 * 1024
MAX_TEXT = 1 << 20  # a run's output or error as a worker reports it


class Refused(SentinelError):
    pass


@dataclass
class Site:
    """What every worker launch needs from the supervisor."""

    state_dir: Path
    config: "Config"
    ports: list[int]
    group: str
    interpreter: Path | None = None  # the execute-only copy (interp.py); None runs sys.executable itself


@dataclass
class Undoing:
    """A system-mode undo in progress: who asked (answered when the process exits) and what the process said."""

    client: Client
    by: str
    to: int | None
    deadline: float  # time.monotonic() past which the supervisor stops it
    answer: Mapping[str, object] | None = None  # the reply frame for `client`, once the process said `undone`
    children: list[str] = field(default_factory=list)  # the child runs it undoes too (same workspace and user)
    elsewhere: list[JSONObject] = field(default_factory=list)  # those it leaves to their own undo: id, workspace


@dataclass
class Worker:
    run_id: str
    agent: registry.Agent
    uid: int
    home: str
    spawned: spawn.Spawned
    conn: Client | None = None
    error: str | None = None
    applied: list[str] = field(default_factory=list)
    relaunch: bool = False  # an approval of this run was resolved while this worker was still winding down
    # untyped: the `hello` answer (with the run token), handed over once: the settings as pydantic dumps them
    greeting: dict[str, Any] | None = None
    inbox: JSONObject = field(default_factory=dict)  # a chat session's next message and skills, for `hello`
    stopped: bool = False   # an operator stopped this turn: the dying worker's last frames change nothing
    settling: bool = False  # it only writes a kept subagent into its user's roster; the run stays as it is
    undo: Undoing | None = None  # it only restores the run's workspace (start_undo); the run stays as it is


# -- spawning ---------------------------------------------------------------------------------------

def model_ports(config: "Config", extra: list[int]) -> list[int]:
    """TCP ports a worker may connect to: Muzzle's, plus any the operator allowed (root-side settings only:
    an agent's own config.yaml can never widen its worker's network rule)."""
    ports = [config.muzzle.port] if config.muzzle.enabled and config.muzzle.port else []
    url = os.environ.get("SENTINEL_MUZZLE_URL")
    if url and (port := urlparse(url).port):
        ports.append(port)
    return sorted(set(ports + list(extra)))


def worker_env(run_id: str, pw: pwd.struct_passwd) -> dict[str, str]:
    """A scrubbed environment with nothing secret in it: the token travels over the channel (`hello`)."""
    home = Path(pw.pw_dir)
    return {"HOME": str(home), "USER": pw.pw_name, "LOGNAME": pw.pw_name, "PATH": DEFAULT_PATH,
            "LANG": "C.UTF-8", "SENTINEL_HOME": str(layout.agent_sentinel_home(home)),
            "TMPDIR": str(layout.agent_sentinel_home(home) / "tmp"), "SENTINEL_SUPERVISOR_FD": "0",
            "SENTINEL_RUN_ID": run_id}


def worker_launch(run_id: str, row: StoredRun, pw: pwd.struct_passwd, site: Site, channel_fd: int,
                  log_fd: int, servers: dict[str, Any]) -> spawn.Launch:  # untyped: the greeting's servers (JSON)
    """`python -I -B -m sentinel.worker RUN_ID` from `/`: nothing the agent planted in its home or the
    environment is imported, and the execute-only interpreter makes it non-dumpable from its first instruction.
    `servers`: the MCP servers the run is granted, as its greeting carries them (`worker_config`)."""
    from sentinel.leash import policy as leash_policy
    from sentinel.leash.links import Owner
    from sentinel.leash.profile import worker_profile

    config, ports = site.config, site.ports
    home = Path(pw.pw_dir)
    sentinel_home = layout.agent_sentinel_home(home)
    policy_dir = layout.etc_dir() / "leash"
    policy_file = leash_policy.policy_path(pw.pw_name, system=True, policy_dir=policy_dir)
    pol = leash_policy.load(policy_file)
    workspace = Path(row["workspace"]) if row.get("workspace") else sentinel_home / "workspace"
    proxy = (config.leash.proxy_host, config.leash.proxy_port)
    prof = worker_profile(sentinel_home, workspace, pol, muzzle_port=ports[0] if ports else proxy[1], proxy=proxy,
                          owner=Owner.of(pw))
    prof.tcp_connect = sorted(set(prof.tcp_connect) | set(ports))
    if site.interpreter is not None:
        prof.grant_read(site.interpreter)
    prof.grant_read(policy_file)  # root's policy for its tools, which the worker reads for each launch
    # the code of the MCP servers this run is granted and their own directories (a server the worker starts
    # stays inside the worker's own Landlock); another server's files are no business of this run's
    prof.grant_read(*sorted({str(p) for server in servers.values() for p in server.get("read") or []}))
    prof.grant_read(*sorted({str(server["workdir"]) for server in servers.values() if server.get("workdir")}))
    return spawn.Launch([sys.executable, "-I", "-B", "-m", "sentinel.worker", run_id], worker_env(run_id, pw),
                        pw.pw_uid, pw.pw_gid, "/", prof, (channel_fd, log_fd, log_fd), sandbox=config.sandbox,
                        name=f"sentinel-{run_id}",
                        executable=str(site.interpreter) if site.interpreter is not None else None)


def start(store: Store, site: Site, run_id: str, muzzle_url: str) -> tuple[Worker, socket.socket]:
    """Spawn the worker of a run; returns it and the supervisor's end of its channel."""
    row, agent, pw = _account(store, site, run_id)
    token = _muzzle_token(agent.name, run_id, row["model"], site.config)
    hello = greeting(store, row, site.config, pw, {"base_url": muzzle_url, "token": token})
    servers = hello["config"]["mcp_servers"]
    spawned, ours = _spawn(site, run_id, lambda channel, log: worker_launch(run_id, row, pw, site, channel, log,
                                                                            servers))
    worker = Worker(run_id, agent, pw.pw_uid, pw.pw_dir, spawned, applied=spawned.applied, greeting=hello)
    return worker, ours


def start_undo(store: Store, site: Site, run_id: str, undoing: Undoing) -> tuple[Worker, socket.socket]:
    """Spawn the undo of a run, as its agent's user, under the undo profile; returns it and the channel's end."""
    from sentinel.worker.undo import in_workspace

    row, agent, pw = _account(store, site, run_id)
    workspace = row["workspace"] or str(layout.agent_sentinel_home(Path(pw.pw_dir)) / "workspace")
    below = {r["id"]: r for r in store.descendants(run_id)}
    # a child run in this workspace as this agent's user is undone with it; any other (another agent's, in its
    # own workspace) is named and left to its own undo, which runs as its user
    here, elsewhere = in_workspace(workspace, [r for r in below.values() if r.get("user") == row.get("user")])
    elsewhere += [i for i, r in below.items() if r.get("user") != row.get("user")]
    undoing.children = here
    undoing.elsewhere = [{"id": i, "workspace": below[i]["workspace"]} for i in elsewhere]
    kids = [below[i]["run_dir"] for i in here]
    spawned, ours = _spawn(site, run_id, lambda channel, log: undo_launch(run_id, row, workspace, pw, site, channel,
                                                                          log, kids))
    spec: JSONObject = {"id": run_id, "run_dir": row["run_dir"], "workspace": workspace, "to": undoing.to,
                        "children": [*kids]}
    return Worker(run_id, agent, pw.pw_uid, pw.pw_dir, spawned, applied=spawned.applied, greeting=spec,
                  undo=undoing), ours


def _account(store: Store, site: Site, run_id: str) -> tuple[StoredRun, registry.Agent, pwd.struct_passwd]:
    """The run, its registered system agent and that agent's account."""
    row = store.get_run(run_id)
    agent = registry.get(store, row.get("user") or "")
    if agent is None:
        raise UsageError(f"run {run_id} belongs to no registered system agent")
    return row, agent, registry.account(agent, site.group)


def _spawn(site: Site, run_id: str, launch: Callable[[int, int], spawn.Launch]) -> tuple[spawn.Spawned, socket.socket]:
    """Spawn `launch(channel_fd, log_fd)` with a fresh channel and the run's log; returns it and our channel end."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    log_fd = _log(site, run_id)
    try:
        spawned = spawn.spawn(launch(theirs.fileno(), log_fd))
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
        os.close(log_fd)
    return spawned, ours


def undo_launch(run_id: str, row: StoredRun, workspace: str, pw: pwd.struct_passwd, site: Site, channel_fd: int,
                log_fd: int, children: Sequence[str] = ()) -> spawn.Launch:
    """`python -I -B -m sentinel.worker --undo RUN_ID` from `/`, with the worker's scrubbed environment: Landlock
    lets it write the run's directory and workspace only, and the directories of the `children` it undoes too
    (sentinel/leash/profile.py `undo_profile`), under the agent's Leash limits."""
    from sentinel.leash import policy as leash_policy
    from sentinel.leash.links import Owner
    from sentinel.leash.profile import undo_profile

    policy_file = leash_policy.policy_path(pw.pw_name, system=True, policy_dir=layout.etc_dir() / "leash")
    prof = undo_profile(Path(row["run_dir"]), Path(workspace), leash_policy.load(policy_file), Owner.of(pw),
                        [Path(c) for c in children])
    if site.interpreter is not None:
        prof.grant_read(site.interpreter)
    return spawn.Launch([sys.executable, "-I", "-B", "-m", "sentinel.worker", "--undo", run_id],
                        worker_env(run_id, pw), pw.pw_uid, pw.pw_gid, "/", prof, (channel_fd, log_fd, log_fd),
                        sandbox=site.config.sandbox, name=f"sentinel-undo-{run_id}",
                        executable=str(site.interpreter) if site.interpreter is not None else None)


def _log(site: Site, run_id: str) -> int:
    logs = site.state_dir / "logs"
    logs.mkdir(mode=0o700, exist_ok=True)
    return os.open(logs / f"{run_id}.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                   0o600)


def greeting(store: Store, row: StoredRun, config: "Config", pw: pwd.struct_passwd,
             endpoint: dict[str, str]) -> dict[str, Any]:  # untyped: the settings as pydantic dumps them (JSON)
    """The `hello` answer: the run as the supervisor fixed it, the settings it runs under, Muzzle's endpoint."""
    sub = children.subagent(store, row)  # a spawned one's soul and skills, as approved
    mcp = [] if sub is not None else runmodel.profile_mcp(pw.pw_dir, str(row["agent"]), pw.pw_uid)
    return {"id": row["id"], "task": row["task"], "profile": row["agent"], "model": row["model"],
            "workspace": row["workspace"] or None, "parent_id": row["parent_id"], "kind": row.get("kind") or "task",
            "config": worker_config(config, mcp, getattr(pw, "pw_name", None)), "endpoint": endpoint,
            "grants": store.grants_of(row["id"]),  # a child run's: what its parent granted it
            "subagent": sub}


# The operator's settings a worker reads (sentinel/worker and what it imports: the loop's limits, the tools'
# settings, the action policy, sandbox and Leash, the rule gate, memory, the local-model and context settings,
# child runs, and the MCP servers it starts). Everything else stays with the supervisor and Muzzle: the store's
# DSN, notification targets and their tokens, the web console, Muzzle's settings, providers (the worker reaches
# models only through Muzzle), system, watchers, default_model and default_agent (the run's are fixed).
WORKER_SETTINGS = frozenset({"limits", "tools", "policy", "sandbox", "leash", "gate", "memory", "local", "context",
                             "orchestration", "mcp_servers"})


def worker_config(config: "Config", mcp: list[str],
                  user: str | None = None) -> dict[str, Any]:  # untyped: what pydantic's model_dump returns
    """The operator's settings a worker runs under (an agent's own config.yaml is never read for a run):
    WORKER_SETTINGS only, and of the MCP servers only those named in `mcp` (what the run's profile grants) that
    the operator let that agent's user have (a server's `agents:`; the profile is the agent's own file)."""
    data = config.model_dump(mode="json", include=set(WORKER_SETTINGS))
    data["mcp_servers"] = {name: server for name, server in data["mcp_servers"].items()
                           if name in mcp and (server.get("agents") is None or user in server["agents"])}
    data["leash"]["policy_dir"] = str(layout.etc_dir() / "leash")
    for name, path in mcp_workdirs(config).items():
        if name in data["mcp_servers"]:  # only the granted servers reach the worker, each with its directory
            data["mcp_servers"][name]["workdir"] = str(path)
    return data


def mcp_workdirs(config: "Config") -> dict[str, Path]:
    """Each stdio MCP server's working directory and HOME, made here (root's, 0755) when missing, through no link
    another user could have made (make_workdir): a worker starts its servers there, never in the agent's workspace
    (sentinel/mcp/launch.py). UsageError naming the server when one cannot be made."""
    from sentinel.mcp.launch import make_workdir, system_workdir

    made = {}
    for name, server in config.mcp_servers.items():
        if server.command is not None:
            try:
                made[name] = make_workdir(Path(server.workdir) if server.workdir else
                                          system_workdir(layout.etc_dir(), name))
            except UsageError as exc:
                raise UsageError(f"MCP server {name!r}: workdir {exc}") from None
    return made


def _muzzle_token(agent: str, run_id: str, model: str, config: "Config") -> str:
    """The run's token: exactly its model and the operator's judge models (19.9: never `*`)."""
    from sentinel.muzzle import issue_token
    from sentinel.muzzle.layout import system_layout

    if not model:
        raise UsageError(f"run {run_id} has no model (it was started before models were fixed at start); "
                         "start it again")
    models = list(dict.fromkeys([model, *system_judge_models(config)]))
    store = system_layout(config).store_path
    if not store.parent.is_dir():  # made here, as root, it would lock Muzzle's user out of its own store
        raise UsageError(f"Muzzle's state directory {store.parent} is missing: run `sudo sentinel muzzle "
                         "setup-system` (it makes it for Muzzle's user)")
    return issue_token(agent, run_id, models, config.muzzle.token_ttl_s, config.muzzle.budgets, store=store)


def system_judge_models(config: "Config") -> list[str]:
    """Models the operator's rules (/etc/sentinel/rules) judge with: the run's token must allow them, since
    the worker's judge calls go through Muzzle too. An agent's own rules cannot widen its token."""
    from sentinel.policy.gate.layer import RuleGate
    from sentinel.policy.gate.loader import system_rules_dir

    rules = system_rules_dir(str(layout.etc_dir() / "rules"))
    if rules is None or not config.gate.enabled:
        return []
    return RuleGate.for_sentinel(layout.etc_dir(), config.gate, config, system_rules=rules).judge_models()


# -- the channel ------------------------------------------------------------------------------------

def handle(store: Store, worker: Worker, msg: JSONObject,
           relay: Callable[[str, JSONObject], None]) -> Mapping[str, object] | None:
    """Answer one frame from a worker (None for one-way frames). Anything not listed is refused."""
    op = msg.get("op")
    if op == "event":
        event = msg.get("event")
        if isinstance(event, dict):
            relay(worker.run_id, {**event, "run_id": worker.run_id})
        return None
    fn = (UNDO_OPS if worker.undo is not None else CHANNEL_OPS).get(op) if isinstance(op, str) else None
    if worker.stopped:  # killed by `interrupt`: what it wrote before dying must not pause or end the session
        return failure("denied", f"an operator stopped the turn of run {worker.run_id}")
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


def _own(worker: Worker, msg: JSONObject) -> str:
    run_id = msg.get("run_id", worker.run_id)
    if run_id != worker.run_id:
        raise Refused(f"worker of run {worker.run_id} may not touch run {run_id}")
    return worker.run_id


def _own_approval(store: Store, worker: Worker, approval_id: JSON) -> Approval:
    approval = store.get_approval(str(approval_id))
    if approval.run_id != worker.run_id:
        raise NotFound(f"no approval {approval_id!r}")
    return approval


def _hello(store: Store, worker: Worker, msg: JSONObject) -> JSONObject:
    greeting, worker.greeting = worker.greeting, None
    if greeting is None:
        raise Refused(f"the worker of run {worker.run_id} already said hello")
    return {**greeting, **worker.inbox}


def _error(store: Store, worker: Worker, msg: JSONObject) -> None:
    worker.error = _text(msg.get("message"), "message")[:2000]


def _set_status(store: Store, worker: Worker, msg: JSONObject) -> None:
    status = msg["status"]
    if not isinstance(status, str) or status not in WORKER_STATUSES:
        raise Refused(f"a worker may not set status {status!r}")
    if store.get_run(worker.run_id)["status"] in TERMINAL:
        raise Refused(f"run {worker.run_id} is already finished")
    store.set_status(_own(worker, msg), status, output=_optional_text(msg.get("output"), "output"),
                     error=_optional_text(msg.get("error"), "error"))


def _record_decision(store: Store, worker: Worker, msg: JSONObject) -> JSONObject:
    decision = msg["decision"]
    if not isinstance(decision, dict) or decision.get("outcome") not in OUTCOMES:
        raise UsageError(f"decision must be an object whose outcome is one of {', '.join(OUTCOMES)}")
    for name in ("tool", "reason"):
        _text(decision.get(name), f"decision.{name}")
    return store.record_decision(_own(worker, msg), _text(msg["call_id"], "call_id"), decision)


def _decision_for_call(store: Store, worker: Worker, msg: JSONObject) -> JSONObject | None:
    return store.decision_for_call(_own(worker, msg), _text(msg["call_id"], "call_id"))


def _approval_for_call(store: Store, worker: Worker, msg: JSONObject) -> JSONObject | None:
    approval = store.approval_for_call(_own(worker, msg), str(msg["call_id"]))
    return _dict(approval) if approval is not None else None


def _submit(store: Store, worker: Worker, msg: JSONObject) -> JSONObject:
    """An approval only for a call decided `needs_approval`, exactly as decided."""
    arguments = msg["arguments"]
    if not isinstance(arguments, dict):
        raise UsageError("arguments must be an object")
    decided = store.decision_for_call(_own(worker, msg), str(msg["call_id"]))
    if decided is None or decided.get("outcome") != "needs_approval":
        raise Refused(f"call {str(msg['call_id'])[:64]} was not decided needs_approval; nothing to approve")
    if (decided.get("tool"), decided.get("arguments")) != (msg["tool"], msg["arguments"]):
        raise Refused(f"call {msg['call_id']}: an approval is asked only for the call as it was decided")
    ttl = msg.get("ttl_s")
    if ttl is not None and not isinstance(ttl, (int, float, str)):
        raise UsageError("ttl_s must be a number")
    sha, code = msg.get("code_sha256"), _code(msg.get("code"))
    if sha is not None and not (isinstance(sha, str) and _SHA256.match(sha)):
        raise UsageError("code_sha256 must be 64 lowercase hex digits")
    if sha != decided.get("code_sha256") or (code is None) != (sha is None):
        raise Refused(f"call {msg['call_id']}: the code hash must be the one the call was decided with")
    if code is not None and (sha is None or not _shows(code, sha, str(msg["tool"]))):
        raise Refused(f"call {msg['call_id']}: the code shown is not the code whose hash was decided")
    if code is not None and (named := split_name(str(msg["tool"]))):
        code = reshown(code, store.mcp_trust(named[0]))  # the diff as the supervisor sees it
    approval = store.submit_approval(_own(worker, msg), str(msg["call_id"]), str(msg["tool"]), arguments,
                                     str(msg["reason"]), float(ttl) if ttl else None, code=code, code_sha256=sha)
    return _dict(approval)


def _code(value: JSON) -> dict[str, str] | None:
    """The files an approval shows, as the worker sent them: file name -> text."""
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise UsageError("code must map file names to text")
    return {k: v for k, v in value.items() if isinstance(v, str)}


def _shows(code: dict[str, str], sha: str, tool: str) -> bool:
    """The operator is shown exactly the files whose SHA-256 the approval binds."""
    from sentinel.agents.authored import FILES, code_digest

    if split_name(tool):
        return shows_listing(code, sha)
    return set(code) == set(FILES) and code_digest(code) == sha


def _mcp_trust(store: Store, worker: Worker, msg: JSONObject) -> JSONObject | None:
    """Read-only: the listing `sentinel mcp trust` pinned for a server (a pinned tool's approval shows its diff)."""
    return store.mcp_trust(_text(msg.get("server"), "server"))


def _tool_trusted(store: Store, worker: Worker, msg: JSONObject) -> bool:
    """Read-only: is this code hash trusted for the agent of the worker's own run? (Nothing records trust
    here; only an operator's approval on the operator socket does.)"""
    return store.tool_trusted(_own(worker, msg), str(msg["tool"]), str(msg["code_sha256"]))


def _get(store: Store, worker: Worker, msg: JSONObject) -> JSONObject:
    return _dict(_own_approval(store, worker, msg["approval_id"]))


def _pending(store: Store, worker: Worker, msg: JSONObject) -> list[JSON]:
    return [_dict(a) for a in store.pending_approvals(_own(worker, msg))]


def _expire(store: Store, worker: Worker, msg: JSONObject) -> None:
    store.expire()


def _consume(store: Store, worker: Worker, msg: JSONObject) -> bool:
    _own_approval(store, worker, msg["approval_id"])
    return store.consume(str(msg["approval_id"]), str(msg["digest"]))


def _audit(store: Store, worker: Worker, msg: JSONObject) -> None:
    kind, record = msg["kind"], msg["record"]
    if not isinstance(kind, str) or kind not in WORKER_AUDIT_KINDS:
        raise Refused(f"a worker may not write audit records of kind {str(kind)[:40]!r}")
    if not isinstance(record, dict):
        raise UsageError("record must be an object")
    if len(json.dumps(record, default=str)) > MAX_AUDIT_BYTES:
        raise UsageError(f"record larger than {MAX_AUDIT_BYTES} bytes")
    store.audit(kind, {**record, "run_id": worker.run_id, "agent": worker.agent.name, "source": "worker"})


def _text(value: JSON, name: str) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a string")
    return value[:MAX_TEXT]


def _optional_text(value: JSON, name: str) -> str | None:
    return None if value is None else _text(value, name)


def _dict(approval: Approval) -> JSONObject:
    from dataclasses import asdict

    return asdict(approval)


CHANNEL_OPS: dict[str, Callable[[Store, Worker, JSONObject], JSON]] = {
    "hello": _hello, "error": _error, "set_status": _set_status,
    "record_decision": _record_decision, "decision_for_call": _decision_for_call,
    "approval_for_call": _approval_for_call, "submit_approval": _submit, "get_approval": _get,
    "pending_approvals": _pending, "expire": _expire, "consume": _consume, "audit": _audit,
    "tool_trusted": _tool_trusted, "mcp_trust": _mcp_trust,
}


# -- an undo process's answer ------------------------------------------------------------------------

REFUSALS = ("usage", "busy", "error")  # why an undo could not start, as the operator's client reads the kind


def _undone(store: Store, worker: Worker, msg: JSONObject) -> None:
    """What the undo did (or why it could not), kept for the operator's reply when the process exits. The lists
    are the process's: paths as text, checked for shape only (the CLI shows them escaped)."""
    undoing = worker.undo
    assert undoing is not None  # only an undo process's channel has this op
    if undoing.answer is not None:
        raise Refused(f"the undo of run {worker.run_id} already answered")
    refused = msg.get("refused")
    if refused is not None:
        kind = refused if isinstance(refused, str) and refused in REFUSALS else "error"
        undoing.answer = failure(kind, _text(msg.get("message"), "message")[:2000])
        return
    undoing.answer = reply({**undo_result(worker.run_id, msg.get("result"), undoing.children),
                            "elsewhere": [*undoing.elsewhere]})


def undo_result(run_id: str, value: JSON, children: Sequence[str] = ()) -> JSONObject:
    """The `undone` result, field by field: id, to (a step number), restored/removed/missing (paths), why some
    were not put back as they were (kept: changed after the run; unstored: over the store's limit; attributes:
    content back without owner or setuid bits; paths, each optional), incomplete (step numbers)."""
    if not isinstance(value, dict) or value.get("id") != run_id:
        raise UsageError(f"result: must be the undo of run {run_id}")
    to = value.get("to")
    if not isinstance(to, int) or isinstance(to, bool) or to < 0:
        raise UsageError("result.to: must be a step number")
    out: JSONObject = {"id": run_id, "to": to}
    for name, kind in (("restored", str), ("removed", str), ("missing", str), ("incomplete", int)):
        items = value.get(name)
        if not isinstance(items, list) or not all(isinstance(i, kind) and not isinstance(i, bool) for i in items):
            raise UsageError(f"result.{name}: must be a list of {'paths' if kind is str else 'step numbers'}")
        out[name] = items
    for name in ("kept", "unstored", "attributes"):  # the reasons, from an undo that gives them
        items = value.get(name, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise UsageError(f"result.{name}: must be a list of paths")
        out[name] = items
    given = value.get("children", [])  # the child runs undone with it: each one the supervisor gave it
    kids: list[JSON] = []
    for child in given if isinstance(given, list) else [None]:
        numbers = [child.get(k) for k in ("steps", "incomplete")] if isinstance(child, dict) else [None]
        if not (isinstance(child, dict) and child.get("id") in children and all(
                isinstance(n, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in n)
                for n in numbers)):
            raise UsageError("result.children: must be child runs it was given, each with its step numbers")
        kids.append({"id": child["id"], "steps": numbers[0], "incomplete": numbers[1]})
    out["children"] = kids
    return out


UNDO_OPS: dict[str, Callable[[Store, Worker, JSONObject], JSON]] = {"hello": _hello, "undone": _undone}


# -- a hook session's relay contract (sentinel/engine/relay.py): only its own run's ------------------

def _relay_notify(store: Store, worker: Worker, msg: JSONObject) -> JSONObject:
    targets = msg.get("targets") or []
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        raise UsageError("targets must be a list of configured target names")
    names = [str(t) for t in targets]
    with _settled_refused():
        firing = store.relay_notify(_own(worker, msg), _text(msg.get("message"), "message"), names)
    return {"id": firing["id"], "status": firing["status"]}


def _relay_escalate(store: Store, worker: Worker, msg: JSONObject) -> JSONObject:
    with _settled_refused():
        firing = store.relay_escalate(_own(worker, msg), _text(msg.get("reason"), "reason"),
                                      _text(msg.get("severity"), "severity"))
    return {"id": firing["id"], "status": firing["status"]}


@contextlib.contextmanager
def _settled_refused() -> Iterator[None]:
    from sentinel.engine.relay import Settled

    try:
        yield
    except Settled as exc:
        raise Refused(str(exc)) from None


CHANNEL_OPS |= {"relay_notify": _relay_notify, "relay_escalate": _relay_escalate}
