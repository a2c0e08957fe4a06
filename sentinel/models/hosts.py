"""Managing model hosts: start on first use, find a warm one, say why one died, list them.

    Hosts(directory, settings)    the hosts of one owner (Muzzle's state dir, or $SENTINEL_HOME/state)
      .ensure(model) -> Ready     a host answering for `local/<model>`, started and loaded if needed
      .cause(model, ready)        after a failed call: why the host's model process went away
    status(directory)             every host: model, pid, RSS, state (for `sentinel status`)
    HostedModel                   a ModelClient on a host, for callers without Muzzle

A host outlives the process that started it (its own session, an idle timeout), so the
second run in local mode finds the model loaded. Hosts are found by their socket
`<directory>/hosts/<model>.sock`; the keeper's status file beside it says its state.
Nothing here imports llama.cpp.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sentinel.jsontypes import JSON, JSONObject
from sentinel.leash import plain
from sentinel.models.base import Completion, ModelError, ModelUnavailable, OnDelta, OnProgress
from sentinel.models.hostpaths import address, status_path
from sentinel.models.weights import cache_dir

if TYPE_CHECKING:
    from sentinel.models.settings import LocalSettings

HOST_URL = "http://model-host/v1"  # the authority is ignored: the transport is the host's Unix socket
_SPAWNED: list[subprocess.Popen[bytes]] = []


@dataclass(frozen=True)
class Ready:
    socket: Path
    pid: int

    @property
    def address(self) -> str:
        """What to connect to (see `host.address`)."""
        return address(self.socket)


def hosts_dir(state_dir: Path) -> Path:
    return state_dir / "hosts"


def slug(model: str) -> str:
    """A socket name for a model: catalog names as they are, paths shortened with a hash (sun_path is 108 bytes)."""
    if re.fullmatch(r"[A-Za-z0-9._-]{1,40}", model):
        return model
    base = re.sub(r"[^A-Za-z0-9._-]", "_", Path(model).stem)[:24]
    return f"{base}-{hashlib.sha256(model.encode()).hexdigest()[:10]}"


def read_status(sock: Path) -> JSONObject | None:
    try:
        data = json.loads(status_path(sock).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def pid_of(status: JSONObject, key: str = "pid") -> int:
    """A process id the status file names (0 when it names none)."""
    value = status.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def keeper_alive(sock: Path) -> bool:
    """True while a keeper holds the socket's lock (a dead keeper's lock is released by the kernel)."""
    try:
        fd = os.open(sock.with_suffix(".lock"), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


class Hosts:
    def __init__(self, state_dir: Path, settings: "LocalSettings", *, load_timeout_s: float = 300.0):
        self.dir = hosts_dir(state_dir)
        self.settings = settings
        self.load_timeout_s = load_timeout_s
        self._lock = threading.Lock()

    def socket(self, model: str) -> Path:
        return self.dir / f"{slug(model)}.sock"

    def argv(self, model: str) -> list[str]:
        """The host's launch options; a warm host started with other options is replaced."""
        s = self.settings
        return ["--model", model, "--socket", str(self.socket(model)), "--tool-mode", s.tool_mode,
                "--idle-s", str(s.idle_s), "--context-tokens", str(s.context_tokens), "--max-tokens", str(s.max_tokens),
                "--slots", str(s.slots),
                *(["--memory-mb", str(s.memory_mb)] if s.memory_mb else []),
                *(["--threads", str(s.threads)] if s.threads else [])]

    def warm(self, model: str) -> Ready | None:
        """The host for `model` if it is loaded and serving now (two small reads: fine on an event loop)."""
        sock = self.socket(model)
        status = read_status(sock)
        if status and status.get("argv") == self.argv(model) and status.get("state") == "ready" \
                and _alive(pid_of(status)):
            return Ready(sock, pid_of(status))
        return None

    def ensure(self, model: str) -> Ready:
        """A loaded host for `model`; blocks while one starts or loads (the first use may assemble the weights)."""
        if ready := self.warm(model):
            return ready
        sock, argv = self.socket(model), self.argv(model)
        with self._lock:  # one start per model at a time in this process; the keeper's lock does across processes
            status = read_status(sock)
            if status and status.get("argv") not in (None, argv) and keeper_alive(sock):
                stop(sock)  # the configuration changed (tool mode, limits): load the model again with it
            keeper = None if keeper_alive(sock) else self._start(sock, argv)
            return self._wait(model, sock, keeper)

    def _start(self, sock: Path, argv: list[str]) -> subprocess.Popen[bytes]:
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)  # only this user (Muzzle's, in system mode) can reach a host
        status_path(sock).unlink(missing_ok=True)  # a failed host's status: this is a fresh attempt
        _SPAWNED[:] = [p for p in _SPAWNED if p.poll() is None]  # reap keepers that exited
        with open(sock.with_suffix(".log"), "ab") as log:
            keeper = plain.popen([sys.executable, "-I", "-m", "sentinel.models.host_process", *argv], cwd="/",
                                 env=self._env(), stdout=subprocess.DEVNULL, stderr=log,
                                 new_session=True)  # outlives this process; not its signals
        _SPAWNED.append(keeper)
        return keeper

    def _env(self) -> dict[str, str]:
        """The keeper's whole environment (sentinel/leash/plain.py): the minimal one with this user's HOME and the
        model cache, which falls back to the hosts' state directory when the user's cache is not writable
        (Muzzle's system user started with another HOME)."""
        cache = cache_dir()
        if "SENTINEL_MODEL_CACHE" not in os.environ:
            try:
                cache.mkdir(parents=True, exist_ok=True)
                writable = os.access(cache, os.W_OK)
            except OSError:
                writable = False
            if not writable:
                cache = self.dir.parent / "models"
        return plain.env({"SENTINEL_MODEL_CACHE": str(cache)}, home=str(Path.home()))

    def _wait(self, model: str, sock: Path, keeper: subprocess.Popen[bytes] | None) -> Ready:
        deadline = time.monotonic() + self.load_timeout_s
        while time.monotonic() < deadline:
            status = read_status(sock) or {}
            state = status.get("state")
            if state == "ready" and status.get("pid"):
                return Ready(sock, pid_of(status))
            if state == "failed":
                raise ModelError(f"local/{model}: {status.get('error') or 'the model host failed'}")
            gone = keeper.poll() is not None if keeper is not None else not keeper_alive(sock)
            if gone and read_status(sock) == (status or None):
                raise ModelUnavailable(f"local/{model}: the model host exited while starting: "
                                       f"{last_line(sock.with_suffix('.log'))}")
            time.sleep(0.02)
        raise ModelUnavailable(f"local/{model}: the model host did not become ready within "
                               f"{self.load_timeout_s:g}s (see {sock.with_suffix('.log')})")

    def cause(self, model: str, ready: Ready, wait_s: float = 30.0) -> str | None:
        """Why the process that served `ready` is gone, or None when it is still there (the failure was elsewhere).

        Decided on the host's own word, never on a glance at /proc: a killed process closes its sockets
        before it turns into a zombie, so for a moment a broken stream comes from a process that still looks
        alive. The host's /health is answered by whichever process serves the socket now: the same pid means
        the process lives; a dying one never accepts, so the probe waits for its successor (another pid) or
        fails when the keeper is gone too. `wait_s` only bounds a host that answers nothing at all."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            status = read_status(ready.socket)
            if status is not None and status.get("pid") != ready.pid and status.get("last_exit"):
                return str(status["last_exit"])
            if status is not None and status.get("state") == "failed":
                return str(status.get("last_exit") or status.get("error") or "failed")
            if not keeper_alive(ready.socket):
                return "the model host is gone"
            if _alive(ready.pid) and status is not None and status.get("pid") == ready.pid:
                if health_pid(ready, deadline - time.monotonic()) == ready.pid:
                    return None
                # another pid answered, or none: the status file names the successor, or the keeper is gone
            time.sleep(0.01)
        return None if _alive(ready.pid) else "the model process is gone"

    def unavailable(self, model: str, cause: str) -> ModelUnavailable:
        return ModelUnavailable(f"local/{model}: the model process died ({cause}); a fresh one starts on the next "
                                "call: resume the run to continue")


def stop(sock: Path, timeout_s: float = 5.0) -> None:
    """Stop the host on `sock` (its keeper takes its model process with it) and wait until it is gone."""
    stop_all_of([sock], timeout_s)


def stop_all(state_dir: Path, timeout_s: float = 5.0) -> None:
    """Stop every model host under `state_dir`."""
    directory = hosts_dir(state_dir)
    stop_all_of([p.with_suffix(".sock") for p in directory.glob("*.lock")] if directory.is_dir() else [], timeout_s)


def stop_all_of(socks: list[Path], timeout_s: float) -> None:
    for sock in socks:
        status = read_status(sock)
        if status and status.get("keeper_pid") and keeper_alive(sock):
            _signal_keeper(sock, pid_of(status, "keeper_pid"), signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while any(keeper_alive(s) for s in socks) and time.monotonic() < deadline:
        time.sleep(0.01)


def _signal_keeper(sock: Path, pid: int, sig: int) -> None:
    """Signal the keeper the status file names, only when that pid is still it: a keeper killed outright leaves
    its status file, and its pid may since belong to any process (pids wrap). Through a pidfd opened first, so
    the process checked is the process signalled."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
        mine = os.path.realpath(sock)
        serving = any(a == b"--socket" and os.path.realpath(os.fsdecode(b)) == mine for a, b in zip(argv, argv[1:]))
        if serving and b"sentinel.models.host_process" in argv:
            signal.pidfd_send_signal(fd, sig)
    except OSError:
        pass
    finally:
        os.close(fd)


def last_line(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    return f"{lines[-1]} (see {log})" if lines else f"see {log}"


def health_pid(ready: Ready, timeout_s: float) -> int | None:
    """The pid that answers the host's /health now, or None when nothing answers within `timeout_s`."""
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(max(timeout_s, 0.01))
            conn.connect(ready.address)
            conn.sendall(b"GET /health HTTP/1.0\r\nHost: model-host\r\n\r\n")
            reply = b""
            while piece := conn.recv(65536):
                reply += piece
    except OSError:
        return None
    try:
        pid = json.loads(reply.partition(b"\r\n\r\n")[2]).get("pid")
    except (ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) else None


def _alive(pid: int) -> bool:
    """Running, not a zombie its keeper has yet to reap (a zombie still answers kill(pid, 0))."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def rss_mb(pid: int | None) -> float | None:
    if not pid:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def status(state_dir: Path) -> list[JSONObject]:
    """Each model host under `state_dir`: model, pid, RSS (MB), state, restarts, last exit."""
    out: list[JSONObject] = []
    directory = hosts_dir(state_dir)
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        sock = path.with_suffix(".sock")
        data = read_status(sock)
        if data is None:
            continue
        alive = keeper_alive(sock)
        state = data.get("state") if alive or data.get("state") == "failed" else "stopped"
        out.append({"model": f"local/{data.get('model')}", "pid": data.get("pid") if alive else None,
                    "rss_mb": rss_mb(pid_of(data) or None) if alive else None, "state": state,
                    "restarts": data.get("restarts", 0), "last_exit": data.get("last_exit"),
                    **({"error": data["error"]} if data.get("error") else {})})
    return out


class HostedModel:
    """`local/<model>` for a caller without Muzzle (muzzle.enabled: false, hooks' local judge)."""

    def __init__(self, name: str, model: str, hosts: Hosts, *, timeout_s: float = 300.0):
        self.name = name
        self.model = model
        self.hosts = hosts
        self.timeout_s = timeout_s

    def complete(self, messages: list[JSONObject], tools: list[JSONObject], *,
                 on_delta: OnDelta | None = None, on_progress: OnProgress | None = None,
                 **options: JSON) -> Completion:
        import httpx2 as httpx  # the stack the openai client loads too

        from sentinel.models.openai_compat import OpenAICompatClient

        ready = self.hosts.ensure(self.model)
        http = httpx.Client(transport=httpx.HTTPTransport(uds=ready.address), timeout=self.timeout_s)
        try:
            client = OpenAICompatClient(self.name, self.name, HOST_URL, None, timeout_s=self.timeout_s,
                                        http_client=http)
            return client.complete(messages, tools, on_delta=on_delta, on_progress=on_progress, **options)
        except ModelError:
            cause = self.hosts.cause(self.model, ready)
            if cause is not None:
                raise self.hosts.unavailable(self.model, cause) from None
            raise
        finally:
            http.close()
