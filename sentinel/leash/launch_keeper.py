"""The keeper: a forked process that owns one launched tree at a time, from start to cleanup, and then the next.

The launcher keeps a pool of keepers (sentinel/leash/launcher.py). A keeper joins fresh cgroups
when it starts and copies its shared pages then (sentinel/leash/prefault.py), so launches take no
cgroup migration and no copy-on-write faults. It is a child subreaper, so every descendant of a
launched command (setsid or double-forked included) stays its child. For each launch it has a
launch child forked ahead of the request; it hands it the plan with the caller's Landlock ruleset
fd, captures output, enforces the timeout, and when the command exits or times out (or the caller
hangs up) kills everything left: every other member of its cgroups, the process group, then every
remaining child until none is left. It answers, and takes the next request only if its cgroups
are empty again; otherwise it leaves (a launch it could not clean up never shares a group).
"""

from __future__ import annotations

import os
import select
import signal
import socket
import struct
import time
from types import FrameType
from typing import Any

from sentinel.leash import cgroups, child, mounts, prefault, privs, seccomp, unix_allow, wire

DRAIN_AFTER_KILL_S = 1.0
MAX_LAUNCHES = 500  # a keeper leaves after this many launches: bounds anything that could accumulate

# Notes a keeper sends the launcher on their shared pipe: one byte and its pid, written atomically.
NOTE = struct.Struct("!cI")
READY, TAKEN, LEAVING, HUNG_UP = b"R", b"T", b"L", b"H"


class Refused(Exception):
    """The launch was refused before anything ran; the message goes back to the caller."""


class ToolIdentity:
    """Who a tool root starts without an agent user runs as: a uid of its own (privs.tool_uid), and the
    user namespace that idmaps root's workspace to it (or why there is none). Made once per launcher,
    as root, before any keeper is forked; every keeper and launch child inherits the fd."""

    uid: int | None = None
    idmap_fd: int | None = None
    error: str | None = None

    @classmethod
    def prepare(cls, launcher_pid: int) -> None:
        cls.uid = privs.tool_uid(launcher_pid)
        try:
            cls.idmap_fd = mounts.idmap_userns(cls.uid, cls.uid)
        except OSError as exc:
            cls.error = exc.strerror or str(exc)


class Orphaned(BaseException):
    """The launcher died (with its caller: a chat whose terminal closed, a worker the supervisor killed):
    what this keeper runs must die too, before the keeper goes."""


def _orphaned(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the cleanup that follows is never cut short
    raise Orphaned()


def keep(ctl: socket.socket, notify_fd: int, idle_timeout_s: float | None, launcher: int | None = None) -> None:
    """Serve launch requests from the shared control socket, one at a time, until the caller hangs up,
    this keeper has been idle for `idle_timeout_s` (None: never), or a launch left something behind.

    Its launcher's death (`launcher`: its pid) is a SIGTERM that kills everything the keeper runs and
    then the keeper: a SIGKILL would leave the command's own children, reparented past this subreaper,
    running under pid 1."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, _orphaned)
    privs.set_pdeathsig(signal.SIGTERM)
    if launcher is not None and os.getppid() != launcher:
        return  # it died before the death signal was armed
    privs.set_child_subreaper()
    kept = {fd for fd in (ctl.fileno(), notify_fd, ToolIdentity.idmap_fd) if fd is not None}
    _close_strays(kept)  # the launcher's pipe end and pidfds
    group = _join_group()
    prefault.prefault()
    note = _Notes(notify_fd)
    try:
        for _ in range(MAX_LAUNCHES):
            launchee = _prefork()
            note.send(READY)
            conn, hung_up = _take(ctl, idle_timeout_s)
            if conn is None:
                _stop(launchee)
                if hung_up:
                    note.send(HUNG_UP)
                return
            note.send(TAKEN)
            serve(conn, group, launchee)
            _wait_all(None, group)
            if group is not None and group.members() - {os.getpid()}:
                return
            _close_strays(kept)
    except Orphaned:
        pass  # the finally below kills what runs; the launcher is gone, so there is no one to answer
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # leaving now: a late death signal must not cut this short
        note.send(LEAVING)
        _wait_all(None, group)
        if group is not None:
            group.leave_and_remove()


def _take(ctl: socket.socket, idle_timeout_s: float | None) -> tuple[socket.socket | None, bool]:
    """The next request's stream socket; (None, True) when the caller closed the control socket,
    (None, False) after `idle_timeout_s` without a request. Without a timeout the keeper blocks in
    recvmsg, where the kernel wakes one waiting keeper per request, not all of them."""
    poller = select.poll()
    poller.register(ctl.fileno(), select.POLLIN)
    while True:
        flags = 0
        if idle_timeout_s is not None:
            if not poller.poll(int(idle_timeout_s * 1000)):
                return None, False
            flags = socket.MSG_DONTWAIT
        try:
            _, fds = wire.recv_fds(ctl, 16, 1, flags)
        except BlockingIOError:
            continue  # another keeper took it
        except OSError:
            return None, True
        if not fds:
            return None, True
        return socket.socket(fileno=fds[0]), False


def _stop(launchee: tuple[int, socket.socket]) -> None:
    pid, sock = launchee
    sock.close()
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _close_strays(keep: set[int]) -> None:
    """Close any fd a failed launch left open, so no later launch child could inherit one."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


class _Notes:
    """What this keeper tells the launcher (which forks another keeper when none is ready)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.pid = os.getpid()

    def send(self, kind: bytes) -> None:
        try:
            os.write(self.fd, NOTE.pack(kind, self.pid))
        except OSError:
            pass


def _join_group() -> cgroups.Group | None:
    try:
        group = cgroups.Group.create(f"sentinel-{os.getpid()}")
        if group is not None:
            group.join()
        return group
    except OSError:
        return None


def _prefork() -> tuple[int, socket.socket]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    root = os.geteuid() == 0
    pid = os.fork()
    if pid == 0:
        ours.close()
        child.prefork(theirs, root)
    theirs.close()
    return pid, ours


def serve(conn: socket.socket, group: cgroups.Group | None, launchee: tuple[int, socket.socket]) -> None:
    """Handle one request on `conn` and answer."""
    try:
        _serve(conn, group, launchee)
    finally:
        launchee[1].close()
        conn.close()


def _serve(conn: socket.socket, group: cgroups.Group | None, launchee: tuple[int, socket.socket]) -> None:
    try:
        req, fds = wire.recv(conn, maxfds=8)
    except (OSError, ConnectionError):
        return
    if req is None:
        return
    try:
        answer = Launch(req, fds, conn, group, launchee).run()
    except Refused as exc:
        answer = {"error": str(exc), "kind": "sandbox"}
    except Exception as exc:  # noqa: BLE001 - reported to the caller as a launch failure
        answer = {"error": f"{type(exc).__name__}: {exc}", "kind": "launch"}
    try:
        wire.send(conn, answer)
    except OSError:
        pass


class Launch:
    # untyped: a client's launch request off the Leash wire (wire.recv), JSON checked field by field on use
    def __init__(self, req: dict[str, Any], fds: list[int], conn: socket.socket, group: cgroups.Group | None,
                 launchee: tuple[int, socket.socket]):
        self.req, self.conn, self.group = req, conn, group
        self.pid, self.child_sock = launchee
        self.fds = dict(zip(req.get("fd_roles", []), fds))
        self.prof = req["profile"]
        self.enforce = req.get("sandbox", "enforce") == "enforce"
        self.applied: list[str] = []
        self.missing: list[str] = list(req.get("missing", []))
        self.out = Output(req.get("output_max_chars", 20000)) if req.get("capture", True) else None
        self.timing: dict[str, float] = {"received": time.monotonic()} if req.get("trace") else {}
        self.unused = False  # a `timeout_from_stdin` command that ended before its stdin was handed over
        self.unix = unix_allow.allowlist(self.prof.get("unix_sockets") or [])
        self.listener: int | None = None  # with an allowlist: every connect() of the command comes here
        # untyped: who the launch runs as, a part of the Leash wire answer (JSON)
        self.who: dict[str, Any] = {}

    def mark(self, stage: str) -> None:
        if self.timing:
            self.timing[stage] = time.monotonic()

    # untyped: the Leash wire answer (JSON) sent back to the client
    def run(self) -> dict[str, Any]:
        try:
            return self._run()
        finally:
            for fd in self.fds.values():
                _close(fd)

    # untyped: the Leash wire answer (JSON) sent back to the client
    def _run(self) -> dict[str, Any]:
        self._cgroup()
        stdio, out_r = self._stdio()
        status_r, status_w = os.pipe2(os.O_CLOEXEC)
        network = bool(self.prof.get("network"))
        self.who = self._who()
        plan = {"argv": self.req["argv"], "env": self.req.get("env") or {}, "cwd": self.req["cwd"],
                "rlimits": self.prof.get("rlimits", {}), "enforce": self.enforce, "trace": bool(self.timing),
                "seccomp_allow_tcp": network if seccomp.supported() else None, "seccomp_unix": bool(self.unix),
                "writable": self.req.get("writable", []),
                "ruleset_layers": self.req.get("ruleset_layers", []), **self.who}
        fds = [*stdio, status_w] + ([self.fds["ruleset"]] if "ruleset" in self.fds else [])
        self.mark("plan")
        wire.send(self.child_sock, plan, fds)
        if not self.unix:
            self.child_sock.close()
        self.mark("sent-plan")
        os.close(status_w)
        if out_r is not None:
            os.close(stdio[1])
        return self._watch(self.pid, status_r, out_r)

    # untyped: who the launch runs as, a part of the Leash wire answer (JSON)
    def _who(self) -> dict[str, Any]:
        """The plan's identity: the caller's agent user; as root without one, the tool's own uid with
        its idmapping (never uid 0); otherwise the caller's uid, whose other tasks RLIMIT_NPROC counts."""
        uid = self.req.get("uid")
        if uid is not None:
            return {"uid": uid, "gid": self.req.get("gid")}
        if os.geteuid() != 0:
            return {"uid": None, "gid": None, "nproc_relative": True}
        tool = ToolIdentity
        if tool.uid is None:
            raise Refused("no uid prepared for tools started by root; refusing to run one as root")
        return {"uid": tool.uid, "gid": tool.uid, "idmap_fd": tool.idmap_fd, "idmap_error": tool.error,
                "expose": self.req.get("expose", [])}

    def _cgroup(self) -> None:
        if self.group is None:
            self.missing.append("cgroup")
            return
        self.applied += self.group.applied
        self.applied += self.group.set_limits(self.prof.get("memory_bytes"), self.prof.get("pids_max"))

    def _stdio(self) -> tuple[tuple[int, int, int], int | None]:
        if self.out is None:
            if not all(k in self.fds for k in ("stdin", "stdout", "stderr")):
                raise Refused("passthrough launch needs three stdio fds")
            return (self.fds["stdin"], self.fds["stdout"], self.fds["stderr"]), None
        if "stdin" not in self.fds:
            self.fds["stdin"] = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        return (self.fds["stdin"], out_w, out_w), out_r

    # untyped: the Leash wire answer (JSON), merged with the child's status lines (wire.read_status)
    def _watch(self, pid: int, status_r: int, out_r: int | None) -> dict[str, Any]:
        status = wire.read_status(status_r)
        self.mark("exec")
        self.timing.update(status.pop("trace", {}))
        if "error" in status:
            _wait_all(pid, self.group)
            raise Refused(status["error"])
        self.applied += status.get("applied", [])
        self.missing += status.get("missing", [])
        if self.unix:
            self._take_listener()
        try:
            code, timed_out = self._loop(pid, out_r)
        finally:
            if self.listener is not None:
                _close(self.listener)
        self.mark("exited")
        if out_r is not None:
            self._drain(out_r)
        self.mark("drained")
        # untyped: the Leash wire answer (JSON), merged with the child's status lines (wire.read_status)
        result: dict[str, Any] = {"exit_code": code, "timed_out": timed_out, "applied": self.applied, "missing": self.missing}
        if self.unused:
            result["unused"] = True
        if "exec_error" in status:
            result["exit_code"] = child.EXIT_EXEC
            if self.out is not None:
                self.out.feed(f"sentinel: cannot execute {status['exec_error']}\n".encode())
        if self.out is not None:
            result["output"], result["truncated"] = self.out.text()
        if self.timing:
            result["timing"] = self.timing
        return result

    def _take_listener(self) -> None:
        """The launch child sent its filter's notification fd before its status line (none when the
        filter could not be installed under best_effort)."""
        _msg, fds = wire.recv(self.child_sock, maxfds=1)
        self.child_sock.close()
        self.listener = fds[0] if fds else None

    def _loop(self, pid: int, out_r: int | None) -> tuple[int | None, bool]:
        clock = _Clock(self.req, self.fds.get("stdin"))
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(self.conn.fileno(), select.POLLIN | select.POLLHUP)
        if out_r is not None:
            poller.register(out_r, select.POLLIN)
        if clock.stdin is not None:
            poller.register(clock.stdin, select.POLLIN)  # polled, never read: the bytes are the command's
        if self.listener is not None:
            poller.register(self.listener, select.POLLIN)
        try:
            while True:
                events = poller.poll(clock.wait_ms())
                if not events and clock.expired():
                    if clock.arrived() and clock.stdin is not None:  # handed over just as the idle bound
                        poller.unregister(clock.stdin)                    # ran out: the timeout starts now
                        clock.handed_over()
                        continue
                    _wait_all(pid, self.group)
                    self.unused = clock.stdin is not None
                    return None, True
                for fd, ev in events:
                    if fd == out_r:
                        if not self._read_some(out_r):
                            poller.unregister(out_r)
                            out_r = None
                    elif fd == clock.stdin:
                        poller.unregister(fd)
                        clock.handed_over()
                    elif fd == self.listener:
                        if ev & select.POLLIN:
                            unix_allow.answer(fd, self.unix, self.who.get("uid"), self.who.get("gid"))
                        else:  # every process under the filter is gone
                            poller.unregister(fd)
                    elif fd == pidfd:
                        try:  # its group, while its zombie still holds the id (after the reap it may be anyone's)
                            os.killpg(pid, signal.SIGKILL)
                        except OSError:
                            pass
                        _, st = os.waitpid(pid, 0)
                        _wait_all(None, self.group)
                        self.unused = clock.stdin is not None and not clock.arrived()
                        return os.waitstatus_to_exitcode(st), False
                    else:  # the caller hung up or sent anything: cancel
                        _wait_all(pid, self.group)
                        raise Refused("cancelled by the caller")
        finally:
            os.close(pidfd)

    def _read_some(self, fd: int) -> bool:
        data = os.read(fd, 65536)
        if data and self.out is not None:
            self.out.feed(data)
        return bool(data)

    def _drain(self, fd: int) -> None:
        deadline = time.monotonic() + DRAIN_AFTER_KILL_S
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                if not ready or not self._read_some(fd):
                    break
        finally:
            os.close(fd)


class _Clock:
    """The launch's wall-clock deadline. With `timeout_from_stdin`, `timeout_s` starts when the command's
    stdin pipe first turns readable (the caller wrote to it or closed it: the hand-over), and until then
    `idle_s` bounds how long the command may wait for it."""

    # untyped: a client's launch request off the Leash wire (wire.recv), JSON checked field by field on use
    def __init__(self, req: dict[str, Any], stdin: int | None):
        self.timeout = req.get("timeout_s")
        self.stdin = stdin if req.get("timeout_from_stdin") else None
        limit = req.get("idle_s") if self.stdin is not None else self.timeout
        self.deadline = time.monotonic() + limit if limit else None

    def handed_over(self) -> None:
        self.stdin = None
        self.deadline = time.monotonic() + self.timeout if self.timeout else None

    def arrived(self) -> bool:
        """Has the hand-over happened, even if this poll round has not reported it yet?"""
        return self.stdin is not None and bool(select.select([self.stdin], [], [], 0)[0])

    def wait_ms(self) -> int | None:
        return None if self.deadline is None else max(0, int((self.deadline - time.monotonic()) * 1000))

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _wait_all(pid: int | None, group: cgroups.Group | None) -> None:
    """Kill and reap every descendant: the process group at once (one signal to every member, so no shell runs its
    next command after its child died), then the rest of the cgroup (stopped before killed), then stragglers.
    `pid` is a child not yet reaped (its group id is then still its own)."""
    if pid:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    if group is not None:
        group.kill_others()
    while True:
        try:
            reaped, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if reaped:
            continue
        for child_pid in _children(os.getpid()):
            try:
                os.kill(child_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _children(ppid: int) -> list[int]:
    """Pids whose parent is `ppid` (no /proc/PID/task/TID/children on every kernel, so scan)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == ppid:
            out.append(int(name))
    return out


class Output:
    """Merged stdout+stderr: keeps a head and a tail of bounded size, counts what it drops."""

    def __init__(self, max_chars: int):
        self.max_chars = max_chars
        self.cap = max(4096, max_chars * 4)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.cap:
                cut = len(self.tail) - self.cap
                self.dropped += cut
                del self.tail[:cut]

    def text(self) -> tuple[str, bool]:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        total = len(head) + len(tail) + self.dropped
        if total <= self.max_chars:
            return head + tail, False
        keep_head = self.max_chars * 2 // 3
        keep_tail = self.max_chars - keep_head
        whole = head + tail
        if self.dropped == 0:
            head, tail = whole[:keep_head], whole[len(whole) - keep_tail:]
        else:
            head, tail = head[:keep_head], tail[len(tail) - keep_tail:]
        cut = total - len(head) - len(tail)
        return f"{head}\n[... {cut} characters truncated ...]\n{tail}", True
