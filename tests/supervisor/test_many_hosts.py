"""Many hosts, one inbox: two supervisors (two state dirs, two agent users) on one PostgreSQL database
(docs/system-mode.md, many hosts). Each executes its own host's runs; a decision made through either resumes the
run on its own host, exactly once, even when either supervisor is killed with -9 around the decision."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from sx_helpers import PY, SupervisorProc, _run, free_port, operator_config, serve_model

pytestmark = [pytest.mark.root, pytest.mark.timeout(900)]  # two supervisors (and initdb) on busy cores

SCRIPT = [
    {"delay_ms": 1500, "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]},
    "All done.",
]


class Host:
    """One host's supervisor environment: its own state, etc and socket dirs, Muzzle user and port."""

    def __init__(self, name: str, env: dict[str, str], base: Path, users: list[str]):
        self.name, self.env, self.base, self.users = name, env, base, users
        self.socket = Path(env["SENTINEL_SOCKET"])
        self.etc = Path(env["SENTINEL_ETC_DIR"])
        self.proc: SupervisorProc | None = None

    def cmd(self, *args: str, check: int | None = None) -> subprocess.CompletedProcess:
        proc = _run(PY, "-m", "sentinel", *args, env={**os.environ, **self.env}, timeout=60)
        if check is not None:
            died = self.proc.proc.stderr.read() if self.proc and self.proc.proc.poll() is not None else ""
            assert proc.returncode == check, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}\n{died}"
        return proc

    def json(self, *args: str) -> object:
        return json.loads(self.cmd(*args, "--json", check=0).stdout)

    def start(self) -> "Host":
        self.proc = SupervisorProc(self).start(wait_s=120)  # two supervisors and their Muzzles on busy cores
        return self

    def agent(self) -> str:
        from sentinel.supervisor.identity import normalize

        display = f"Sx {secrets.token_hex(3)}"
        self.users.append(normalize(display))
        self.cmd("setup", "--name", display, check=0)
        return normalize(display)

    def status(self, run_id: str) -> str:
        return str(self.json("show", run_id)["status"])  # type: ignore[index]

    def wait(self, run_id: str, status: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while (now := self.status(run_id)) != status:
            assert time.monotonic() < deadline, f"run {run_id} is {now}, not {status}"
            time.sleep(0.2)


@pytest.fixture
def model(scripted_server):
    return scripted_server(SCRIPT * 3)


@pytest.fixture
def hosts(system, pg_url, model):
    """Hosts `a` (the `system` fixture's environment) and `b` (a second one), both on one fresh database and one
    scripted model; stopped afterwards."""
    server = model
    made = []
    for name in ("hosta", "hostb"):
        if name == "hosta":
            env, base = dict(system.env), system.base
        else:
            base = system.base / "b"
            (base / "etc").mkdir(parents=True, mode=0o755)
            (base / "run").mkdir(mode=0o755)
            os.chmod(base, 0o755)
            env = {**system.env, "SENTINEL_SYSTEM_DIR": str(base / "sys"), "SENTINEL_ETC_DIR": str(base / "etc"),
                   "SENTINEL_SOCKET": str(base / "run" / "sentinel.sock"),
                   "SENTINEL_MUZZLE_USER": f"sxmz{secrets.token_hex(3)}"}
            system.users.append(env["SENTINEL_MUZZLE_USER"])
            operator_config(base / "etc", {"muzzle": {"port": free_port(), "state_dir": str(base / "muzzle")}})
        operator_config(Path(env["SENTINEL_ETC_DIR"]), {"store": pg_url, "system": {"host": name}})
        serve_model(Path(env["SENTINEL_ETC_DIR"]), server)
        made.append(Host(name, env, base, system.users))
    yield made
    for host in made:
        if host.proc is not None:
            host.proc.stop()


def _counter(user: str) -> str:
    path = Path(pwd.getpwnam(user).pw_dir) / ".sentinel" / "workspace" / "counter.txt"
    return path.read_text() if path.exists() else ""


def _workers_started(host, run_id: str) -> int:
    from sentinel.engine.store import Store

    with Store.open(_url(host)) as store:
        return sum(1 for r in store.audit_records(run_id) if r["kind"] == "worker_started")


def _url(host: Host) -> str:
    import yaml

    return str(yaml.safe_load(host.etc.joinpath("config.yaml").read_text())["store"])


def _paused_on_b(a: Host, b: Host) -> tuple[str, str]:
    """A run of host b's agent, paused for approval of its bash call."""
    user = b.agent()  # (setup also makes b's Muzzle user: its supervisor starts Muzzle at once)
    a.start()
    b.start()
    from sentinel.client.system import SystemEngine

    run_id = str(SystemEngine(b.socket).call("start", task="write ran to counter.txt", agent=user)["id"])
    b.wait(run_id, "waiting_approval")
    return user, run_id


def test_an_approval_through_a_resumes_bs_run_exactly_once(hosts):
    a, b = hosts
    user, run_id = _paused_on_b(a, b)
    assert run_id.startswith("r-hostb-")
    assert a.json("approvals") == []  # a's own host has none waiting
    (listed,) = a.json("approvals", "--all-hosts")  # type: ignore[misc]
    assert listed["run_id"] == run_id and listed["host"] == "hostb"
    shown = a.cmd("runs", "--all-hosts", check=0).stdout
    assert run_id in shown and "hostb" in shown
    assert [r["host"] for r in a.json("runs", "--all-hosts")] == ["hostb"]  # type: ignore[union-attr,index]
    assert a.json("runs") == []

    approved = a.cmd("approve", run_id, "--json", check=0)  # followed from a until it ends on b
    assert json.loads(approved.stdout)["status"] == "done"
    assert _counter(user) == "ran\n"
    assert _workers_started(b, run_id) == 2  # started, then resumed once: by b, never by a
    time.sleep(1.0)  # a late or repeated notification resumes nothing more
    assert _counter(user) == "ran\n" and _workers_started(b, run_id) == 2
    a.cmd("approve", run_id, check=2)  # nothing left to decide, from either host


def test_kill9_of_the_owner_before_the_decision_loses_nothing(hosts):
    a, b = hosts
    user, run_id = _paused_on_b(a, b)
    b.proc.kill9()
    approve = subprocess.Popen([PY, "-m", "sentinel", "approve", run_id, "--json"], env={**os.environ, **a.env},
                               stdout=subprocess.PIPE, text=True)  # recorded in the shared database; b is down
    time.sleep(2.0)
    assert a.status(run_id) == "waiting_approval" and _workers_started(b, run_id) == 1
    b.start()  # on start, b resumes its runs whose approvals were decided
    out, _ = approve.communicate(timeout=60)
    assert json.loads(out)["status"] == "done"  # the approver heard how it ended once b resumed it
    assert _counter(user) == "ran\n" and _workers_started(b, run_id) == 2


def test_kill9_of_the_approver_right_after_the_decision_loses_nothing(hosts):
    a, b = hosts
    user, run_id = _paused_on_b(a, b)
    approve = subprocess.Popen([PY, "-m", "sentinel", "approve", run_id], env={**os.environ, **a.env},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while a.json("approvals", "--all-hosts") and time.monotonic() < deadline:
        time.sleep(0.05)
    a.proc.kill9()  # the decision is recorded: whatever a was doing with it, b resumes the run
    approve.wait(20)
    b.wait(run_id, "done")
    a.start()  # a's recovery touches only its own host's runs
    time.sleep(1.0)
    assert b.status(run_id) == "done"
    assert _counter(user) == "ran\n" and _workers_started(b, run_id) == 2


def _cut(pg_server, url: str, reachable: bool) -> None:
    """Make the test database refuse every session (and end those it has), or accept them again."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS {'true' if reachable else 'false'}")
        if not reachable:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname=%s", (name,))


def test_store_unreachable_pauses_runs_status_says_so_and_nothing_is_lost(hosts, pg_server, pg_url, model):
    a, _ = hosts
    user = a.agent()
    a.start()
    from sentinel.client.system import SystemEngine

    run_id = str(SystemEngine(a.socket).call("start", task="write ran to counter.txt", agent=user)["id"])
    deadline = time.monotonic() + 20
    while not model.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert model.requests, "the worker never called the model"
    _cut(pg_server, pg_url, reachable=False)  # while the model is answering: its next call cannot be decided
    try:
        time.sleep(4.0)
        status = a.json("status")
        assert status["store"]["reachable"] is False and "store" in status["store"]["error"]  # type: ignore[index]
        assert "the store does not answer" in a.cmd("status", check=0).stdout
        assert a.cmd("approve", run_id).returncode != 0  # nothing can be decided meanwhile
        assert _counter(user) == ""  # no tool call ran undecided
    finally:
        _cut(pg_server, pg_url, reachable=True)
    deadline = time.monotonic() + 30
    while a.json("status")["store"].get("reachable") is False:  # type: ignore[index]
        assert time.monotonic() < deadline, "the supervisor never reconnected"
        time.sleep(0.2)
    a.wait(run_id, "waiting_approval")  # picked up again: the bash call waits for its decision
    assert _counter(user) == ""
    a.cmd("approve", run_id, check=0)
    assert a.status(run_id) == "done" and _counter(user) == "ran\n"
