"""A `sentinel` process for the tests' `cli` fixture, forked from one that has already imported the CLI.

A fresh `python -m sentinel run` spends most of its CPU importing (openai alone is ~0.4 s), and the suite
starts such a process hundreds of times on two cores. The zygote imports the package once per test worker and
forks a child per call; the child is a real, separate process that runs `python -m sentinel ARGS` exactly as a
fresh one would from its first line on: its own arguments, environment (os.environ replaced, so whatever it
starts inherits it), working directory, stdin/stdout/stderr, exit code, signals and atexit handlers. What it
does not exercise is the interpreter's start and the imports themselves: that is what tests/cli/test_cli_start.py
(fresh processes) and benchmarks/bench_cli.py are for.

    zygote = Zygote.start(tmp_dir)        # one per test worker (session fixture in tests/conftest.py)
    proc = zygote.run(args, env, cwd, timeout)   # a subprocess.CompletedProcess, as subprocess.run would give
    zygote.stop()

SENTINEL_TEST_FRESH=1 in the environment turns it off: every call is then a fresh `python -m sentinel`.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
from pathlib import Path


def _serve(path: str) -> None:
    """The zygote: accept a call (a JSON line and three fds), fork it, answer its pid then its exit status."""
    # the modules `run`, `resume` and `approve` import on their way, as the warm server loads them
    from sentinel.cli.warm_server import preload

    preload()
    import gc

    gc.collect()
    gc.freeze()  # the children's collections never walk (so never copy) the zygote's objects: 0.3 s -> 0.05 s a call
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # bound under another name and renamed once listening: the worker waits for `path` to exist, and a connect
    # between bind() and listen() is refused (seen beside CPU burners: the first call of a worker failed)
    listener.bind(path + ".new")
    listener.listen(64)
    os.rename(path + ".new", path)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    sel.register(sys.stdin, selectors.EVENT_READ, "lifeline")  # closed by the test worker: the zygote ends
    children: dict[int, socket.socket] = {}
    while True:
        for key, _ in sel.select():
            if key.data == "lifeline":
                if os.read(sys.stdin.fileno(), 1):  # only the test worker holds the other end, and never writes
                    sys.stderr.write("zygote: unexpected input on its lifeline; ending\n")
                for pid in children:
                    try:
                        os.kill(pid, 9)
                    except ProcessLookupError:
                        pass
                return
            if key.data is None:
                conn, _ = listener.accept()
                msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                pid = os.fork()
                if pid == 0:
                    sel.close()
                    listener.close()
                    for other in children.values():
                        other.close()
                    _child(json.loads(msg), fds, conn)  # never returns
                for fd in fds:
                    os.close(fd)
                conn.sendall(f"{pid}\n".encode())
                pidfd = os.pidfd_open(pid)
                children[pid] = conn
                sel.register(pidfd, selectors.EVENT_READ, pid)
            else:
                pid = key.data
                sel.unregister(key.fileobj)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                conn = children.pop(pid)
                try:
                    conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:
                    pass
                conn.close()


def _child(call: dict[str, object], fds: list[int], conn: socket.socket) -> None:
    """In the forked child: become `python -m sentinel ARGS` in the call's directory and environment."""
    import runpy

    conn.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    env = call["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(str(call["cwd"]))
    args = call["args"]
    assert isinstance(args, list)
    sys.argv = ["sentinel", *map(str, args)]
    runpy.run_module("sentinel", run_name="__main__", alter_sys=True)
    sys.exit(0)  # through the interpreter's own exit: atexit handlers, stdio flushed, as a fresh process ends


def _text(f: "tempfile._TemporaryFileWrapper[bytes] | object") -> str:
    """A captured stream as subprocess.run(text=True) gives it: the locale's encoding, universal newlines."""
    import locale

    f.seek(0)  # type: ignore[attr-defined]
    data: bytes = f.read()  # type: ignore[attr-defined]
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


class Zygote:
    def __init__(self, proc: subprocess.Popen[bytes], path: Path):
        self.proc, self.path = proc, path

    @classmethod
    def start(cls, directory: Path) -> "Zygote":
        path = directory / "zygote.sock"
        code = f"import sys; sys.path[:0] = [{str(Path(__file__).parent)!r}]; import zygote; zygote._serve({str(path)!r})"
        with open(directory / "zygote.log", "wb") as log:
            proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=log, cwd="/")
        zygote = cls(proc, path)
        zygote._wait_listening()
        return zygote

    def _wait_listening(self) -> None:
        import time

        deadline = time.monotonic() + 120
        while not self.path.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the test zygote did not start")
            time.sleep(0.02)

    def run(self, args: list[str], env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, open(os.devnull, "rb") as null, \
                socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            try:
                conn.connect(str(self.path))
            except OSError as exc:
                raise RuntimeError(f"the test zygote is gone ({exc.strerror}; its exit status: {self.proc.poll()}; "
                                   f"see {self.path.parent / 'zygote.log'})") from None
            call = json.dumps({"args": args, "env": env, "cwd": str(cwd)}).encode()
            socket.send_fds(conn, [call], [null.fileno(), out.fileno(), err.fileno()])
            reader = conn.makefile("r")
            conn.settimeout(timeout)
            pid = int(reader.readline())
            try:
                line = reader.readline()
            except TimeoutError:
                os.kill(pid, 9)
                raise subprocess.TimeoutExpired(["sentinel", *args], timeout) from None
            code = int(line)
            return subprocess.CompletedProcess(["sentinel", *args], code, _text(out), _text(err))

    def stop(self) -> None:
        """End the zygote (it kills any call still running)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
