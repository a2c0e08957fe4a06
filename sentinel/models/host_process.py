"""The model host: one `local/*` model in its own process, served OpenAI-style on a Unix socket.

    python -m sentinel.models.host_process --model NAME --socket PATH [--tool-mode M] [--memory-mb N]
                                   [--idle-s S] [--threads N] [--context-tokens N] [--max-tokens N] [--slots N]

Two processes per model. The keeper (light: no llama.cpp) owns the listening socket and
the status file `PATH.json`; it runs the server child, which loads the model once and
answers `POST /v1/chat/completions` (streamed or not) and `GET /health` on the socket it
inherits. When the child dies (a signal, the OOM killer, an abort), the keeper records why
in the status file and starts a fresh child on the same socket, so the caller's next call
finds the model again; a child that cannot load its model, or crashes three times within a
minute, ends the keeper with the error in the status file. A child idle for `--idle-s`
exits, and the keeper with it.

Memory is bounded for both: a cgroup memory limit where this user may create one (root),
RLIMIT_AS otherwise, so a model too large for the machine fails to load with a clear error
instead of the OOM killer taking some other process.

The socket's directory is private to the owner (0700): in system mode only Muzzle's user can
reach a host, so agents never talk to a model except through Muzzle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING, AsyncIterator

from sentinel import paths, unixsock
from sentinel.jsontypes import JSON, JSONObject
from sentinel.models.hostpaths import status_path

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from sentinel.leash.cgroups import Group
    from sentinel.models.base import Completion, OnDelta
    from sentinel.models.local import Engine
from sentinel.leash import plain

CRASH_WINDOW_S, CRASH_LIMIT = 60.0, 3
LOAD_FAILED = 3  # the child's exit code when the model cannot be loaded


def write_status(sock: Path, data: JSONObject) -> None:
    """Atomically: readers never see half a status."""
    path = status_path(sock)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def default_memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 3 // 4 // 1024
    return 4096


def signal_name(code: int) -> str:
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


# -- the keeper -------------------------------------------------------------------------------


class HostKeeper:
    def __init__(self, args: argparse.Namespace, argv: list[str]):
        self.args = args
        self.sock_path = Path(args.socket)
        self.memory_mb = args.memory_mb or default_memory_mb()
        self.status: JSONObject = {"model": args.model, "argv": [*argv], "keeper_pid": os.getpid(), "pid": None,
                                       "state": "starting", "tool_mode": args.tool_mode, "memory_mb": self.memory_mb,
                                       "limit": None, "restarts": 0, "last_exit": None, "error": None,
                                       "started_at": time.time()}
        self.crashes: list[float] = []
        self.group: Group | None = None
        self.child: subprocess.Popen[bytes] | None = None

    def update(self, **fields: JSON) -> None:
        self.status.update(fields)
        write_status(self.sock_path, self.status)

    def run(self) -> int:
        lock = self._lock()
        if lock is None:
            return 0  # another keeper serves this socket
        listener = self._listen()
        self.status["limit"] = self._limit_memory()
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            return self._loop(listener)
        finally:
            if self.child is not None and self.child.poll() is None:
                self.child.kill()  # the child also has PDEATHSIG: it never outlives its keeper
                self.child.wait()
            if self.status["state"] != "failed":
                for path in (self.sock_path, status_path(self.sock_path)):
                    path.unlink(missing_ok=True)
            if self.group is not None:
                self.group.leave_and_remove()
            os.close(lock)

    def _lock(self) -> int | None:
        return paths.try_lock(self.sock_path.with_suffix(".lock"))

    def _listen(self) -> socket.socket:
        # replaces a dead keeper's socket: we hold the lock, so nobody serves it (the directory is 0700 as well)
        return unixsock.listen(self.sock_path, 0o600, backlog=256)

    def _limit_memory(self) -> str:
        """A cgroup limit for the keeper and its children where one can be made, else RLIMIT_AS (set by the child)."""
        from sentinel.leash import cgroups

        name = f"sentinel-model-{os.getpid()}"
        group = cgroups.Group.create(name)
        if group is not None:
            try:
                group.join()
            except OSError:
                group.leave_and_remove()
                group = None
        if group is not None and group.set_limits(self.memory_mb << 20, None):
            self.group = group
            return "cgroup"
        if group is not None:
            group.leave_and_remove()
        return "rlimit"

    def _loop(self, listener: socket.socket) -> int:
        while True:
            code, ready = self._serve_once(listener)
            if code == 0:
                return 0  # idle: exit with the child
            if code == LOAD_FAILED or not ready:
                self.update(state="failed", pid=None, error=self.status["error"] or f"the model process ended "
                            f"while loading ({self._cause(code)}; its memory limit is {self.memory_mb} MB: "
                            "local.memory_mb)")
                return 1
            now = time.monotonic()
            self.crashes = [t for t in self.crashes if now - t < CRASH_WINDOW_S] + [now]
            cause = self._cause(code)
            if len(self.crashes) >= CRASH_LIMIT:
                self.update(state="failed", pid=None, last_exit=cause,
                            error=f"the model process died {CRASH_LIMIT} times within {CRASH_WINDOW_S:g}s "
                                  f"(last: {cause})")
                return 1
            self.update(state="restarting", pid=None, last_exit=cause, last_exit_at=time.time(),
                        restarts=self.count("restarts") + 1)

    def count(self, key: str) -> int:
        """A counter of the status (restarts, oom_kills)."""
        value = self.status.get(key)
        return value if isinstance(value, int) else 0

    def _cause(self, code: int) -> str:
        cause = signal_name(code)
        if code == -signal.SIGKILL and self._oom_killed():
            cause += f", out of memory: limit {self.memory_mb} MB (local.memory_mb)"
        return cause

    def _oom_killed(self) -> bool:
        if self.group is None:
            return False
        for d in self.group.dirs:
            for name in ("memory.events", "memory.oom_control"):
                try:
                    text = (d / name).read_text()
                except OSError:
                    continue
                counts = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
                if int(counts.get("oom_kill", "0")) > self.count("oom_kills"):
                    self.status["oom_kills"] = int(counts["oom_kill"])
                    return True
        return False

    def _serve_once(self, listener: socket.socket) -> tuple[int, bool]:
        """Run one server child to its end: (exit code, whether it had loaded the model)."""
        a = self.args
        rd, wr = os.pipe()
        argv = [sys.executable, "-I", "-m", "sentinel.models.host_process", "--serve", str(listener.fileno()),
                "--report", str(wr), "--model", a.model, "--socket", a.socket, "--tool-mode", a.tool_mode,
                "--idle-s", str(a.idle_s),
                "--memory-mb", str(self.memory_mb), "--context-tokens", str(a.context_tokens),
                "--max-tokens", str(a.max_tokens), "--slots", str(a.slots),
                *(["--threads", str(a.threads)] if a.threads else []),
                *(["--rlimit"] if self.status["limit"] == "rlimit" else [])]
        child = self.child = plain.popen(argv, cwd="/", env=_child_env(), pass_fds=(listener.fileno(), wr))
        os.close(wr)
        self.update(state="loading", pid=child.pid, error=None)
        ready = False
        with os.fdopen(rd, "r") as reports:  # the child's lines: `ready {json}` or `error MESSAGE`
            for line in reports:
                kind, _, rest = line.rstrip("\n").partition(" ")
                if kind == "ready":
                    ready = True
                    self.update(state="ready", ready_at=time.time(), **json.loads(rest))
                elif kind == "error":
                    self.status["error"] = rest
        return child.wait(), ready


def _child_env() -> dict[str, str]:
    """The server child's whole environment: the minimal one, this user's HOME and the model cache the keeper
    was started with (sentinel/models/hosts.py)."""
    from sentinel.models.weights import cache_dir

    return plain.env({"SENTINEL_MODEL_CACHE": str(cache_dir())}, home=str(Path.home()))


# -- the server child ---------------------------------------------------------------------------


class Server:
    """The loaded model behind an OpenAI-compatible ASGI app; one call at a time."""

    def __init__(self, engine: Engine, idle_s: float, max_tokens: int):
        self.engine = engine
        self.idle_s = idle_s
        self.max_tokens = max_tokens
        self.last = time.monotonic()
        self.busy = 0
        self.streamed = 0  # pieces streamed by the current call (tests kill a host mid-stream by it)
        self.lock = asyncio.Lock()

    def app(self) -> Starlette:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def health(request: Request) -> Response:
            return JSONResponse({"ok": True, "model": self.engine.name, "pid": os.getpid(), "busy": self.busy,
                                 "streamed": self.streamed, "tool_mode": self.engine.tool_mode,
                                 "load_s": round(self.engine.load_s, 3)})

        return Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"]),
                                 Route("/health", health, methods=["GET"])])

    async def chat(self, request: Request) -> Response:
        from starlette.responses import JSONResponse, StreamingResponse

        from sentinel.models.base import ModelError
        from sentinel.models.shapes import completion_dict

        try:
            call = chat_request(json.loads(await request.body()), self.max_tokens)
        except ValueError:
            return JSONResponse({"error": {"message": "the body must be JSON with a `messages` list",
                                           "type": "invalid_request_error"}}, 400)
        if call.stream:
            return StreamingResponse(self._stream(call), media_type="text/event-stream")
        try:
            completion = await self._call(call, None, threading.Event())
        except ModelError as exc:
            return JSONResponse({"error": {"message": str(exc), "type": "api_error"}}, 500)
        return JSONResponse(completion_dict(self.engine.name, completion) if completion else None)

    async def _call(self, call: ChatRequest, on_delta: OnDelta | None, stop: threading.Event) -> Completion | None:
        async with self.lock:
            if stop.is_set():
                return None  # the caller left while waiting for its turn
            self.busy += 1
            self.streamed = 0
            try:
                return await asyncio.to_thread(self.engine.complete, call.messages, call.tools, on_delta=on_delta,
                                               stop=stop, response_format=call.response_format,
                                               max_tokens=call.max_tokens, temperature=call.temperature)
            finally:
                self.busy -= 1
                self.last = time.monotonic()

    async def _stream(self, call: ChatRequest) -> AsyncIterator[bytes]:
        from sentinel.models.base import ModelError
        from sentinel.models.shapes import chunk_base, completion_dict, completion_to_chunks

        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        base = chunk_base(self.engine.name)
        def on_delta(piece: str) -> None:
            self.streamed += 1
            loop.call_soon_threadsafe(queue.put_nowait, piece)

        stop = threading.Event()
        task = asyncio.ensure_future(self._call(call, on_delta, stop))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            yield _sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
            streamed = False
            while (piece := await queue.get()) is not None:
                streamed = True
                yield _sse({**base, "choices": [{"index": 0, "delta": {"content": piece}}]})
        finally:
            stop.set()  # when the caller went away mid-stream, the model stops generating for nobody
        try:
            completion = task.result()
        except ModelError as exc:
            yield _sse({"error": {"message": str(exc), "type": "api_error"}})
            return
        if completion is None:
            return
        for chunk in completion_to_chunks(completion_dict(self.engine.name, completion), skip_content=streamed)[1:]:
            if chunk.get("usage") and not chunk.get("choices") and not call.usage:
                continue
            yield _sse(chunk)
        yield b"data: [DONE]\n\n"

    async def idle_watch(self, server: uvicorn.Server) -> None:
        while not server.should_exit:
            await asyncio.sleep(min(5.0, self.idle_s / 4))
            if not self.busy and time.monotonic() - self.last > self.idle_s:
                server.should_exit = True


@dataclass
class ChatRequest:
    """A chat.completions request body as the model host serves it."""
    messages: list[JSONObject]
    tools: list[JSONObject]
    response_format: JSONObject | None
    max_tokens: int
    temperature: float
    stream: bool
    usage: bool  # stream_options.include_usage: a stream ends with a usage chunk


def chat_request(body: JSON, max_tokens: int) -> ChatRequest:
    """The request a body asks for; ValueError when it has no `messages` list. `max_tokens` caps what it asks."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(body, dict) or not isinstance(messages, list):
        raise ValueError("no messages list")
    tools = body.get("tools")
    functions = [t.get("function", t) for t in tools or [] if isinstance(t, dict)] if isinstance(tools, list) else []
    asked = body.get("max_tokens") or body.get("max_completion_tokens")
    fmt, options, temperature = body.get("response_format"), body.get("stream_options"), body.get("temperature")
    return ChatRequest([m for m in messages if isinstance(m, dict)], [f for f in functions if isinstance(f, dict)],
                       fmt if isinstance(fmt, dict) else None,
                       min(int(asked), max_tokens) if isinstance(asked, int) else max_tokens,
                       float(temperature) if isinstance(temperature, (int, float)) else 0.0,
                       bool(body.get("stream")), isinstance(options, dict) and bool(options.get("include_usage")))


def _sse(obj: JSON) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def serve(args: argparse.Namespace) -> int:
    from sentinel.models.base import ModelError
    from sentinel.models.local import Engine

    report = os.fdopen(args.report, "w", buffering=1)
    from sentinel.leash.privs import set_pdeathsig

    set_pdeathsig(signal.SIGKILL)
    if os.getppid() == 1:
        return 1  # the keeper is already gone
    if args.rlimit:
        limit = args.memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        engine = Engine(args.model, tool_mode=args.tool_mode, n_ctx=args.context_tokens, threads=args.threads,
                        slots=args.slots)
    except (ModelError, MemoryError) as exc:
        why = str(exc) if isinstance(exc, ModelError) else f"model local/{args.model}: out of memory while loading"
        if args.rlimit or "cannot load" in why:
            why += f" (the host's memory limit is {args.memory_mb} MB: local.memory_mb)"
        report.write(f"error {why}\n")
        return LOAD_FAILED
    import uvicorn

    listener = socket.socket(fileno=args.serve)
    host = Server(engine, args.idle_s, args.max_tokens)
    config = uvicorn.Config(host.app(), log_config=None, log_level="warning", access_log=False, lifespan="off",
                            server_header=False, date_header=False, timeout_keep_alive=60)
    server = uvicorn.Server(config)

    async def main() -> None:
        watch = asyncio.ensure_future(host.idle_watch(server))
        report.write("ready " + json.dumps({"load_s": round(engine.load_s, 3)}) + "\n")
        report.close()
        await server.serve(sockets=[listener])
        watch.cancel()

    asyncio.run(main())
    engine.close()
    return 0


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sentinel.models.host_process", description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="catalog name or PATH.gguf (without `local/`)")
    p.add_argument("--socket", required=True, help="Unix socket path; the status file is beside it (.json)")
    p.add_argument("--tool-mode", default="native", choices=("scaffold", "native", "grammar"))
    p.add_argument("--memory-mb", type=int, default=None)
    p.add_argument("--idle-s", type=float, default=900.0)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--context-tokens", type=int, default=8192)
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--slots", type=int, default=2)
    p.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)  # the child: the listening fd
    p.add_argument("--report", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--rlimit", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.serve is not None:
        return serve(args)
    return HostKeeper(args, argv).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
