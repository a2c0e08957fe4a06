"""The approval queue's invariants, across separate processes and connections, on both backends: SQLite and a
real PostgreSQL server (tests/pgserver.py)."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from sentinel.engine import db
from sentinel.engine.store import MIGRATIONS, Store, call_digest
from sentinel.errors import UsageError

pytestmark = pytest.mark.timeout(900)  # the first PostgreSQL test starts the server (initdb) on busy cores


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request):
    return request.param


@pytest.fixture
def fresh(request, backend, tmp_path):
    """() -> where a new, empty store goes: a SQLite file, or a new database on the test PostgreSQL server."""
    if backend == "sqlite":
        return iter(tmp_path / f"state-{i}.db" for i in range(1000)).__next__
    server = request.getfixturevalue("pg_server")
    made: list[str] = []
    request.addfinalizer(lambda: [server.drop_database(url) for url in made])
    return lambda: made.append(server.create_database()) or made[-1]


@pytest.fixture
def target(fresh):
    return fresh()


@pytest.fixture
def store(target):
    s = Store.open(target)
    yield s
    s.close()


def _approve(path, approval_id, who, barrier, results):
    s = Store.open(path)
    barrier.wait()
    try:
        s.resolve(approval_id, True, who)
        results.put(who)
    except UsageError:
        results.put(None)
    finally:
        s.close()


def test_two_concurrent_approvers_exactly_one_wins(store):
    a = store.submit_approval("r-1", "call_1", "bash", {"command": "make"}, "needs approval")
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(6), ctx.Queue()
    procs = [ctx.Process(target=_approve, args=(store.path, a.id, f"op{i}", barrier, results)) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    winners = [w for w in (results.get(timeout=5) for _ in procs) if w]
    assert len(winners) == 1
    assert store.get_approval(a.id).resolved_by == winners[0]


def test_duplicate_submit_returns_the_first_approval(store):
    first = store.submit_approval("r-1", "call_1", "bash", {"command": "make"}, "x")
    second = store.submit_approval("r-1", "call_1", "bash", {"command": "make"}, "x")
    assert first.id == second.id and len(store.pending_approvals()) == 1


def test_consumed_exactly_once_and_only_for_the_approved_payload(store):
    args = {"command": "make"}
    a = store.submit_approval("r-1", "call_1", "bash", args, "x")
    assert not store.consume(a.id, call_digest("bash", args))  # not approved yet
    store.resolve(a.id, True, "root")
    assert not store.consume(a.id, call_digest("bash", {"command": "make install"}))
    assert store.consume(a.id, call_digest("bash", args))
    assert not store.consume(a.id, call_digest("bash", args))


def test_denied_and_expired_approvals_can_never_be_consumed(store):
    args = {"command": "make"}
    denied = store.submit_approval("r-1", "call_1", "bash", args, "x")
    store.resolve(denied.id, False, "root", "no")
    with pytest.raises(UsageError, match="denied"):
        store.resolve(denied.id, True, "root")
    assert not store.consume(denied.id, call_digest("bash", args))
    expiring = store.submit_approval("r-1", "call_2", "bash", args, "x", ttl_s=0.01)
    time.sleep(0.05)
    with pytest.raises(UsageError, match="expired"):
        store.resolve(expiring.id, True, "root")
    assert not store.consume(expiring.id, call_digest("bash", args))


def test_pending_approvals_persist_across_reopen(target):
    path = target
    with Store.open(path) as s:
        a = s.submit_approval("r-1", "call_1", "bash", {"command": "make"}, "x")
    with Store.open(path) as s:
        assert [p.id for p in s.pending_approvals()] == [a.id]


def test_migrations_are_named_and_applied_once(target):
    path = target
    Store.open(path).close()
    Store.open(path).close()
    conn = db.connect(path)
    names = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY name")]
    conn.close()
    assert names[:3] == ["001_runs", "002_approvals", "003_audit"]
    assert names == sorted(name for name, _ in MIGRATIONS)


def _open_fresh(path, barrier, results):
    barrier.wait()
    try:
        Store.open(path).close()
        results.put(None)
    except Exception as exc:  # noqa: BLE001 - whatever it is, the test reports it
        results.put(repr(exc))


def test_commands_started_at_once_on_a_new_home_all_open_the_store(fresh, backend):
    """`sentinel run` in the background and `sentinel runs` at once on a fresh home: both open the new database
    (turning it to WAL takes a lock SQLite does not wait for)."""
    ctx = multiprocessing.get_context("fork")
    failures = []
    for _ in range(20 if backend == "sqlite" else 5):  # (SQLite's WAL switch is the flaky race)
        barrier, results = ctx.Barrier(4), ctx.Queue()
        path = fresh()
        procs = [ctx.Process(target=_open_fresh, args=(path, barrier, results)) for _ in range(4)]
        for p in procs:
            p.start()
        failures += [f for f in (results.get(timeout=30) for _ in procs) if f]
        for p in procs:
            p.join(30)
    assert failures == []


def test_listings_are_typed_rows_whose_dicts_are_the_json_they_always_were(store, tmp_path):
    """`runs`, `sessions` and `pending` give typed rows; `to_dict` is what `--json` prints and the supervisor
    sends, key for key and in the same order, on both backends."""
    store.create_run("r-head", agent="a", task="t", model="m", workspace=tmp_path, run_dir=tmp_path / "r-head")
    store.create_run("r-kid", agent="b", task="sub", model="m", workspace=tmp_path, run_dir=tmp_path / "r-kid",
                     parent_id="r-head", call_id="call_1", depth=1)
    store.create_run("r-chat", agent="a", task="hello", model="m", workspace=tmp_path, run_dir=tmp_path / "c",
                     kind="chat")
    kid = next(r for r in store.list_runs() if r.id == "r-kid")
    assert (kid.parent_id, kid.depth, kid.status, kid.host) == ("r-head", 1, "running", store.host)
    assert list(kid.to_dict()) == ["id", "parent_id", "depth", "kind", "agent", "task", "model", "status",
                                   "created_at", "updated_at", "host"]
    chat = store.list_sessions()[0]
    assert (chat.id, chat.title) == ("r-chat", "hello")
    assert list(chat.to_dict()) == ["id", "agent", "user", "model", "status", "title", "error", "created_at",
                                    "updated_at"]

    store.submit_approval("r-kid", "call_2", "bash", {"command": "make"}, "needs approval")
    store.submit_approval("r-head", "call_3", "mcp__git__push", {}, "new server",
                          code={"tool.py": "print(1)"}, code_sha256="c" * 64)
    plain, mcp = sorted(store.pending_listing(user="op"), key=lambda a: a.call_id)
    assert (plain.parents, plain.workspace, plain.user, plain.arguments) == (["r-head"], str(tmp_path), "op",
                                                                           {"command": "make"})
    assert list(plain.to_dict()) == ["id", "run_id", "tool", "arguments", "reason", "status", "call_id",
                                     "created_at", "digest", "parents", "workspace", "user", "host"]
    assert list(mcp.to_dict()) == ["id", "run_id", "tool", "arguments", "reason", "status", "call_id", "created_at",
                                   "digest", "code", "code_sha256", "mcp", "parents", "workspace", "user", "host"]
    assert mcp.mcp == {"server": "git", "tool": "push"} and mcp.code == {"tool.py": "print(1)"}


def test_an_approval_status_is_the_enum_and_the_column_and_channel_hold_the_same_text(store):
    """A status read back is ApprovalStatus at every step, while the database and the worker channel still hold
    the plain text (older supervisors and workers read it as before); text that is no status is refused."""
    import dataclasses
    import json

    from sentinel.engine.status import ApprovalStatus
    from sentinel.engine.store import Approval

    args = {"command": "make"}
    a = store.submit_approval("r-1", "call_1", "bash", args, "x")
    seen = [a.status]
    seen.append(store.resolve(a.id, True, "op").status)
    assert store.consume(a.id, call_digest("bash", args))
    consumed = store.get_approval(a.id)
    seen.append(consumed.status)
    assert seen == [ApprovalStatus.PENDING, ApprovalStatus.APPROVED, ApprovalStatus.CONSUMED]
    assert all(type(s) is ApprovalStatus for s in seen) and consumed.approved
    column = store.conn.execute("SELECT status FROM approvals WHERE id=?", (a.id,)).fetchone()[0]
    assert column == "consumed" and type(column) is str
    wire = json.loads(json.dumps(dataclasses.asdict(consumed)))
    assert wire["status"] == "consumed" and Approval(**wire).status is ApprovalStatus.CONSUMED
    with pytest.raises(ValueError):
        Approval(**{**wire, "status": "maybe"})
