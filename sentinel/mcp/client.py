"""Connections to MCP servers through the official `mcp` SDK, for synchronous callers (the worker loop, the CLI).

    conn = Connection(name, server, ctx, secret=lookup)   # nothing starts yet
    conn.tools()            -> [ServerTool]    starts the server (once) and lists its tools
    conn.call(tool, args)   -> str             one tools/call; the result as text for the model
    conn.close()

A stdio server runs under Leash (sentinel.leash.launch.serve) with the agent's tool profile: its Landlock
rules (the workspace read-write, system paths and `read:` read-only, nothing of $SENTINEL_HOME), seccomp,
rlimits and cgroup, as the agent's user, and TCP only to the egress proxy when the server lists `network:`
needs and the agent's Leash policy grants network; with `leash.tools: plain` it is a plain subprocess. A
streamable HTTP server is reached from this process with its `headers:` (secrets resolved here, never
put where the agent reads). The SDK's ClientSession runs on one event loop thread per process; a server is
kept between calls (warm), and one that died or stopped answering costs the call that found it so: the next
call starts it again.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable, Coroutine, TypeVar

from sentinel.errors import SentinelError, UsageError
from sentinel.jsontypes import JSONObject, object_in
from sentinel.mcp.settings import McpServer
from sentinel.tools import ToolContext

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.client._transport import ReadStream, WriteStream
    from mcp.client.session import IncomingMessage
    from mcp.shared.message import SessionMessage
    from mcp_types import CallToolResult

    from sentinel.config import Config
    from sentinel.leash.launch import Identity, Served
    from sentinel.leash.profile import Profile

    # What a transport hands the session: the server's messages (or what failed to parse), and ours to it
    Use = Callable[[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]], Awaitable[None]]

T = TypeVar("T")

STDERR_TAIL = 2000
LINE_MAX = 16 * 1024 * 1024
EXIT_WAIT_S = 1.0  # how long a failed call waits for a dying stdio server's exit code

SecretLookup = Callable[[str], str | None]


class McpFailure(SentinelError):
    """The server could not be started, listed or called; the message is for the model or the operator."""


@dataclass(frozen=True)
class ServerTool:
    """One tool as the server lists it."""

    name: str
    description: str
    input_schema: JSONObject

    def document(self) -> JSONObject:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


# -- the event loop -------------------------------------------------------------------------------------------

# One loop per process, run by the calling thread only for the length of each request (under a lock): the
# sessions' reader tasks wait between calls, and a call costs two wake-ups (us, the server), not four as a
# loop thread of its own would (us, loop, server, loop).
_loop_lock = threading.RLock()
_loop: asyncio.AbstractEventLoop | None = None
_loop_pid = 0


def _run(coro: Coroutine[object, object, T], timeout_s: float) -> T:
    """Run `coro` to its end on this process's loop; TimeoutError after `timeout_s` (the coroutine is cancelled)."""
    global _loop, _loop_pid
    with _loop_lock:
        if _loop is None or _loop_pid != os.getpid():
            _loop, _loop_pid = asyncio.new_event_loop(), os.getpid()
        return _loop.run_until_complete(asyncio.wait_for(coro, timeout_s))


# -- a transport over two pipes (the SDK's stdio_client spawns its own process; ours is Leash's) -------------

class _Pipes:
    """The SDK's stream pair over a server's stdout (read) and stdin (write) pipes."""

    def __init__(self, read_fd: int, write_fd: int, stderr_fd: int):
        self.fds = (read_fd, write_fd, stderr_fd)
        self.stderr = ""

    async def run(self, use: "Use") -> None:
        import anyio
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_MAX)
        errors = asyncio.StreamReader(limit=LINE_MAX)
        read_t, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                 os.fdopen(self.fds[0], "rb", 0))
        err_t, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(errors),
                                                os.fdopen(self.fds[2], "rb", 0))
        write_t, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(self.fds[1], "wb", 0))
        incoming_w, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        outgoing, outgoing_r = anyio.create_memory_object_stream[SessionMessage](16)

        async def read() -> None:
            async with incoming_w:
                while line := await reader.readline():
                    if not line.strip():
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError as exc:
                        await incoming_w.send(exc)
                        continue
                    await incoming_w.send(SessionMessage(message))

        async def write() -> None:
            async with outgoing_r:
                async for item in outgoing_r:
                    if write_t.is_closing():
                        break
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    write_t.write(data.encode() + b"\n")

        async def stderr() -> None:
            while chunk := await errors.read(4096):
                self.stderr = (self.stderr + chunk.decode("utf-8", "replace"))[-STDERR_TAIL:]

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(read)
                group.start_soon(write)
                group.start_soon(stderr)
                try:
                    return await use(incoming, outgoing)
                finally:
                    group.cancel_scope.cancel()
        finally:
            for transport in (write_t, read_t, err_t):
                transport.close()


# -- one server ---------------------------------------------------------------------------------------------

class Connection:
    def __init__(self, name: str, server: McpServer, ctx: ToolContext, *, secret: SecretLookup | None = None,
                 on_change: Callable[[], None] | None = None):
        self.name, self.server, self.ctx = name, server, ctx
        self.secret = secret
        self.on_change = on_change  # the server said its tool list changed
        self._lock = threading.Lock()
        self._session: ClientSession | None = None
        self._listed: list[ServerTool] | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Future[None] | None = None
        self._process: Served | subprocess.Popen[bytes] | None = None  # a Popen in plain mode
        self._pipes: _Pipes | None = None
        self._code: JSONObject | None = None  # what the running server's pin covers

    # -- life ---------------------------------------------------------------------------------------------

    def tools(self) -> list[ServerTool]:
        with self._lock:
            self._ensure()
            if self._listed is None:
                self._listed = self._list()
            return list(self._listed)

    def call(self, tool: str, args: JSONObject) -> str:
        """The result as text; an McpFailure when the server is gone or does not answer (it is then stopped)."""
        with self._lock:
            self._ensure()
            try:
                result = _run(self._live().call_tool(tool, args), self.server.timeout_s)
            except TimeoutError:
                self._close()
                raise McpFailure(f"MCP server {self.name!r} did not answer {tool} within {self.server.timeout_s:g}s; "
                                 "it was stopped (the next call starts it again)") from None
            except Exception as exc:  # noqa: BLE001 - any SDK or transport failure costs this call only
                raise self._failed(f"call of {tool}", exc) from None
        return self._redact(render(result, self.ctx.output_max_chars))

    def _redact(self, text: str) -> str:
        """A header secret the server echoes never reaches the model."""
        for key, value in self.server.headers.items():
            if not isinstance(value, str) and self.secret is not None and (secret := self.secret(value.secret)):
                text = text.replace(secret, f"[REDACTED:mcp_header:{key}]")
        return text

    def close(self) -> None:
        with self._lock:
            self._close()

    def _ensure(self) -> None:
        if self._session is not None and self._task is not None and not self._task.done():
            return
        self._close()
        try:
            self._start()
        except McpFailure:
            self._close()
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._failed("start", exc) from None

    def _live(self) -> "ClientSession":
        """The open session (`_ensure` opened it, or raised)."""
        if self._session is None:
            raise McpFailure(f"MCP server {self.name!r}: no session")
        return self._session

    def _list(self) -> list[ServerTool]:
        try:
            listed = _run(self._live().list_tools(), self.server.start_timeout_s)
        except Exception as exc:  # noqa: BLE001
            raise self._failed("tool listing", exc) from None
        return [ServerTool(t.name, t.description or "", dict(t.input_schema or {"type": "object"}))
                for t in listed.tools]

    def _failed(self, what: str, exc: BaseException) -> McpFailure:
        detail = self._exit_detail()
        self._close()
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # the SDK's task groups wrap the cause
            exc = exc.exceptions[0]
        if isinstance(exc, McpFailure):
            return exc  # already says what failed
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return McpFailure(f"MCP server {self.name!r} failed during {what} ({detail or reason}); "
                          "the next call starts it again")

    def _exit_detail(self) -> str:
        """Why a stdio server is gone, when it is: its exit and the end of its stderr."""
        parts = []
        proc = self._process
        if proc is not None:
            code = None
            # the pipe closes as the server dies, a moment before its exit can be collected: wait for that moment
            deadline = time.monotonic() + EXIT_WAIT_S
            while not (proc.poll() is not None if isinstance(proc, subprocess.Popen) else proc.ended()):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            if isinstance(proc, subprocess.Popen):
                code = proc.poll()
            elif proc.ended():
                try:
                    code = proc.result().exit_code
                except SentinelError as exc:
                    parts.append(str(exc))
            if code is not None:
                parts.append(f"exited with code {code}")
        if self._pipes is not None and self._pipes.stderr.strip():
            parts.append("stderr: " + " ".join(self._pipes.stderr.split())[-300:])
        return "; ".join(parts)

    def _start(self) -> None:
        _run(self._begin(), self.server.start_timeout_s + 1)
        if self._session is None:
            assert self._task is not None
            if not self._task.done():
                raise McpFailure(f"MCP server {self.name!r} did not start within {self.server.start_timeout_s:g}s")
            exc = self._task.exception() if not self._task.cancelled() else None
            raise self._failed("start", exc or RuntimeError("it ended during start-up"))

    async def _begin(self) -> None:
        """Start the session's task (it lives until `_close`) and wait until it has listed or failed."""
        opened, self._stop = asyncio.Event(), asyncio.Event()

        async def session() -> None:
            try:
                await self._open(opened)
            finally:
                self._session = None

        self._task = asyncio.ensure_future(session())
        waiting = asyncio.ensure_future(opened.wait())
        await asyncio.wait({self._task, waiting}, timeout=self.server.start_timeout_s,
                           return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()

    async def _open(self, opened: asyncio.Event) -> None:
        from mcp import ClientSession

        async def use(read: "ReadStream[SessionMessage | Exception]", write: "WriteStream[SessionMessage]") -> None:
            async with ClientSession(read, write, message_handler=self._message) as session:
                await session.initialize()
                self._session = session
                opened.set()
                assert self._stop is not None
                await self._stop.wait()

        if self.server.transport == "http":
            await self._http(use)
            return
        pipes = self._pipes = self._spawn()
        await pipes.run(use)

    async def _message(self, message: "IncomingMessage") -> None:
        method = getattr(getattr(message, "root", message), "method", "")
        if method == "notifications/tools/list_changed":
            self._listed = None
            if self.on_change is not None:
                self.on_change()

    async def _http(self, use: "Use") -> None:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(headers=self.headers(), timeout=self.server.timeout_s,
                                      trust_env=False) as http:
            async with streamable_http_client(self.server.url or "", http_client=http) as streams:
                await use(streams[0], streams[1])

    def headers(self) -> dict[str, str]:
        out = {}
        for key, value in self.server.headers.items():
            if isinstance(value, str):
                out[key] = value
                continue
            secret = self.secret(value.secret) if self.secret is not None else None
            if secret is None:
                raise McpFailure(f"MCP server {self.name!r}: header {key} needs secret {value.secret!r}, which "
                                 "Muzzle does not hold (in muzzle.keys_file or the environment)")
            out[key] = value.prefix + secret
        return out

    def _spawn(self) -> _Pipes:
        """Start the stdio server; returns the pipes the transport uses (our ends)."""
        to_server_r, to_server_w = os.pipe2(os.O_CLOEXEC)
        from_server_r, from_server_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        theirs = (to_server_r, from_server_w, err_w)
        try:
            self._process = self._launch(theirs)
        except BaseException:
            for fd in (*theirs, to_server_w, from_server_r, err_r):
                os.close(fd)
            raise
        for fd in theirs:
            os.close(fd)
        return _Pipes(from_server_r, to_server_w, err_r)

    def code(self) -> JSONObject | None:
        """What the running server's pin covers (sentinel/mcp/launch.py `manifest`); None for an HTTP server."""
        return self._code

    def _launch(self, stdio: tuple[int, int, int]) -> "Served | subprocess.Popen[bytes]":
        """Start the server from its resolved command in its own directory, after hashing what it will run."""
        from sentinel.mcp import launch as how

        plain = self.ctx.tools_mode == "plain"
        try:
            argv = how.resolve(self.server.argv)
            home = how.make_workdir(how.workdir(self.name, self.server))
            env = how.environment(self.server, home)
            prof, who = (None, None) if plain else server_profile(self.server, self.ctx, home)
            self._check(argv, home, prof, who)
            code = self._code = how.manifest(argv, home, env, lambda probe: self._probe(probe, home, env, prof, who))
            self._check_files(list(object_in(code["files"])), prof, who)  # {path: sha256}
        except (UsageError, OSError) as exc:
            raise McpFailure(f"MCP server {self.name!r}: {exc}") from None
        argv, env = how.with_workspace(argv, env, Path(self.ctx.workspace))  # after hashing: not part of the pin
        if plain or prof is None or who is None:
            from sentinel.leash import plain as unconfined

            try:
                return unconfined.popen(argv, cwd=home, stdin=stdio[0], stdout=stdio[1], stderr=stdio[2],
                                        new_session=True, env=env, declared=self.server.env)
            except unconfined.PlainRefused as exc:
                raise McpFailure(f"MCP server {self.name!r}: {exc}") from None
        from sentinel.leash.errors import LaunchFailed, SandboxUnavailable
        from sentinel.leash.launch import serve

        try:
            return serve(argv, prof, cwd=home, env=env, stdio=stdio, who=who, sandbox=self.ctx.sandbox)
        except (SandboxUnavailable, LaunchFailed) as exc:
            raise McpFailure(f"the sandbox could not start MCP server {self.name!r} ({exc})") from None

    def _check(self, argv: list[str], home: Path, prof: "Profile | None", who: "Identity | None") -> None:
        """Refuse a directory or code file the agent could rewrite, and a script the sandbox cannot read."""
        from sentinel.mcp import launch as how

        roots = list(prof.write) if prof is not None else [str(self.ctx.workspace)]
        uid = who.uid if who is not None and who.uid is not None else self.ctx.extra.get("agent_uid")
        cmd = how.Command.of(argv)
        for what, path in (("directory", str(home)), ("executable", argv[0]), ("script", cmd.script)):
            if path is None:
                continue
            if (why := how.agent_writable(path, roots, uid)) is not None:
                raise UsageError(f"its {what} could be rewritten by the agent ({why}); use one only the operator "
                                 "can write")
            if prof is not None and what != "directory" and how.outside(path, prof.read):
                folder = os.path.dirname(os.path.realpath(path))
                raise UsageError(f"its {what} {path} is outside the paths it may read: add `--read {folder}` "
                                 f"(sentinel mcp add {self.name} --replace --read {folder} ...) or `read:` in "
                                 "config.yaml")

    def _check_files(self, files: list[str], prof: "Profile | None", who: "Identity | None") -> None:
        """Every code file the pin hashes (a module's whole distribution too) must be one the agent cannot
        rewrite: a hash of a file it could change between the check and the import would prove nothing."""
        from sentinel.mcp import launch as how

        roots = list(prof.write) if prof is not None else [str(self.ctx.workspace)]
        uid = who.uid if who is not None and who.uid is not None else self.ctx.extra.get("agent_uid")
        for path in files:
            if (why := how.agent_writable(path, roots, uid)) is not None:
                raise UsageError(f"its code file could be rewritten by the agent ({why}); install the server "
                                 "where only the operator can write")

    def _probe(self, argv: list[str], home: Path, env: dict[str, str], prof: "Profile | None",
               who: "Identity | None") -> list[str]:
        """Run the interpreter as the server will run (same directory, environment, user and sandbox) to
        list a module's files; its output lines."""
        code: int | None
        if prof is None or who is None:  # plain mode
            from sentinel.leash import plain

            done = plain.run(argv, cwd=home, env=env, text=True, timeout=self.server.start_timeout_s,
                             declared=self.server.env)
            code, output = done.returncode, done.stdout + done.stderr
        else:
            from sentinel.leash.errors import LaunchFailed, SandboxUnavailable
            from sentinel.leash.launch import launch

            try:
                result = launch(argv, prof, cwd=home, env=env, timeout_s=self.server.start_timeout_s, who=who,
                                sandbox=self.ctx.sandbox)
            except (SandboxUnavailable, LaunchFailed) as exc:
                raise McpFailure(f"the sandbox could not start MCP server {self.name!r} ({exc})") from None
            code, output = result.exit_code, result.output
        lines = [line for line in output.splitlines() if line.startswith("{")]
        if code != 0 or not lines:
            tail = " ".join(output.split())[-300:]
            raise UsageError(f"its module could not be found with {argv[0]} ({tail or f'exit {code}'})")
        return lines

    def _close(self) -> None:
        stop, task = self._stop, self._task
        self._session, self._stop, self._task, self._listed = None, None, None, None
        if stop is not None:
            stop.set()
        if task is not None:
            try:
                _run(_ended(task), 5)
            except Exception:  # noqa: BLE001 - a failed session is already being reported
                task.cancel()
        proc, self._process = self._process, None
        if isinstance(proc, subprocess.Popen):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        elif proc is not None:
            proc.stop()


async def _ended(task: "asyncio.Future[None]") -> None:
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: a failed session was reported by the call that found it


_connections: dict[tuple[int | str | None, ...], Connection] = {}


def connection(name: str, server: McpServer, ctx: ToolContext, *, secret: SecretLookup | None = None) -> Connection:
    """This process's connection to a server for this agent and workspace: one server process is kept warm
    across the run's calls (and the runs a process carries on), whatever registers its tools again."""
    key = (os.getpid(), name, server.model_dump_json(), str(ctx.workspace), ctx.agent, ctx.sandbox, ctx.tools_mode,
           ctx.output_max_chars)
    with _loop_lock:
        if not _connections:
            atexit.register(_close_all)
        conn = _connections.get(key)
        if conn is None:
            conn = _connections[key] = Connection(name, server, ctx, secret=secret)
        elif secret is not None:
            conn.secret = secret
        return conn


def _close_all() -> None:
    """At exit: end each session and stop its server (rather than leave the loop with pending tasks)."""
    for conn in list(_connections.values()):
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - the process is ending; the keeper kills what is left
            pass


def muzzle_secrets(config: "Config", home: Path) -> SecretLookup:
    """Secrets as Muzzle holds them: its keys file, then the operator's environment (a worker running as an
    agent user reads neither: its HTTP servers that need one fail to start, and say why)."""
    from sentinel.muzzle.layout import local_layout, read_env_file

    def lookup(name: str) -> str | None:
        keys_file = local_layout(config, home).keys_file
        try:
            keys = read_env_file(keys_file) if keys_file else {}
        except OSError:
            keys = {}
        return keys.get(name) or os.environ.get(name) or None

    return lookup


def server_profile(server: McpServer, ctx: ToolContext, home: Path) -> "tuple[Profile, Identity]":
    """The Leash profile and identity a stdio server runs with: the agent's tool profile, its `read:` paths and
    its own directory `home` read-only, and no TCP at all unless the server lists network needs."""
    from sentinel.leash import settings_cache
    from sentinel.leash.launch import identity
    from sentinel.leash.profile import tool_profile

    who = identity(ctx.agent or None)
    policy = settings_cache.policy_for(ctx.agent or None, system=who.system)
    prof = tool_profile(Path(ctx.workspace), policy, proxy=settings_cache.proxy(), extra_read=[*server.read, str(home)])
    if not server.network:
        prof.network, prof.tcp_connect = False, []
        for key in [k for k in prof.env if k.lower().endswith("_proxy")]:
            prof.env.pop(key)
    return prof, who


def render(result: "CallToolResult", max_chars: int) -> str:
    """A CallToolResult as the text the model reads: its text blocks, other blocks named, truncated."""
    import json

    from mcp_types import EmbeddedResource, TextContent, TextResourceContents

    parts = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind or 'content'} block: {getattr(block, 'mime_type', '') or 'not shown'}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    if len(text) > max_chars:
        head = max_chars * 2 // 3
        text = f"{text[:head]}\n[... {len(text) - max_chars} characters truncated ...]\n{text[-(max_chars - head):]}"
    return f"Error: {text}" if getattr(result, "is_error", False) else text
