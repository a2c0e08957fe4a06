"""The egress proxy: HTTP CONNECT and plain HTTP, each agent's domain allowlist, every decision audited.

Leashed processes can reach nothing but this proxy (Landlock port rules; nftables per UID in system
mode). The proxy identifies the agent by the connecting socket's owner UID (read from
/proc/net/tcp{,6}, loopback only), looks up its allowlist, resolves the name itself and refuses
addresses that are not public unless told otherwise (so an allowed name cannot be pointed at
Muzzle or another local service), then relays bytes. Each allow and deny becomes one audit record
(`kind: egress`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable
from urllib.parse import urlsplit

from sentinel.leash.policy import domain_allowed

MAX_HEAD = 64 * 1024
HOP_HEADERS = {"proxy-authorization", "proxy-connection", "connection", "keep-alive", "te", "trailer", "upgrade"}


@dataclass(frozen=True)
class Grant:
    agent: str
    allow: list[str]


Lookup = Callable[[int | None], "Grant | None"]
Resolver = Callable[[str, int], Awaitable[list[str]]]
Audit = Callable[[dict[str, object]], None]


class Denied(Exception):
    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


async def system_resolve(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def public(addr: str) -> bool:
    ip = ipaddress.ip_address(addr)
    return ip.is_global and not ip.is_multicast


class EgressProxy:
    def __init__(self, lookup: Lookup, audit: Audit, *, resolve: Resolver = system_resolve,
                 allow_private: bool = False, connect_timeout_s: float = 15.0):
        self.lookup, self.audit, self.resolve = lookup, audit, resolve
        self.allow_private, self.connect_timeout_s = allow_private, connect_timeout_s
        # The event loop holds tasks weakly, and a stream from open_connection holds its reader weakly: a
        # tunnel whose client has half-closed, waiting on the upstream's reply, is reachable from nothing
        # else, and the garbage collector closed it mid-relay (the reply was lost). Each connection's task is
        # held here until it ends.
        self.connections: set[asyncio.Task[None]] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.connections.add(task)
            task.add_done_callback(self.connections.discard)
        await self._handle(reader, writer)

    async def close(self) -> None:
        """End every open connection (the server itself is closed by its owner)."""
        for task in list(self.connections):
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        record: dict[str, object] = {"peer": _peer(writer)}
        try:
            head = await _read_head(reader)
            method, target, headers = _parse(head)
            host, port, path = _target(method, target)
            record.update(method=method, host=host, port=port)
            uid = peer_uid(writer)
            record["uid"] = uid
            up_reader, up_writer = await self._open(host, port, uid, record)
        except Denied as exc:
            self._audit(record, "deny", exc.reason)
            await _respond(writer, exc.status, exc.reason)
            return
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            await _close(writer)
            return
        self._audit(record, "allow", str(record.pop("why")))  # _open set it
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            up_writer.write(_origin_request(method, path, headers))
        await _relay(reader, writer, up_reader, up_writer)

    async def _open(self, host: str, port: int, uid: int | None,
                    record: dict[str, object]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        grant = self.lookup(uid)
        if grant is None:
            raise Denied(403, f"no egress grant for uid {uid}")
        record["agent"] = grant.agent
        rule = domain_allowed(host, grant.allow)
        if rule is None:
            raise Denied(403, f"{host} is not in the allowlist of {grant.agent}")
        try:
            addrs = await self.resolve(host, port)
        except OSError as exc:
            raise Denied(502, f"cannot resolve {host}: {exc}") from None
        usable = [a for a in addrs if self.allow_private or public(a)]
        if not usable:
            raise Denied(403, f"{host} resolves only to non-public addresses ({', '.join(addrs[:3])})")
        record["address"] = usable[0]
        try:
            conn = asyncio.open_connection(usable[0], port)
            streams = await asyncio.wait_for(conn, self.connect_timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            raise Denied(502, f"cannot connect to {host}:{port}: {exc or 'timeout'}") from None
        record["why"] = f"allowlist entry {rule}"
        return streams

    def _audit(self, record: dict[str, object], decision: str, reason: str) -> None:
        try:
            self.audit({**record, "decision": decision, "reason": reason})
        except Exception:  # noqa: BLE001 - a failing audit sink must not take the proxy down
            pass

    async def serve(self, host: str, port: int) -> asyncio.base_events.Server:
        return await asyncio.start_server(self.handle, host, port)


# -- HTTP parsing ---------------------------------------------------------------------------------

async def _read_head(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise Denied(431, "request head too large") from None


def _parse(head: bytes) -> tuple[str, str, list[tuple[str, str]]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise Denied(400, "malformed request line")
    headers = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
    return parts[0].upper(), parts[1], headers


def _target(method: str, target: str) -> tuple[str, int, str]:
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            raise Denied(400, "CONNECT needs host:port")
        return host.strip("[]").lower(), int(port), ""
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        raise Denied(400, "plain requests need an absolute http:// URL (use CONNECT for https)")
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    return url.hostname.lower(), url.port or 80, path


def _origin_request(method: str, path: str, headers: list[tuple[str, str]]) -> bytes:
    kept = [(k, v) for k, v in headers if k.lower() not in HOP_HEADERS]
    lines = [f"{method} {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in kept] + ["Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _respond(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    body = f"sentinel egress: {reason}\n".encode()
    phrase = {400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large",
              502: "Bad Gateway"}.get(status, "Error")
    writer.write(f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + body)
    await _close(writer)


async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up_reader: asyncio.StreamReader,
                 up_writer: asyncio.StreamWriter) -> None:
    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            if dst.can_write_eof():
                dst.write_eof()  # half-close: the other direction may still be talking
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass

    try:
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    finally:
        await _close(up_writer)
        await _close(writer)


async def _close(writer: asyncio.StreamWriter) -> None:
    try:
        writer.close()
        await writer.wait_closed()
    except (ConnectionError, OSError):
        pass


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if peer else "?"


# -- who is connecting ----------------------------------------------------------------------------

def peer_uid(writer: asyncio.StreamWriter) -> int | None:
    """Owner uid of the client socket, from /proc/net/tcp{,6} (works for loopback clients only)."""
    peer, local = writer.get_extra_info("peername"), writer.get_extra_info("sockname")
    if not peer or not local:
        return None
    return socket_uid(peer[0], peer[1], local[0], local[1])


def socket_uid(addr: str, port: int, remote_addr: str, remote_port: int) -> int | None:
    want_local = (ipaddress.ip_address(addr), port)
    want_remote = (ipaddress.ip_address(remote_addr), remote_port)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if _endpoint(f[1]) == want_local and _endpoint(f[2]) == want_remote:
                return int(f[7])
    return None


def _endpoint(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    hexaddr, hexport = text.split(":")
    raw = bytes.fromhex(hexaddr)
    # /proc prints the address as host-order 32-bit words
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(raw)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip, int(hexport, 16)


# -- wiring: grants from Leash policies, audit sinks, a background server -------------------------

def policy_lookup(system: bool, policy_dir: Path | None = None) -> Lookup:
    """System mode: the uid's user name -> its policy file. Local mode: $SENTINEL_HOME/leash.yaml."""
    import pwd

    from sentinel.leash import policy, privs

    def lookup(uid: int | None) -> Grant | None:
        if system:
            if uid is None:
                return None
            try:
                name = pwd.getpwuid(uid).pw_name
            except KeyError:
                return None
            path = policy.policy_path(name, system=True, policy_dir=policy_dir)
            if not path.exists():
                return None
        else:  # the operator's own tools: its uid, or as root the uid root's tools run as
            if uid is not None and uid != os.getuid() and not (os.getuid() == 0 and privs.is_tool_uid(uid)):
                return None
            name, path = "local", policy.policy_path(None, system=False)
        pol = policy.load(path)
        return Grant(name, pol.allow_domains) if pol.network else None

    return lookup


def jsonl_audit(path: Path) -> Audit:
    lock = threading.Lock()

    def write(rec: dict[str, object]) -> None:
        line = json.dumps({"t": time.time(), "kind": "egress", **rec}, sort_keys=True, default=str)
        with lock, open(path, "a") as f:
            f.write(line + "\n")

    return write


class Background:
    """The proxy on its own event-loop thread (tests, embedding). `stop()` ends it."""

    def __init__(self, proxy: EgressProxy, host: str = "127.0.0.1", port: int = 0):
        self.proxy, self.host, self.port = proxy, host, port
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: asyncio.Server | None = None

    def start(self) -> "Background":
        self.thread.start()
        fut = asyncio.run_coroutine_threadsafe(self.proxy.serve(self.host, self.port), self.loop)
        server = self.server = fut.result(10)
        self.port = server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        server = self.server

        async def shutdown() -> None:
            if server is not None:
                server.close()
            await self.proxy.close()
            if server is not None:
                await server.wait_closed()

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()
