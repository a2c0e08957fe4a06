"""The warm server: a process of this user's that has imported what `sentinel run` and `sentinel resume` use and
forks one child per call (who is served, and the client: sentinel/cli/warm.py).

    python -I -m sentinel.cli.warm_server SOCKET     # started by warm.after_cold(): detached, from /

Every call, before anything of it runs:

1. the caller is this user, outside any sandbox, in exactly this server's process context (warm.context), read
   from /proc while a pidfd on the caller shows it has not exited (so its pid was not recycled mid-read);
2. its interpreter matches this one (warm.interpreter) and its request is well formed: a warm command, its
   arguments, its environment, and four descriptors (working directory, stdin, stdout, stderr);
3. the installed code is the code this server imported: the package's files, the interpreter and the
   environment's site-packages are stat'ed again (about 2 ms). Changed: the caller is refused (it runs cold
   and starts a new server) and this server ends.

A refused caller gets one line and runs the command itself. An accepted one gets a pidfd on its child and answers
`go`; only then does the child start the command (a caller that gave up waiting runs it cold, and its child, never
told to go, ends without running anything: a command never runs twice). The caller then gets the child's exit
code. If the caller goes away first (killed), the child is killed too, as a command killed with
its process would be. The child starts a session of its own, takes the caller's descriptors, directory, umask,
ignored and blocked signals and environment, closes everything else this server holds, and runs
`sentinel.cli.main` as a fresh process would.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import io
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sentinel import unixsock
from sentinel.cli import warm
from sentinel.leash import in_place, peer

# What `run` and `resume` import on their way, loaded once here; nothing is called (no state, no cache filled).
# tests/zygote.py loads the same list for the suite's `cli` fixture.
PRELOAD = ("sentinel.cli", "sentinel.cli.app", "sentinel.cli.runs", "sentinel.cli.fast", "sentinel.local.engine",
           "sentinel.engine.journal", "sentinel.engine.records", "sentinel.engine.events", "sentinel.config",
           "sentinel.models.openai_compat", "openai", "sentinel.muzzle", "sentinel.policy.action_policy",
           "sentinel.worker.loop", "sentinel.tools.builtin", "sentinel.ui.render", "rich.console", "typer",
           "sentinel.muzzle.server", "sentinel.muzzle.app", "sentinel.muzzle.upstream", "sentinel.policy.gate.engine",
           "sentinel.policy.gate.loader", "sentinel.policy.gate.judges.muzzle", "sentinel.policy.gate.judges.openai_compat",
           "sentinel.worker.turn", "sentinel.worker.execute", "sentinel.worker.setup", "sentinel.worker.prompt",
           "sentinel.agents.execute", "sentinel.agents.authored", "sentinel.leash.launch", "sentinel.leash.prepared",
           "sentinel.memory.watch", "sentinel.memory.vault", "sentinel.workflows.runner", "sentinel.hooks.trust",
           "sentinel.client.system", "sentinel.supervisor.admin", "sentinel.models.hosts", "sentinel.ui.spinner",
           "sentinel.local.children", "sentinel.connect", "uvicorn", "uvicorn.loops.auto", "uvicorn.protocols.http.auto",
           "uvicorn.protocols.websockets.auto", "uvicorn.lifespan.on", "starlette.applications", "jsonschema",
           "multiprocessing", "sentinel.policy.gate.layer", "sentinel.policy.gate.dump", "sentinel.memory.fence",
           "sentinel.leash.settings_cache", "sentinel.policy.gate.schema", "uvicorn.loops.uvloop",
           "openai.resources.chat.completions", "openai.lib.streaming.chat", "httpcore2", "h11",
           "anyio._backends._asyncio", "anyio.streams.tls", "bashlex", "uvloop", "truststore", "jiter",
           "concurrent.futures.thread", "encodings.idna", "wcmatch.glob")
SO_PEERPIDFD = 77
IDLE_SECONDS = 600.0


def preload() -> None:
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # an optional part not installed (uvloop): a command that needs it imports it as a fresh one would


@dataclass
class Caller:
    """What the server read about a caller, beside its request: applied to its child."""
    umask: int
    ignored: int  # bit mask of signals (bit n-1: signal n)
    blocked: int


@dataclass
class Child:
    pid: int
    pidfd: int
    conn: socket.socket
    go: int  # the pipe its child waits on before the command starts (-1 once the go-ahead is given)
    watched: bool = True  # its caller's connection is watched for the caller going away

    def stop(self) -> None:
        warm.send_signal(self.pidfd, signal.SIGKILL)
        if self.go >= 0:
            os.close(self.go)
            self.go = -1


class Refused(Exception):
    """A call this server will not run; its message is the one line the caller gets."""


class Server:
    def __init__(self, path: Path, listener: socket.socket, lock: int, mine: bytes, interp: dict[str, object]):
        self.path, self.listener, self.lock = path, listener, lock
        self.mine, self.stamp = mine, stamp()
        self.interp = json.loads(json.dumps(interp))  # as the caller's arrives: lists, not tuples
        self.inode = os.stat(path).st_ino
        self.sel = selectors.DefaultSelector()
        self.sel.register(listener, selectors.EVENT_READ, None)
        self.children: dict[int, Child] = {}  # by pidfd
        self.idle = _idle_seconds(os.environ.get("SENTINEL_WARM_IDLE"))
        self.last = time.monotonic()
        self.ending = False
        self.served = 0

    def serve(self) -> None:
        """Until idle, stale, replaced or told to end (SIGTERM), and every child has been reported."""
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "ending", True))
        while True:
            if self.ending or not self._ours() or (not self.children and time.monotonic() - self.last > self.idle):
                self._stop_listening()
                if not self.children:
                    return
            for key, _ in self.sel.select(timeout=1.0):
                if key.data is None:
                    self._accept()
                elif isinstance(key.data, Child) and key.fileobj is key.data.conn:
                    self._heard(key.data)
                elif isinstance(key.data, Child):
                    self._reap(key.data)

    def _ours(self) -> bool:
        try:
            return self.listener.fileno() < 0 or os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def _stop_listening(self) -> None:
        if self.listener.fileno() < 0:
            return
        self.sel.unregister(self.listener)
        if self._ours():
            self.path.unlink(missing_ok=True)
        self.listener.close()
        os.close(self.lock)  # a new server may take the name now; this one only reports its children's ends
        self.lock = -1

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        conn.settimeout(5)
        fds: list[int] = []
        try:
            message, fds, _, _ = socket.recv_fds(conn, warm.REQUEST_MAX + 1, 4)
            if message == b"status" and not fds:
                self._caller_checked(conn)
                conn.send(json.dumps({"pid": os.getpid(), "served": self.served,
                                      "running": len(self.children)}).encode())
                conn.close()
                return
            request, caller = self._check(conn, message, fds)
        except (Refused, OSError, ValueError) as exc:
            for fd in fds:
                os.close(fd)
            print(f"{time.strftime('%H:%M:%S')} refused a call: {exc}", file=sys.stderr, flush=True)
            if isinstance(exc, Refused):
                try:
                    conn.send(f"refused: {exc}".encode())
                except OSError:
                    pass
                self.ending = self.ending or str(exc).startswith("stale")
            conn.close()
            return
        sys.stdout.flush()
        sys.stderr.flush()
        present = request["stdio"]
        assert isinstance(present, list)
        given = iter(fds[1:])
        wait, go = os.pipe()
        place = in_place.Place(fds[0], [next(given) if p else None for p in present], caller.umask, caller.ignored,
                               caller.blocked, keep=wait)
        pid = in_place.fork_in_place(place, close=lambda: self._close_all(conn, go))
        if pid == 0:
            self._become(request, present, wait)  # never returns
        for fd in [*fds, wait]:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        child = Child(pid, pidfd, conn, go)
        try:
            socket.send_fds(conn, [b"started"], [pidfd])
        except OSError:
            child.stop()
        conn.settimeout(None)
        self.children[pidfd] = child
        self.sel.register(pidfd, selectors.EVENT_READ, child)
        self.sel.register(conn, selectors.EVENT_READ, child)
        self.served += 1
        self.last = time.monotonic()

    def _heard(self, child: Child) -> None:
        """The caller's go-ahead lets its child start the command; anything else (it went away, it broke the
        protocol, a second word) stops the child."""
        try:
            word = child.conn.recv(16)
        except OSError:
            word = b""
        if word == b"go" and child.go >= 0:
            with contextlib.suppress(OSError):
                os.write(child.go, b"g")
            os.close(child.go)
            child.go = -1
            return
        child.stop()
        self.sel.unregister(child.conn)
        child.watched = False

    def _reap(self, child: Child) -> None:
        self.sel.unregister(child.pidfd)
        _, status = os.waitpid(child.pid, 0)
        if child.watched:
            self.sel.unregister(child.conn)
        try:
            child.conn.send(f"exit {os.waitstatus_to_exitcode(status)}".encode())
        except OSError:
            pass
        child.conn.close()
        if child.go >= 0:
            os.close(child.go)
        os.close(child.pidfd)
        del self.children[child.pidfd]
        self.last = time.monotonic()

    def _check(self, conn: socket.socket, message: bytes, fds: list[int]) -> tuple[dict[str, object], Caller]:
        """The caller's request and what its child takes from it, or Refused: see the module's docstring."""
        caller = self._caller_checked(conn)
        if len(message) > warm.REQUEST_MAX:
            raise Refused("a malformed request")
        request = json.loads(message.decode("utf-8", "surrogateescape"))
        if not (isinstance(request, dict) and _strings(request.get("args")) and request["args"]
                and request["args"][0] in warm.COMMANDS and isinstance(request.get("argv0"), str)
                and isinstance(request.get("env"), dict) and _strings(list(request["env"].items()), pairs=True)
                and isinstance(request.get("stdio"), list) and len(request["stdio"]) == 3
                and all(isinstance(x, bool) for x in request["stdio"]) and len(fds) == 1 + sum(request["stdio"])):
            raise Refused("a malformed request")
        if request.get("interp") != self.interp:
            raise Refused("another interpreter (executable, package, import path, flags or locale)")
        if threading.active_count() != 1:
            raise Refused("the server has a thread running; it cannot fork")
        if stamp() != self.stamp:
            raise Refused("stale: the installed code changed since this server started")
        return request, caller

    def _caller_checked(self, conn: socket.socket) -> Caller:
        """This user, in this server's very process context, read while its pidfd shows it has not exited."""
        pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                             struct.calcsize("3i")))
        if uid != os.geteuid():
            raise Refused("another user")
        try:
            pidfd = conn.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
        except OSError:
            raise Refused("the caller's pid cannot be held (Linux 6.5 or later is needed)") from None
        try:
            theirs, caller = warm.context(pid), _caller(pid)
            if not peer.alive(pidfd):
                raise Refused("the caller has exited")
        finally:
            os.close(pidfd)
        if theirs is None or caller is None or theirs != self.mine:
            raise Refused("another process context (groups, limits, sandbox, cgroup or namespaces)")
        return caller

    def _close_all(self, conn: socket.socket, go: int) -> None:
        """In the child: close what this server's objects hold, through the objects."""
        self.sel.close()
        os.close(go)
        for child in self.children.values():
            child.conn.close()
            os.close(child.pidfd)
            if child.go >= 0:
                os.close(child.go)
        conn.close()
        if self.listener.fileno() >= 0:
            self.listener.close()
        if self.lock >= 0:
            os.close(self.lock)

    def _become(self, request: dict[str, object], present: list[bool], wait: int) -> None:
        """In the child, in the caller's place (sentinel/leash/in_place.py): once the caller has said go, the
        caller's command from its first line. Never returns."""
        if os.read(wait, 1) != b"g":
            os._exit(1)  # the caller never took this child (it timed out and runs the command itself, or is gone)
        os.close(wait)
        env = request["env"]
        args = request["args"]
        assert isinstance(env, dict) and isinstance(args, list)
        os.environ.clear()
        os.environ.update(env)
        time.tzset()  # the caller's TZ, as a fresh interpreter reads it at start
        _stdio(present)
        sys.argv = [str(request["argv0"]), *args]
        from sentinel.cli import cold

        cold(args)
        raise SystemExit(0)


def _idle_seconds(text: str | None) -> float:
    """SENTINEL_WARM_IDLE as seconds; a value that is no positive number is named in the log, and 600 stands."""
    if text is None:
        return IDLE_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        print(f"warm server: SENTINEL_WARM_IDLE={text!r} is not a positive number of seconds; using "
              f"{IDLE_SECONDS:.0f}", file=sys.stderr, flush=True)
        return IDLE_SECONDS
    return value


def _strings(value: object, pairs: bool = False) -> bool:
    if not isinstance(value, list):
        return False
    if pairs:
        return all(isinstance(k, str) and isinstance(v, str) and "\0" not in k + v and "=" not in k for k, v in value)
    return all(isinstance(v, str) and "\0" not in v for v in value)


def _caller(pid: int) -> Caller | None:
    fields: dict[str, str] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                name, _, value = line.partition(":")
                fields[name] = value.strip()
        return Caller(int(fields["Umask"], 8), int(fields["SigIgn"], 16), int(fields["SigBlk"], 16))
    except (OSError, KeyError, ValueError):
        return None


_KEPT: list[object] = []  # the server's own stdio objects: dropped, they would close the caller's descriptors


def _stdio(present: list[bool]) -> None:
    """sys.stdin, stdout and stderr over the caller's descriptors, buffered as the interpreter would make them
    (None for one the caller was started without, as for a fresh interpreter)."""
    made: list[io.TextIOWrapper | None] = []
    for fd, old in enumerate((sys.stdin, sys.stdout, sys.stderr)):
        assert isinstance(old, io.TextIOWrapper)
        _KEPT.append(old)
        if not present[fd]:
            made.append(None)
            continue
        tty = os.isatty(fd)
        raw = io.open(fd, "rb" if fd == 0 else "wb", buffering=-1, closefd=False)
        made.append(io.TextIOWrapper(raw, encoding=old.encoding, errors=old.errors, newline="\n",
                                     line_buffering=fd != 0 and (tty or fd == 2)))
    sys.stdin, sys.stdout, sys.stderr = made
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made  # type: ignore[misc]


def stamp() -> list[object]:
    """The installed code as the server imported it: the package's sources, the interpreter, site-packages."""
    import sentinel

    marks: list[object] = []
    for root in sentinel.__path__:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                st = os.stat(os.path.join(folder, name))
                marks.append((name, st.st_mtime_ns, st.st_size))
    for path in (sys.executable, *(p for p in sys.path if p.endswith("site-packages"))):
        st = os.stat(path)
        marks.append((path, st.st_mtime_ns, st.st_ino))
    return marks


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -I -m sentinel.cli.warm_server SOCKET", file=sys.stderr)
        return 2
    path = Path(argv[0])
    mine = warm.context()
    if mine is None or not warm.unconfined(mine) or warm.directory() != str(path.parent):
        print(f"warm server: {path.parent} is not this user's own socket directory, or this process runs in a "
              "sandbox; not starting", file=sys.stderr)
        return 1
    lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another server is starting or serving there
    preload()
    interp = warm.interpreter(sys.path)
    if warm.socket_path(str(path.parent), mine, interp) != str(path):
        print(f"warm server: this interpreter is not the one {path.name} is named for; not starting", file=sys.stderr)
        return 1
    gc.collect()
    gc.freeze()  # a child's collections never walk (so never copy) the server's objects
    listener = unixsock.listen(path, 0o600, kind=socket.SOCK_SEQPACKET)
    Server(path, listener, lock, mine, interp).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
