"""The agent's own user, outside any sandbox, cannot take over its worker: the worker is non-dumpable from
its first instruction (its interpreter is execute-only to that user), its environment holds no token, and
nothing the agent plants in its home is imported. The channel accepts only what a worker may claim."""

from __future__ import annotations

import json
import os
import pwd
import sys
import time
from pathlib import Path

import pytest

from sentinel.engine.store import Store
from sentinel.supervisor import registry
from sentinel.supervisor.workers import WORKER_AUDIT_KINDS, Worker, handle
from sx_helpers import as_user, serve_model, write_as

PROBE = r"""
import ctypes, errno, json, os, sys
pid = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
out = {}

def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, str(exc.errno))

attempt("environ", lambda: open(f"/proc/{pid}/environ", "rb").read())
attempt("mem", lambda: open(f"/proc/{pid}/mem", "rb").read(1))
attempt("fd_dir", lambda: os.listdir(f"/proc/{pid}/fd"))
attempt("fd0", lambda: os.open(f"/proc/{pid}/fd/0", os.O_RDONLY))

def getfd():
    pidfd = os.pidfd_open(pid)
    for target in range(0, 16):
        got = libc.syscall(438, pidfd, target, 0)          # pidfd_getfd
        if got >= 0:
            raise SystemExit(f"took fd {target} of the worker")
        if ctypes.get_errno() != errno.EBADF:
            raise OSError(ctypes.get_errno(), "pidfd_getfd")
    raise OSError(errno.EBADF, "no fd")
attempt("pidfd_getfd", getfd)

def ptrace(request):
    if libc.ptrace(request, pid, None, None) != 0:
        raise OSError(ctypes.get_errno(), "ptrace")
    libc.ptrace(17, pid, None, None)                       # PTRACE_DETACH (only if it ever attached)
attempt("ptrace_attach", lambda: ptrace(16))               # PTRACE_ATTACH
attempt("ptrace_seize", lambda: ptrace(0x4206))            # PTRACE_SEIZE
class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

def vm_read():
    buf = ctypes.create_string_buffer(16)
    local = Iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
    remote = Iovec(0x400000, 16)
    if libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) < 0:
        raise OSError(ctypes.get_errno(), "process_vm_readv")
attempt("process_vm_readv", vm_read)
print(json.dumps(out))
"""


def _worker_pid(uid: int, run_hint: str = "sentinel.worker", timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                if os.stat(f"/proc/{entry}").st_uid in (uid, 0) and run_hint in cmdline and \
                        _uid_of(int(entry)) == uid:
                    return int(entry)
            except OSError:
                continue
        time.sleep(0.1)
    raise AssertionError("no worker process appeared")


def _uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    return -1


@pytest.mark.root
def test_the_agents_own_user_cannot_read_trace_or_rob_its_worker(system, make_agent, supervisor, scripted_server):
    from sentinel.client.system import SystemEngine

    name = make_agent()
    pw = pwd.getpwnam(name)
    server = scripted_server([{"delay_ms": 6000, "content": "thinking"}])
    serve_model(system.etc, server)
    supervisor()
    import threading

    result: list = []
    thread = threading.Thread(target=lambda: result.append(SystemEngine(system.socket).start("wait", agent=name)))
    thread.start()
    pid = _worker_pid(pw.pw_uid)
    environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")  # root may look: no token there
    assert "smz_" not in environ and "TOKEN" not in environ and "MUZZLE" not in environ
    probe = as_user(name, sys.executable, "-c", PROBE, str(pid))
    assert probe.returncode == 0, probe.stderr
    refused = json.loads(probe.stdout)
    assert all(v in ("EPERM", "EACCES") for v in refused.values()), refused
    thread.join(60)
    assert result and result[0].status == "done_unverified" and result[0].output == "thinking"  # the run itself was unharmed


@pytest.mark.root
def test_a_module_planted_in_the_agents_home_is_never_imported(system, make_agent, sentinel_cmd, supervisor,
                                                               scripted_server):
    name = make_agent()
    home = Path(pwd.getpwnam(name).pw_dir)
    marker = home / "planted-ran"
    for rel in ("sentinel/__init__.py", "sentinel/worker/__init__.py", "sentinel/worker/__main__.py"):
        as_user(name, "mkdir", "-p", str((home / rel).parent))
        write_as(name, home / rel, f"open({str(marker)!r}, 'w').write('taken over')\n")
    server = scripted_server(["fine"])
    serve_model(system.etc, server)
    supervisor()
    out = json.loads(sentinel_cmd("run", "hi", "--agent", name, "--json", check=4).stdout)
    assert out["status"] == "done_unverified" and not marker.exists()


# -- the channel: only what a worker may claim (no root needed) ----------------------------------------------

@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "sup.db")
    s.create_run("r-mine", agent="a", task="t", model="fake/m", workspace=tmp_path, run_dir=tmp_path / "r")
    yield s
    s.close()


@pytest.fixture
def worker():
    agent = registry.Agent("a", "A", "a", 1234, "/home/a", "setup", 0.0)
    return Worker("r-mine", agent, 1234, "/home/a", spawned=None, greeting={"id": "r-mine", "secret": "smz_x"})


def ask(store, worker, op, **args):
    return handle(store, worker, {"op": op, **args}, lambda run_id, event: None)


@pytest.mark.parametrize("kind", ["approval_resolved", "run_started", "operator_refused", "worker_started",
                                  "agent_setup", "tool_trusted", "x" * 100])
def test_a_worker_cannot_write_an_operators_audit_record(store, worker, kind):
    answer = ask(store, worker, "audit", kind=kind, record={"approved": True, "by": "root", "run_id": "r-mine"})
    assert answer["kind"] == "denied"
    assert [r["kind"] for r in store.audit_records("r-mine")] == ["worker_refused"]


def test_a_workers_own_audit_record_is_stamped_as_its_own(store, worker):
    assert ask(store, worker, "audit", kind=sorted(WORKER_AUDIT_KINDS)[0],
               record={"source": "supervisor", "run_id": "r-other", "agent": "root", "x": 1})["ok"]
    [record] = store.audit_records("r-mine")
    assert (record["source"], record["run_id"], record["agent"]) == ("worker", "r-mine", "a")


def test_a_worker_cannot_change_its_runs_model_or_say_hello_twice(store, worker):
    assert ask(store, worker, "created", model="openai/gpt-5", workspace="/")["kind"] == "denied"
    assert ask(store, worker, "set_model", model="openai/gpt-5")["kind"] == "denied"
    assert store.get_run("r-mine")["model"] == "fake/m" and str(store.get_run("r-mine")["workspace"]) != "/"
    assert ask(store, worker, "hello")["result"]["secret"] == "smz_x"
    assert ask(store, worker, "hello")["kind"] == "denied"  # the token is handed over once


@pytest.mark.parametrize("msg", [{"op": "set_status", "status": "done", "output": {"x": 1}},
                                 {"op": "set_status", "status": "cancelled"},
                                 {"op": "error", "message": ["x"]}, {"op": "audit", "kind": "decision", "record": "x"},
                                 {"op": "audit", "kind": "decision", "record": {"big": "x" * (300 * 1024)}},
                                 {"op": "consume"}, {"op": "event", "event": ["garbage"]}, {"op": 5}])
def test_garbage_on_the_channel_is_refused_and_changes_nothing(store, worker, msg):
    answer = handle(store, worker, msg, lambda run_id, event: None)
    assert answer is None or answer["ok"] is False
    assert store.get_run("r-mine")["status"] == "running"
