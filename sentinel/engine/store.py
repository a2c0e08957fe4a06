"""The state database: run registry, decisions, approval queue, audit log (SQLite, WAL; or PostgreSQL).

Local mode keeps it at $SENTINEL_HOME/state/sentinel.db; the supervisor keeps
its own root-only copy under /var/lib/sentinel/, or shares one PostgreSQL database with the supervisors of
other hosts (`store: postgresql://...`; sentinel/engine/db.py, docs/system-mode.md). Schema changes are named,
forward-only migrations recorded in `_migrations`, the same on both backends.

Approval invariants live in single UPDATE statements, so they hold across
processes: a pending approval is resolved once (approve or deny, first wins),
only an approved one whose digest matches can be consumed, and only once.

A call's decision is recorded here once, first write wins: on resume the loop takes it from here, never
from the run's journal (in system mode the agent's own file, so a claim), and `show` reports it from here.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, cast

from sentinel import paths
from sentinel.engine import db
from sentinel.engine.rows import ApprovalRow, RunRow, SessionRow, StoredRun
from sentinel.engine.status import APPROVED, TERMINAL, ApprovalStatus
from sentinel.errors import NotFound, UsageError
from sentinel.jsontypes import JSONObject
from sentinel.mcp.names import named, split_name

MIGRATIONS: list[tuple[str, str]] = [
    ("001_runs", """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY, parent_id TEXT, agent TEXT NOT NULL, task TEXT NOT NULL, model TEXT NOT NULL,
            status TEXT NOT NULL, workspace TEXT NOT NULL, run_dir TEXT NOT NULL, output TEXT, error TEXT,
            created_at REAL NOT NULL, updated_at REAL NOT NULL);
        CREATE INDEX runs_created ON runs(created_at);
        CREATE INDEX runs_status ON runs(status);
    """),
    ("002_approvals", """
        CREATE TABLE approvals (
            id TEXT PRIMARY KEY, run_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL,
            arguments TEXT NOT NULL, digest TEXT NOT NULL, reason TEXT NOT NULL, status TEXT NOT NULL,
            created_at REAL NOT NULL, expires_at REAL, resolved_at REAL, resolved_by TEXT,
            resolution_reason TEXT, consumed_at REAL, UNIQUE (run_id, call_id));
        CREATE INDEX approvals_status ON approvals(status);
    """),
    ("003_audit", """
        CREATE TABLE audit (
            id INTEGER PRIMARY KEY AUTOINCREMENT, t REAL NOT NULL, kind TEXT NOT NULL, run_id TEXT,
            record TEXT NOT NULL);
        CREATE INDEX audit_run ON audit(run_id);
    """),
    # System mode (sentinel/supervisor): the agents Sentinel created or registered, supervisor settings,
    # the Linux user each run executes as, and the tool trust table (code hashes an operator trusted).
    ("004_system_agents", """
        CREATE TABLE agents (
            name TEXT PRIMARY KEY, display_name TEXT NOT NULL, user TEXT NOT NULL, uid INTEGER,
            home TEXT NOT NULL, origin TEXT NOT NULL, created_at REAL NOT NULL);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        ALTER TABLE runs ADD COLUMN user TEXT;
    """),
    ("005_tool_trust", """
        CREATE TABLE tool_trust (
            agent TEXT NOT NULL, tool TEXT NOT NULL, code_sha256 TEXT NOT NULL, trusted_by TEXT NOT NULL,
            trusted_at REAL NOT NULL, PRIMARY KEY (agent, tool, code_sha256));
    """),
    # Chat sessions (sentinel chat): runs that wait for the next message (status `idle`) instead of ending.
    ("006_chat_sessions", """
        ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'task';
        CREATE INDEX runs_kind_updated ON runs(kind, updated_at);
    """),
    # An approval of an agent-authored tool carries the code the operator is shown (JSON: file -> text) and
    # its SHA-256, which the approval's digest binds too.
    ("006_approval_code", """
        ALTER TABLE approvals ADD COLUMN code TEXT;
        ALTER TABLE approvals ADD COLUMN code_sha256 TEXT;
    """),
    # The verdict on each tool call (the decision event as JSON), recorded once: never read from a journal.
    ("007_decisions", """
        CREATE TABLE decisions (
            run_id TEXT NOT NULL, call_id TEXT NOT NULL, outcome TEXT NOT NULL, decision TEXT NOT NULL,
            t REAL NOT NULL, PRIMARY KEY (run_id, call_id));
    """),
    # Watchers (sentinel/watchers): each firing's relay contract, its queued deliveries, the operator's inbox,
    # and what each watcher remembers between polls (last value, dedupe keys, cooldown).
    ("008_watchers", """
        CREATE TABLE watch_firings (
            id TEXT PRIMARY KEY, watcher TEXT NOT NULL, dedupe_key TEXT NOT NULL, run_id TEXT, status TEXT NOT NULL,
            fired_at REAL NOT NULL, deadline REAL NOT NULL, fallback INTEGER NOT NULL, envelope TEXT NOT NULL,
            escalation TEXT, outcome TEXT, resolved_at REAL);
        CREATE INDEX watch_firings_due ON watch_firings(status, deadline);
        CREATE INDEX watch_firings_run ON watch_firings(run_id);
        CREATE TABLE watch_deliveries (
            id INTEGER PRIMARY KEY AUTOINCREMENT, firing_id TEXT NOT NULL, target TEXT NOT NULL, kind TEXT NOT NULL,
            message TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, next_at REAL NOT NULL,
            error TEXT, done_at REAL);
        CREATE INDEX watch_deliveries_due ON watch_deliveries(status, next_at);
        CREATE TABLE watch_inbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT, t REAL NOT NULL, firing_id TEXT, watcher TEXT, kind TEXT NOT NULL,
            message TEXT NOT NULL);
        CREATE TABLE watch_state (watcher TEXT PRIMARY KEY, state TEXT NOT NULL, updated_at REAL NOT NULL);
    """),
    # Child runs (delegate, spawn, run_workflow, workflow steps): the parent's tool call (or step) that made
    # each, its depth below the head run, and the tools it is granted (JSON list), kept where no agent writes.
    ("009_child_runs", """
        ALTER TABLE runs ADD COLUMN call_id TEXT;
        ALTER TABLE runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE runs ADD COLUMN grants TEXT;
        CREATE UNIQUE INDEX runs_parent_call ON runs(parent_id, call_id);
    """),
    # Notifications (sentinel/notify, sentinel/engine/outbox.py): one outbox row per event and target, the
    # hashes of one-tap decision links, and the web console's sign-in tokens and sessions (kept over restarts).
    ("010_notify", """
        CREATE TABLE notify_outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT, event TEXT NOT NULL, target TEXT NOT NULL, spec TEXT NOT NULL,
            doc TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, next_at REAL NOT NULL,
            lease_until REAL, error TEXT, created_at REAL NOT NULL, done_at REAL, UNIQUE (event, target));
        CREATE INDEX notify_outbox_due ON notify_outbox(status, next_at);
        CREATE TABLE notify_links (
            secret_sha256 TEXT PRIMARY KEY, approval_id TEXT NOT NULL, digest TEXT NOT NULL, target TEXT NOT NULL,
            outbox_id INTEGER, created_at REAL NOT NULL, expires_at REAL NOT NULL, used_at REAL, used_as TEXT);
        CREATE INDEX notify_links_outbox ON notify_links(outbox_id);
        CREATE TABLE web_signins (
            token_sha256 TEXT PRIMARY KEY, operator TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL,
            used_at REAL);
        CREATE TABLE web_sessions (
            secret_sha256 TEXT PRIMARY KEY, operator TEXT NOT NULL, csrf TEXT NOT NULL, created_at REAL NOT NULL,
            expires_at REAL NOT NULL);
        CREATE INDEX runs_updated ON runs(updated_at);
        CREATE INDEX approvals_created ON approvals(created_at);
    """),
    # MCP servers pinned by `sentinel mcp trust NAME`: the SHA-256 of the server's command or URL and tool list,
    # and that listing (JSON), from which a changed listing's diff is shown when a call pauses.
    ("011_mcp", """
        CREATE TABLE mcp_trust (server TEXT PRIMARY KEY, sha256 TEXT NOT NULL, document TEXT NOT NULL,
                                trusted_by TEXT NOT NULL, trusted_at REAL NOT NULL);
    """),
    # Many hosts, one database (docs/system-mode.md): the host whose supervisor executes each run.
    ("012_hosts", """
        ALTER TABLE runs ADD COLUMN host TEXT;
        CREATE INDEX runs_host_status ON runs(host, status);
    """),
    # Coding agents' asks (sentinel/engine/asks.py, docs/hooks.md): what `sentinel hook` filed for a call an `ask`
    # rule held (its approval is an ordinary one, of a run of kind `ask`), and the per-repository allowlist of
    # exact calls a person allowed always; here, in the store, never in the repository the agent writes.
    ("013_hook_asks", """
        CREATE TABLE hook_asks (
            approval_id TEXT PRIMARY KEY, client TEXT NOT NULL, repository TEXT NOT NULL, rule TEXT NOT NULL,
            keys TEXT NOT NULL, created_at REAL NOT NULL);
        CREATE TABLE hook_allowlist (
            repository TEXT NOT NULL, kind TEXT NOT NULL, value TEXT NOT NULL, added_by TEXT NOT NULL,
            added_at REAL NOT NULL, approval_id TEXT, PRIMARY KEY (repository, kind, value));
    """),
    # An allowlist entry names the coding agent (client) it was allowed for and matches that client's calls only.
    # 013's hook_allowlist keeps the entries made before, which name none: listed as old, revocable, matching nothing.
    ("014_hook_allowlist_client", """
        CREATE TABLE hook_client_allowlist (
            repository TEXT NOT NULL, client TEXT NOT NULL, kind TEXT NOT NULL, value TEXT NOT NULL,
            added_by TEXT NOT NULL, added_at REAL NOT NULL, approval_id TEXT,
            PRIMARY KEY (repository, client, kind, value));
    """),
]



def call_digest(tool: str, arguments: JSONObject, code_sha256: str | None = None) -> str:
    """SHA-256 over the exact tool name and canonical arguments an approval is bound to (and, for an
    agent-authored tool, the SHA-256 of its code: an approval never runs code other than what was shown)."""
    bound: JSONObject = {"tool": tool, "arguments": arguments}
    if code_sha256 is not None:
        bound["code_sha256"] = code_sha256
    canonical = json.dumps(bound, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def trust_key(agent: str, user: str | None) -> str:
    """Whom a trusted code hash belongs to: the agent as `--agent` names it (USER/PROFILE in system mode
    when the profile is not the user's head agent)."""
    return agent if not user or user == agent else f"{user}/{agent}"


def new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(5)}"


@dataclass
class Approval:
    id: str
    run_id: str
    call_id: str
    tool: str
    arguments: JSONObject
    digest: str
    reason: str
    status: ApprovalStatus
    created_at: float
    resolved_by: str | None = None
    resolution_reason: str | None = None
    code: dict[str, str] | None = None   # an authored tool's files, as shown to the operator
    code_sha256: str | None = None

    def __post_init__(self) -> None:
        self.status = ApprovalStatus(self.status)  # the column's or the channel's text; ValueError for another

    @property
    def approved(self) -> bool:
        """A person approved the call (it may have run since)."""
        return self.status in APPROVED

    def public(self) -> JSONObject:
        data: JSONObject = {"id": self.id, "run_id": self.run_id, "tool": self.tool, "arguments": self.arguments,
                            "reason": self.reason, "status": self.status, "call_id": self.call_id,
                            "created_at": self.created_at, "digest": self.digest}
        if self.code_sha256:
            data |= {"code": None if self.code is None else {**self.code}, "code_sha256": self.code_sha256}
        return data | named(self.tool)


def this_host() -> str:
    """The name a host's runs are labelled with unless the operator's `system.host` names one."""
    return re.sub(r"[^a-z0-9-]", "-", socket.gethostname().split(".")[0].lower())[:63] or "localhost"


class Store:
    def __init__(self, conn: db.Conn, path: Path | str, host: str | None = None):
        self.conn = conn
        self.path = path
        self.host = host or this_host()    # the host whose supervisor executes the runs this store creates
        self.shared = db.shared(conn)      # many hosts' supervisors use this database (PostgreSQL)

    @classmethod
    def open(cls, path: Path | str | None = None, *, host: str | None = None) -> "Store":
        """`path`: a SQLite file (default: the state dir's sentinel.db) or a `postgresql://` URL."""
        if not (path and db.is_url(path)):
            path = Path(path) if path else paths.state_dir() / "sentinel.db"
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        store = cls(db.connect(path), path, host)
        store.migrate()
        return store

    def new_run_id(self) -> str:
        """A run id; on a shared database it names the host that executes the run (r-HOST-xxxxxxxxxx)."""
        return new_id(f"r-{self.host}-" if self.shared else "r-")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def migrate(self) -> None:
        db.migrate(self.conn, MIGRATIONS)

    # -- runs ---------------------------------------------------------------

    def create_run(self, run_id: str, *, agent: str, task: str, model: str, workspace: Path | str, run_dir: Path,
                   parent_id: str | None = None, kind: str = "task", call_id: str | None = None, depth: int = 0,
                   grants: Iterable[str] | None = None) -> None:
        """`call_id`, `depth`, `grants`: a child run, made by its parent's tool call (or workflow step) `call_id`
        and granted exactly `grants` (None: whatever its profile grants)."""
        now = time.time()
        self.conn.execute(
            "INSERT INTO runs (id, parent_id, agent, task, model, status, workspace, run_dir, created_at, updated_at,"
            " kind, call_id, depth, grants, host) VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, parent_id, agent, task, model, str(workspace), str(run_dir), now, now, kind, call_id, depth,
             json.dumps(sorted(grants)) if grants is not None else None, self.host))

    def set_status(self, run_id: str, status: str, *, output: str | None = None, error: str | None = None) -> None:
        self.conn.execute("UPDATE runs SET status=?, output=COALESCE(?, output), error=?, updated_at=? WHERE id=?",
                          (status, output, error, time.time(), run_id))

    def get_run(self, run_id: str) -> StoredRun:
        row = self.conn.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise NotFound(f"no run {run_id!r} (see `sentinel runs`)")
        return _stored_run(row)

    def list_runs(self, limit: int | None = None, status: Iterable[str] | None = None,
                  all_hosts: bool = False) -> list[RunRow]:
        """Runs, the newest first; on a shared database this host's only unless `all_hosts`."""
        sql = "SELECT id, parent_id, depth, kind, agent, task, model, status, created_at, updated_at, host FROM runs"
        where: list[str] = []
        params: list[str | int] = []
        if self.shared and not all_hosts:
            where, params = ["host=?"], [self.host]
        if status:
            statuses = list(status)
            where.append(f"status IN ({','.join('?' * len(statuses))})")
            params += statuses
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC"
        if limit:
            sql += " LIMIT ?"
            params.append(limit)
        return [RunRow(**dict(r)) for r in self.conn.execute(sql, params)]

    def child_for_call(self, parent_id: str, call_id: str) -> StoredRun | None:
        """The child run a parent's tool call (or workflow step) made, if it made one: one per call, ever."""
        row = self.conn.execute("SELECT * FROM runs WHERE parent_id=? AND call_id=?", (parent_id, call_id)).fetchone()
        return _stored_run(row) if row else None

    def children(self, parent_id: str) -> list[dict[str, Any]]:  # untyped: `show`'s JSON as RunDetail carries it
        sql = ("SELECT id, call_id, depth, kind, agent, task, model, status, output, error, created_at FROM runs"
               " WHERE parent_id=? ORDER BY created_at, rowid")
        return [dict(r) for r in self.conn.execute(sql, (parent_id,))]

    def descendants(self, run_id: str) -> list[StoredRun]:
        """Every run below this one (its children, theirs, and so on), each once, a parent before its children."""
        found: list[StoredRun] = []
        seen, level = {run_id}, [run_id]
        while level:
            marks = ",".join("?" * len(level))
            rows = [_stored_run(r) for r in self.conn.execute(
                f"SELECT * FROM runs WHERE parent_id IN ({marks}) ORDER BY created_at, rowid", level)]
            rows = [r for r in rows if r["id"] not in seen]
            seen.update(r["id"] for r in rows)
            found += rows
            level = [r["id"] for r in rows]
        return found

    def grants_of(self, run_id: str) -> list[str] | None:
        """The tools a child run was granted when its parent made it; None for a head run."""
        value = self.get_run(run_id).get("grants")
        return json.loads(value) if value is not None else None

    def parent_chain(self, run_id: str) -> list[str]:
        """The ids above a run, its parent first, up to the head run."""
        chain: list[str] = []
        parent = self.get_run(run_id).get("parent_id")
        while parent and parent not in chain:
            chain.append(parent)
            parent = self.get_run(parent).get("parent_id")
        return chain

    def pending_listing(self, run_id: str | None = None, *, user: str | None = None,
                        all_hosts: bool = True) -> list[ApprovalRow]:
        """Pending approvals as a person reviews them: each with its run's parent chain, its workspace, its host
        and the Linux user its call would run as (`user` for runs the registry names none for: local mode's
        own). On a shared database, `all_hosts=False` keeps this host's runs only."""
        out = []
        for approval in self.pending_approvals(run_id):
            run = self.get_run(approval.run_id)
            if self.shared and not all_hosts and run.get("host") != self.host:
                continue
            asker = {"client": run["agent"]} if run.get("kind") == "ask" else {}  # a coding agent's ask (asks.py)
            out.append(ApprovalRow.from_dict({**approval.public(), "parents": [*self.parent_chain(approval.run_id)],
                                              "workspace": run["workspace"], "user": run.get("user") or user,
                                              "host": run.get("host"), **asker}))
        return out

    def waited_approvals(self, run_id: str) -> list["Approval"]:
        """The pending approvals of a run's descendants: what a run waiting on its child waits for (a child
        that ended waits for nothing, though it may ask whether to keep it: `save_agent`)."""
        found: list[Approval] = []
        for child in self.children(run_id):
            if child["status"] not in TERMINAL:
                found += self.pending_approvals(child["id"]) + self.waited_approvals(child["id"])
        return found

    def list_sessions(self, limit: int | None = None) -> list[SessionRow]:
        """Chat sessions, the most recently active first; `title` is the first message."""
        sql = ("SELECT id, agent, user, model, status, task AS title, error, created_at, updated_at FROM runs"
               " WHERE kind='chat' ORDER BY updated_at DESC")
        return [SessionRow(**dict(r))
                for r in self.conn.execute(sql + (" LIMIT ?" if limit else ""), [limit] if limit else [])]

    def set_model(self, run_id: str, model: str) -> None:
        self.conn.execute("UPDATE runs SET model=?, updated_at=? WHERE id=?", (model, time.time(), run_id))

    # -- decisions ----------------------------------------------------------

    def record_decision(self, run_id: str, call_id: str, decision: JSONObject) -> JSONObject:
        """Record a call's decision unless it has one; returns the one that stands (the first)."""
        self.conn.execute("INSERT INTO decisions (run_id, call_id, outcome, decision, t) VALUES (?, ?, ?, ?, ?)"
                          " ON CONFLICT (run_id, call_id) DO NOTHING",
                          (run_id, call_id, decision["outcome"], json.dumps({**decision, "call_id": call_id}),
                           time.time()))
        stood = self.decision_for_call(run_id, call_id)
        assert stood is not None
        return stood

    def decision_for_call(self, run_id: str, call_id: str) -> JSONObject | None:
        row = self.conn.execute("SELECT decision FROM decisions WHERE run_id=? AND call_id=?",
                                (run_id, call_id)).fetchone()
        return json.loads(row[0]) if row else None

    def verdicts(self, run_id: str) -> list[JSONObject]:
        """Each decided call of a run with its operator resolution, in order (what `show` reports)."""
        out: list[JSONObject] = []
        for row in self.conn.execute("SELECT decision FROM decisions WHERE run_id=? ORDER BY t, rowid", (run_id,)):
            d = json.loads(row[0])
            approval = self.approval_for_call(run_id, d["call_id"])
            out.append({"call_id": d["call_id"], "tool": d.get("tool"), "arguments": d.get("arguments"),
                        "outcome": d.get("outcome"), "reason": d.get("reason"), "layers": d.get("layers", []),
                        "approval": _resolution(approval), **named(d.get("tool") or "")})
        return out

    # -- approvals ----------------------------------------------------------

    def submit_approval(self, run_id: str, call_id: str, tool: str, arguments: JSONObject, reason: str,
                        ttl_s: float | None = None, code: dict[str, str] | None = None,
                        code_sha256: str | None = None) -> Approval:
        """Enqueue (or find) the approval for one tool call: a duplicate submit returns the first."""
        now = time.time()
        self.conn.execute(
            "INSERT INTO approvals (id, run_id, call_id, tool, arguments, digest, reason, status, created_at, expires_at,"
            " code, code_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?) ON CONFLICT (run_id, call_id) DO NOTHING",
            (new_id("a-"), run_id, call_id, tool, json.dumps(arguments, sort_keys=True),
             call_digest(tool, arguments, code_sha256), reason, now, now + ttl_s if ttl_s else None,
             json.dumps(code) if code is not None else None, code_sha256))
        row = self.conn.execute("SELECT * FROM approvals WHERE run_id=? AND call_id=?", (run_id, call_id)).fetchone()
        return _approval(row)

    def get_approval(self, approval_id: str) -> Approval:
        row = self.conn.execute("SELECT * FROM approvals WHERE id=?", (approval_id,)).fetchone()
        if row is None:
            raise NotFound(f"no approval {approval_id!r} (see `sentinel approvals`)")
        return _approval(row)

    def approval_for_call(self, run_id: str, call_id: str) -> Approval | None:
        row = self.conn.execute("SELECT * FROM approvals WHERE run_id=? AND call_id=?", (run_id, call_id)).fetchone()
        return _approval(row) if row else None

    def pending_approvals(self, run_id: str | None = None) -> list[Approval]:
        self.expire()
        sql, params = "SELECT * FROM approvals WHERE status='pending'", []
        if run_id:
            sql, params = sql + " AND run_id=?", [run_id]
        return [_approval(r) for r in self.conn.execute(sql + " ORDER BY created_at", params)]

    def expire(self) -> None:
        self.conn.execute("UPDATE approvals SET status='expired', resolved_at=? WHERE status='pending'"
                          " AND expires_at IS NOT NULL AND expires_at <= ?", (time.time(), time.time()))

    def resolve(self, approval_id: str, approved: bool, by: str, reason: str = "",
                digest: str | None = None, *, trusts: bool = False) -> Approval:
        """Approve or deny a pending approval; exactly one resolver wins, the rest get a UsageError.

        `digest`: the call digest the approver was shown; a different one (the call is not what they saw)
        resolves nothing. `trusts`: whether approving an agent-authored tool (or an MCP listing) also trusts
        its code hash for the agent's later runs. Only an operator's approval does (sentinel/agents/trust.py),
        so only the callers that know the decider is one say so: the operator socket, local mode's own engine.
        An approval from the agent door or through a one-tap link lets that one call run and trusts nothing."""
        self.expire()
        sql, params = ("UPDATE approvals SET status=?, resolved_at=?, resolved_by=?, resolution_reason=?"
                       " WHERE id=? AND status='pending'",
                       [ApprovalStatus.APPROVED if approved else ApprovalStatus.DENIED, time.time(), by, reason,
                        approval_id])
        if digest is not None:
            sql, params = sql + " AND digest=?", params + [digest]
        cur = self.conn.execute(sql, params)
        approval = self.get_approval(approval_id)
        if cur.rowcount != 1:
            if approval.status == ApprovalStatus.PENDING:
                raise UsageError(f"approval {approval_id}: the digest shown ({str(digest)[:12]}…) is not the "
                                 f"call's ({approval.digest[:12]}…); reload and decide again")
            raise UsageError(f"approval {approval_id} is {approval.status}, not pending")
        db.announce(self.conn, approval.run_id)  # on a shared store, the run's own host hears of it at once
        if approved and approval.code_sha256 and trusts:
            self.trust_tool(self.trust_agent(approval.run_id), approval.tool, approval.code_sha256, by)
        return approval

    def approval_id(self, ident: str) -> str:
        """An approval id, or a run id with exactly one pending approval."""
        if ident.startswith("a-"):
            return ident
        pending = self.pending_approvals(ident)
        if not pending:
            self.get_run(ident)  # NotFound for an unknown id
            raise UsageError(f"run {ident} has no pending approval")
        if len(pending) > 1:
            raise UsageError(f"run {ident} has {len(pending)} pending approvals; name one: "
                             + ", ".join(a.id for a in pending))
        return pending[0].id

    def cancel_approvals(self, run_id: str) -> None:
        """A cancelled run's unresolved or unexecuted approvals can never be consumed."""
        self.conn.execute("UPDATE approvals SET status='cancelled', resolved_at=? WHERE run_id=?"
                          " AND status IN ('pending', 'approved')", (time.time(), run_id))

    def consume(self, approval_id: str, digest: str) -> bool:
        """Mark an approved call as executed; True exactly once, and only for the approved payload."""
        cur = self.conn.execute(
            "UPDATE approvals SET status='consumed', consumed_at=? WHERE id=? AND status='approved' AND digest=?",
            (time.time(), approval_id, digest))
        return cur.rowcount == 1

    # -- tool trust (decision layer 5, docs/architecture.md) -------------------------------------------------------------

    def trust_agent(self, run_id: str) -> str:
        row = self.get_run(run_id)
        return trust_key(row["agent"], row.get("user"))

    def trust_tool(self, agent: str, tool: str, code_sha256: str, by: str) -> None:
        """Record an operator's trust in one exact code hash of an agent's tool (approving does this)."""
        self.conn.execute("INSERT INTO tool_trust (agent, tool, code_sha256, trusted_by, trusted_at)"
                          " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", (agent, tool, code_sha256, by, time.time()))
        self.audit("tool_trusted", {"agent": agent, "tool": tool, "code_sha256": code_sha256, "by": by})

    def tool_trusted(self, run_id: str, tool: str, code_sha256: str) -> bool:
        """Does the agent of this run trust this exact code of `tool`? (An MCP tool: is its server's listing the
        one `sentinel mcp trust` pinned, or did an approval trust it for this agent?)"""
        row = self.conn.execute("SELECT 1 FROM tool_trust WHERE agent=? AND tool=? AND code_sha256=?",
                                (self.trust_agent(run_id), tool, code_sha256)).fetchone()
        if row is None and (mcp := split_name(tool)):
            pin = self.mcp_trust(mcp[0])
            return pin is not None and pin["sha256"] == code_sha256
        return row is not None

    def trust_mcp(self, server: str, sha256: str, document: str, by: str) -> None:
        """Pin an MCP server: its listing (`document`, JSON) and that listing's SHA-256 (`sentinel mcp trust`)."""
        self.conn.execute("INSERT INTO mcp_trust (server, sha256, document, trusted_by, trusted_at) VALUES (?, ?, ?, ?, ?)"
                          " ON CONFLICT (server) DO UPDATE SET sha256=excluded.sha256, document=excluded.document,"
                          " trusted_by=excluded.trusted_by, trusted_at=excluded.trusted_at",
                          (server, sha256, document, by, time.time()))
        self.audit("mcp_trusted", {"server": server, "sha256": sha256, "by": by})

    def mcp_trust(self, server: str) -> JSONObject | None:
        row = self.conn.execute("SELECT server, sha256, document, trusted_by, trusted_at FROM mcp_trust WHERE server=?",
                                (server,)).fetchone()
        return dict(row) if row else None

    def untrust_mcp(self, server: str, by: str) -> bool:
        count = self.conn.execute("DELETE FROM mcp_trust WHERE server=?", (server,)).rowcount
        if count:
            self.audit("mcp_untrusted", {"server": server, "by": by})
        return bool(count)

    def trusted_tools(self, agent: str | None = None) -> list[JSONObject]:
        sql, params = "SELECT agent, tool, code_sha256, trusted_by, trusted_at FROM tool_trust", []
        if agent:
            sql, params = sql + " WHERE agent=?", [agent]
        return [dict(r) for r in self.conn.execute(sql + " ORDER BY agent, tool, trusted_at", params)]

    def revoke_trust(self, tool: str, *, agent: str | None = None, code_sha256: str | None = None,
                     by: str = "") -> int:
        """Forget trusted hashes of `tool` (of one agent, one hash, or all); the next call pauses again."""
        sql, params = "DELETE FROM tool_trust WHERE tool=?", [tool]
        for column, value in (("agent", agent), ("code_sha256", code_sha256)):
            if value:
                sql, params = sql + f" AND {column}=?", params + [value]
        count = self.conn.execute(sql, params).rowcount
        self.audit("tool_trust_revoked", {"agent": agent, "tool": tool, "code_sha256": code_sha256, "by": by,
                                          "revoked": count})
        return count

    # -- relay contracts (sentinel/engine/relay.py): what a hook session's tools reach -------------------------

    def relay_notify(self, run_id: str, message: str, targets: list[str] | None = None) -> JSONObject:
        """Fulfil the relay contract of hook session `run_id`; `targets` names configured delivery targets."""
        from sentinel.engine import relay

        return relay.notify(self.conn, run_id, message, targets)

    def relay_escalate(self, run_id: str, reason: str, severity: str) -> JSONObject:
        from sentinel.engine import relay

        return relay.escalate(self.conn, run_id, reason, severity)

    # -- audit ----------------------------------------------------------------

    def audit(self, kind: str, record: Mapping[str, object]) -> None:
        self.conn.execute("INSERT INTO audit (t, kind, run_id, record) VALUES (?, ?, ?, ?)",
                          (time.time(), kind, record.get("run_id"), json.dumps(record, sort_keys=True, default=str)))

    def audit_records(self, run_id: str | None = None) -> list[JSONObject]:
        sql, params = "SELECT t, kind, record FROM audit", []
        if run_id:
            sql, params = sql + " WHERE run_id=?", [run_id]
        return [{"t": r["t"], "kind": r["kind"], **json.loads(r["record"])}
                for r in self.conn.execute(sql + " ORDER BY id", params)]


def _resolution(approval: Approval | None) -> JSONObject | None:
    """An approval as `show` reports it: None while there is none or it is pending."""
    if approval is None or approval.status == ApprovalStatus.PENDING:
        return None
    return {"approval_id": approval.id, "approved": approval.approved,
            "status": approval.status, "reason": approval.resolution_reason or "", "by": approval.resolved_by}


def _stored_run(row: Any) -> StoredRun:  # untyped: a driver's row (sqlite3.Row or db.Row), read by column name
    """`SELECT *` of `runs`: the migrations make exactly StoredRun's columns, each of the type it declares."""
    return cast(StoredRun, dict(row))


def _approval(row: Any) -> Approval:  # untyped: a driver's row of `approvals`, read by column name
    return Approval(row["id"], row["run_id"], row["call_id"], row["tool"], json.loads(row["arguments"]),
                    row["digest"], row["reason"], row["status"], row["created_at"], row["resolved_by"],
                    row["resolution_reason"], json.loads(row["code"]) if row["code"] else None, row["code_sha256"])
