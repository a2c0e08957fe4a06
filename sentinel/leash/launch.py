"""The public launch API: `ensure_launcher`, `run_tool` (tool profile, captured output) and `launch` (any profile).

    ensure_launcher()   fork the launcher now, before the caller starts threads (idempotent)
    run_tool(argv, ...) run one tool command under the agent's tool profile; kill its whole tree at
                        exit or timeout; return a ToolResult
    launch(argv, prof)  the same for any Profile, with output captured or the caller's stdio passed
    start(argv, prof)   launch with stdin a pipe the caller writes later; returns a Pending at once
    serve(argv, prof)   launch a long-lived command on the caller's fds (an MCP server); returns a Served

Who the command runs as: when the caller is root and `agent` names a Linux user, that user (system
mode: uid drop, capabilities dropped); as root otherwise, a uid of the tool's own that works in
root's workspace through idmapped mounts (never root: see sentinel/leash/child.py); otherwise the
caller's own uid (local mode). The environment is a minimal one plus `env`, never the caller's.
"""

from __future__ import annotations

import os
import pwd
import select
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from sentinel import frames
from sentinel.errors import UsageError
from sentinel.leash import prepared, privs, wire
from sentinel.leash.errors import LaunchFailed, SandboxUnavailable
from sentinel.leash.profile import DEFAULT_PATH, Profile, tool_profile

_lock = threading.Lock()
_ctl: socket.socket | None = None
_owner = 0
_pid = 0
CANCEL_WAIT_S = 5.0  # how long a cancelled call waits for its keeper to report the command's tree killed
# untyped: benchmarks' per-stage timestamp records, free-form JSON-able dicts
TRACE: list[dict[str, Any]] = []  # benchmarks append a dict here to collect per-stage timestamps of each launch


@dataclass
class ToolResult:
    exit_code: int | None  # None when timed out; negative N when killed by signal N
    output: str            # stdout and stderr merged, truncated with a note
    timed_out: bool = False
    truncated: bool = False
    applied: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unused: bool = False   # start(): the command ended (idle bound, killed) before its stdin was handed over


@dataclass(frozen=True)
class Identity:
    uid: int | None
    gid: int | None
    user: str | None

    @property
    def system(self) -> bool:
        return self.uid is not None


def identity(agent: str | None) -> Identity:
    """System mode (uid drop) only when we are root and the agent is a Linux user."""
    if os.geteuid() != 0 or not agent:
        return Identity(None, None, None)
    try:
        pw = pwd.getpwnam(agent)
    except KeyError:
        return Identity(None, None, None)
    if pw.pw_uid == 0:
        raise UsageError(f"leash: agent user {agent!r} is root; leashed users must be unprivileged")
    return Identity(pw.pw_uid, pw.pw_gid, agent)


def tool_uid() -> int | None:
    """The uid tools run as when this process (root) starts them without an agent user; None when not root."""
    if os.geteuid() != 0:
        return None
    ensure_launcher()
    return privs.tool_uid(_pid)


def ensure_launcher() -> None:
    """Start this process's launcher if it has none (idempotent). Call it early: it returns at once and
    the launcher gets ready in parallel; the first launch waits for it if needed."""
    with _lock:
        if _ctl is None or _owner != os.getpid() or not _alive(_pid):
            _start()


def _start() -> None:
    global _ctl, _owner, _pid
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    parent = os.getpid()
    os.set_inheritable(theirs.fileno(), True)
    try:  # posix_spawn is vfork+exec: safe even when the caller already runs threads
        pid = os.posix_spawn(sys.executable, [sys.executable, "-I", "-B", "-m", "sentinel.leash.launcher", str(theirs.fileno()),
                                              str(parent)], os.environ, setsid=True)
    finally:
        theirs.close()
    if _ctl is not None and _owner == parent:
        _ctl.close()
    _ctl, _owner, _pid = ours, parent, pid


def _alive(pid: int) -> bool:
    """Is our launcher still running? (Reaps it if it has died.)"""
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return False


def _connect() -> socket.socket:
    """A fresh stream socket to a keeper of our own."""
    for attempt in (1, 2):
        ensure_launcher()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with _lock:
                if _ctl is None:
                    raise OSError("the launcher is not running")
                socket.send_fds(_ctl, [b"L"], [theirs.fileno()])
            return ours
        except OSError:
            ours.close()
            if attempt == 2:
                raise LaunchFailed("the Leash launcher is not running and could not be restarted") from None
            _reset()
        finally:
            theirs.close()
    raise AssertionError("unreachable")


def _reset() -> None:
    global _ctl
    with _lock:
        if _ctl is not None:
            _ctl.close()
        _ctl = None


# untyped: the Leash wire spec and the launcher's answer (wire.py): JSON, the answer checked by _result
def request(spec: dict[str, Any], fds: Sequence[int] = ()) -> dict[str, Any]:
    """Send one launch request and wait for its answer (the keeper enforces the timeout)."""
    return _answer(_send(spec, fds))


# untyped: the Leash wire spec (wire.py), JSON the launcher checks on read
def _send(spec: dict[str, Any], fds: Sequence[int]) -> socket.socket:
    conn = _connect()
    try:
        wire.send(conn, spec, fds)
    except (OSError, ConnectionError) as exc:
        conn.close()
        raise LaunchFailed(f"the Leash launcher failed: {exc}") from None
    return conn


# untyped: the launcher's answer, JSON from another process (wire.recv), checked by _result
def _answer(conn: socket.socket) -> dict[str, Any]:
    try:
        answer, _ = wire.recv(conn)
    except (OSError, ConnectionError) as exc:
        raise LaunchFailed(f"the Leash launcher failed: {exc}") from None
    except BaseException:  # Ctrl-C (or a hang-up) while the command runs: it stops with the caller's turn
        _cancel(conn)
        raise
    finally:
        conn.close()
    if answer is None:
        raise LaunchFailed("the Leash launcher exited without answering")
    if "error" in answer:
        if answer.get("kind") == "sandbox":
            raise SandboxUnavailable(answer["error"])
        raise LaunchFailed(f"launch failed: {answer['error']}")
    return answer


def _cancel(conn: socket.socket) -> None:
    """Tell the keeper to kill the command's whole tree, and wait until it says it has: whoever stopped the
    call may then say it stopped, and nothing of the command outlives that. A keeper that does not answer
    within CANCEL_WAIT_S is left to the hang-up (it kills the tree when it sees the socket close)."""
    try:
        conn.shutdown(socket.SHUT_WR)  # the keeper reads EOF: "cancelled by the caller"
        conn.settimeout(CANCEL_WAIT_S)
        wire.recv(conn)
    except (OSError, ConnectionError, frames.ProtocolError):  # a half-read answer, a keeper gone: same thing
        pass


def base_env(workspace: Path) -> dict[str, str]:
    """A tool's environment. PYTHONDONTWRITEBYTECODE: a test a tool runs leaves no __pycache__ in the workspace,
    whose .pyc an edit within the same second (same size, same mtime) would not invalidate: the next run of the
    test would run the code as it was before the edit."""
    return {"PATH": DEFAULT_PATH, "HOME": str(workspace), "LANG": "C.UTF-8", "TERM": "dumb", "PWD": str(workspace),
            "PYTHONDONTWRITEBYTECODE": "1"}


def launch(argv: list[str], prof: Profile, *, cwd: Path, env: dict[str, str], timeout_s: float | None,
           who: Identity = Identity(None, None, None), sandbox: str = "enforce", output_max_chars: int = 20000,
           stdin: bytes | None = None, stdio: tuple[int, int, int] | None = None) -> ToolResult:
    """Run argv under `prof`. Output is captured unless `stdio` passes the caller's own fds."""
    spec, fds = _request(argv, prof, cwd, env, timeout_s, who, sandbox, output_max_chars, stdio)
    memfd = None
    if stdio is None and stdin is not None:
        memfd = os.memfd_create("sentinel-stdin", os.MFD_CLOEXEC)
        os.write(memfd, stdin)
        os.lseek(memfd, 0, os.SEEK_SET)
        spec["fd_roles"].append("stdin")
        fds.append(memfd)
    try:
        return _result(_traced(spec, lambda: request(spec, fds)))
    finally:
        if memfd is not None:
            os.close(memfd)


class Pending:
    """A command started by `start()`: it runs (its timeout not yet counting) until the caller writes its
    stdin and closes it (`hand_over`), or gives it up (`close`, which kills it)."""

    def __init__(self, conn: socket.socket, stdin: int):
        self.conn, self.stdin = conn, stdin

    def ended(self) -> bool:
        """Has the keeper answered already (the command is gone: idle bound, killed, launch refused)?"""
        return bool(select.select([self.conn], [], [], 0)[0])

    def hand_over(self, data: bytes) -> ToolResult:
        """Write `data` to the command's stdin, close it and wait for the command to end. Raises
        BrokenPipeError when the command is already gone (its stdin has no reader)."""
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.stdin, view):]
        except OSError:
            self.close()
            raise
        os.close(self.stdin)
        self.stdin = -1
        return _result(_answer(self.conn))

    def close(self) -> None:
        """Give the command up: it reads EOF, and the keeper, seeing the caller hang up, kills what is left."""
        if self.stdin >= 0:
            os.close(self.stdin)
            self.stdin = -1
        self.conn.close()


def start(argv: list[str], prof: Profile, *, cwd: Path, env: dict[str, str], timeout_s: float, idle_s: float,
          who: Identity = Identity(None, None, None), sandbox: str = "enforce",
          output_max_chars: int = 20000) -> Pending:
    """Launch argv under `prof` with its stdin a pipe whose write end the caller gets; return once the keeper
    has the request. `timeout_s` counts from the hand-over (the pipe's first byte or its close), `idle_s`
    before it: a command never handed anything is killed then and answers `unused`."""
    spec, fds = _request(argv, prof, cwd, env, timeout_s, who, sandbox, output_max_chars, None)
    read, write = os.pipe2(os.O_CLOEXEC)
    spec.update(timeout_from_stdin=True, idle_s=idle_s)
    spec["fd_roles"].append("stdin")
    try:
        conn = _send(spec, fds + [read])
    except BaseException:
        os.close(write)
        raise
    finally:
        os.close(read)  # the keeper has its own copy: with ours gone, a command that died makes writes fail
    return Pending(conn, write)


class Served:
    """A command started by `serve()` on fds the caller passed: it runs until it exits or `stop()` (the keeper,
    seeing the caller hang up, kills its whole tree)."""

    def __init__(self, conn: socket.socket):
        self.conn = conn

    def ended(self) -> bool:
        return bool(select.select([self.conn], [], [], 0)[0])

    def result(self) -> ToolResult:
        """Wait for the command's end (or the keeper's refusal, raised as launch() raises it)."""
        return _result(_answer(self.conn))

    def stop(self) -> None:
        self.conn.close()


def serve(argv: list[str], prof: Profile, *, cwd: Path, env: dict[str, str], stdio: tuple[int, int, int],
          who: Identity = Identity(None, None, None), sandbox: str = "enforce") -> Served:
    """Launch argv under `prof` with `stdio` as its fds 0, 1 and 2, and no timeout; return once the keeper has
    the request. The caller closes its copies of the command's ends of those fds."""
    spec, fds = _request(argv, prof, cwd, env, None, who, sandbox, 0, stdio)
    return Served(_send(spec, fds))


def _request(argv: list[str], prof: Profile, cwd: Path, env: dict[str, str], timeout_s: float | None, who: Identity,
             # untyped: the Leash wire spec (wire.py), JSON the launcher checks on read
             sandbox: str, output_max_chars: int, stdio: tuple[int, int, int] | None) -> tuple[dict[str, Any], list[int]]:
    """The request for one launch and its fds (the Landlock ruleset, the caller's stdio); refuses early when
    `enforce` needs a layer this kernel lacks."""
    if not argv:
        raise UsageError("leash: empty command")
    env = {**prof.env, **env}
    write = list(prof.write)
    if prof.private_tmp:
        tmp = prepared.tmpdir(who.uid, who.gid, prof.write[0] if prof.write else "")
        write.append(tmp)
        env.setdefault("TMPDIR", tmp)
    ruleset = prepared.ruleset(prof.read, write, prof.tcp_connect)
    missing = prepared.plan_missing(ruleset)
    if missing and sandbox == "enforce":
        raise SandboxUnavailable(prepared.refusal(missing))
    roles: list[str] = []
    # untyped: the Leash wire spec (wire.py), mixed JSON values the launcher checks on read
    spec: dict[str, Any] = {"argv": [str(a) for a in argv], "cwd": str(cwd), "env": env, "timeout_s": timeout_s,
            "profile": prof.keeper_fields(), "uid": who.uid, "gid": who.gid, "sandbox": sandbox,
            "capture": stdio is None, "output_max_chars": output_max_chars, "missing": missing,
            "ruleset_layers": ruleset.applied if ruleset else [], "writable": write, "fd_roles": roles}
    if os.geteuid() == 0 and who.uid is None:
        spec["expose"] = prepared.exposed(tuple(prof.read + write + [str(cwd)]))
    fds: list[int] = []
    if ruleset is not None:
        roles.append("ruleset")
        fds.append(ruleset.fd)
    if stdio is not None:
        roles += ["stdin", "stdout", "stderr"]
        fds += list(stdio)
    return spec, fds


# untyped: the Leash wire spec and answer (wire.py), JSON
def _traced(spec: dict[str, Any], send: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    if not TRACE:
        return send()
    spec["trace"] = True
    TRACE.append({"sent": time.monotonic()})
    answer = send()
    TRACE[-1].update(answer.get("timing", {}), answered=time.monotonic())
    return answer


# untyped: the launcher's answer, JSON from another process, read field by field here
def _result(answer: dict[str, Any]) -> ToolResult:
    return ToolResult(answer.get("exit_code"), answer.get("output", ""), answer.get("timed_out", False),
                      answer.get("truncated", False), answer.get("applied", []), answer.get("missing", []),
                      answer.get("unused", False))


def run_tool(argv: list[str], *, cwd: Path, workspace: Path, timeout_s: float, env: dict[str, str] | None = None,
             profile: str = "tool", agent: str | None = None, sandbox: str = "enforce",
             output_max_chars: int = 20000, stdin: bytes | None = None,
             extra_read: Sequence[str] = ()) -> ToolResult:
    """Run one tool command under the agent's tool profile (see the module docstring)."""
    if profile != "tool":
        raise ValueError(f"run_tool runs the tool profile, not {profile!r}; use launch() for others")
    from sentinel.leash import settings_cache

    who = identity(agent)
    pol = settings_cache.policy_for(agent, system=who.system)
    prof = tool_profile(Path(workspace), pol, proxy=settings_cache.proxy(), extra_read=list(extra_read))
    env_full = {**base_env(Path(workspace)), **(env or {})}
    return launch(argv, prof, cwd=Path(cwd), env=env_full, timeout_s=timeout_s, who=who, sandbox=sandbox,
                  output_max_chars=output_max_chars, stdin=stdin)
