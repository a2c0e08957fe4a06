"""Who may use the console: a sign-in link per operator, then a session cookie; every change carries a CSRF token.

    guard = Guard(launch, port, hosts=[...], sessions=engine_sessions)
    app = guard.wrap(starlette_app)          # ASGI middleware in front of every route

Checks, in order, on every request:

1. `Host` names this console (loopback names, the configured ones and `web.public_url`'s, with its port): a
   page on another site whose name was rebound to 127.0.0.1 (DNS rebinding) is refused, 403.
2. An `Origin`, when sent, is this console's; a change (POST) must send one. No CORS: no request from
   another origin is ever answered with Access-Control headers; OPTIONS is refused.
3. `PREFIX/login?token=T` trades a one-time sign-in token for a session cookie (HttpOnly, SameSite=Strict,
   Path=PREFIX/, Secure behind an https `public_url`) and redirects; a used, expired or wrong token is
   refused, 403. Tokens are issued to one operator each (`sentinel web` and `sentinel web --sign-in`; in
   system mode by the supervisor, to operators only) and kept as hashes in the store, as are sessions:
   a signed-in browser stays signed in across console restarts until `web.session_days` pass.
   A path under another console's secret prefix (a link made by another console, e.g. another user's now
   listening on the port the link names) is answered, in words, that this console does not serve it, 404.
4. `PREFIX/link/SECRET` (a one-tap decision link from a notification) needs no session: the secret
   decides one approval once (sentinel/web/links.py); its POST must still come from this console's page.
5. Anything else needs the session cookie (401 without it), and a POST also the session's CSRF token
   in `X-CSRF-Token` (403 without it).

PREFIX (`/s/<random>`) is a secret path as well, kept in the store: browsers send cookies to every port of
a host, so a server an agent ran on another loopback port could collect the cookie if the operator's
browser ever visited it; scoped to a path the agent cannot know, the cookie never goes there.
Pages set `Referrer-Policy: no-referrer` so the path never leaks through a link either (a link page sets
`same-origin`: under no-referrer a form POST sends `Origin: null`; other sites still get no referrer).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field
from html import escape
from http.cookies import SimpleCookie
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "sentinel_console"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = ("GET", "HEAD")
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
SECRET_PATHS = "/s/"  # every console's secret path starts so (sentinel/engine/outbox.py console_prefix)
SESSION_CACHE_S = 30.0  # a session ended elsewhere (expired) stops working here within this long

# Every response: no framing, no sniffing, no referrer, nothing cached, scripts and styles from here only.
HEADERS = [
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                 b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]

def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


@dataclass
class Session:
    operator: str
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    created: float = field(default_factory=time.time)


class Sessions(Protocol):
    """Where sign-in tokens and sessions live (the store, through the engine): blocking calls."""

    # untyped: the engine protocol's sign-in and session rows (sentinel/engine/api.py types them so)
    def sign_in(self, token: str) -> dict[str, Any] | None: ...

    # untyped: as above
    def session(self, secret: str) -> dict[str, Any] | None: ...


@dataclass
class Launch:
    """One run of `sentinel web`: the console's secret path, a one-time sign-in token and who it was issued to."""

    prefix: str
    token: str
    operator: str
    console_url: str | None = None  # where the console of this store last listened (links name it)

    def url(self, host: str, port: int) -> str:
        shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
        return f"http://{shown}:{port}{self.prefix}/login?token={self.token}"


class Refusal(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Guard:
    """The ASGI middleware in front of the console; sessions it has seen are remembered for SESSION_CACHE_S."""

    def __init__(self, launch: Launch, port: int, hosts: list[str], sessions: Sessions,
                 public_url: str | None = None):
        self.launch = launch
        self.prefix = launch.prefix
        self.backend = sessions
        self.sessions: dict[bytes, tuple[Session, float]] = {}
        public = urlsplit(public_url) if public_url else None
        self.hosts = allowed_hosts(hosts, port) | ({public.netloc.lower()} if public else set())
        self.origins = {f"http://{h}" for h in self.hosts} | ({f"{public.scheme}://{public.netloc}".lower()}
                                                              if public else set())
        self.secure_host = public.netloc.lower() if public and public.scheme == "https" else None

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                return await app(scope, receive, send)
            send = _with_headers(send)
            try:
                self.check_origin(scope)
                self.check_ours(scope)
                if scope["method"] == "GET" and scope["path"] == f"{self.prefix}/login":
                    return await self.sign_in(scope, send)
                if scope["path"].startswith(f"{self.prefix}/link/"):
                    self.check_link(scope)
                else:
                    scope.setdefault("state", {})["session"] = await self.check_session(scope)
            except Refusal as refusal:
                return await _refuse(scope, send, refusal)
            await app(scope, receive, send)

        return guarded

    # -- the checks ------------------------------------------------------------------------------

    def check_origin(self, scope: Scope) -> None:
        """The request names this console (Host) and, if it says where it comes from, comes from it."""
        headers = _headers(scope)
        host = headers.get("host", "")
        if host.lower() not in self.hosts:
            raise Refusal(403, f"Host {host!r} is not this console's: open the URL `sentinel web` printed")
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            raise Refusal(403, f"Origin {origin!r} is not this console's; cross-origin requests are refused")
        if scope["method"] not in SAFE_METHODS and scope["method"] != "POST":
            raise Refusal(405, f"method {scope['method']} is not allowed")

    def check_ours(self, scope: Scope) -> None:
        """A console path (`/s/<secret>/...`) under another secret was made by another console: another user's
        on the same port, or one of another store. Say so, rather than "not signed in"."""
        path = scope["path"]
        if path.startswith(SECRET_PATHS) and not (path == self.prefix or path.startswith(self.prefix + "/")):
            what = "decision link" if "/link/" in path else "address"
            raise Refusal(404, f"this {what} does not belong to this console: it was made by another Sentinel "
                               "console (another user's, or another installation's), which is not the one listening "
                               "here. Open it where that console serves (its web.public_url, or the address its "
                               "`sentinel web` printed); this console cannot decide it.")

    def check_link(self, scope: Scope) -> None:
        if scope["method"] == "POST" and "origin" not in _headers(scope):
            raise Refusal(403, "a decision must come from the link's page (no Origin header)")

    async def check_session(self, scope: Scope) -> Session:
        """The session cookie, under the secret prefix; for a change, also its CSRF token and an Origin."""
        headers = _headers(scope)
        session = await self.session_of(headers) if scope["path"].startswith(self.prefix + "/") else None
        if session is None:
            raise Refusal(401, "not signed in: open the URL `sentinel web` printed (it works once), or get a new "
                               "one with `sentinel web --sign-in`")
        if scope["method"] == "POST":
            if "origin" not in headers:
                raise Refusal(403, "a change must come from this console's page (no Origin header)")
            if not hmac.compare_digest(headers.get(CSRF_HEADER, "").encode(), session.csrf.encode()):
                raise Refusal(403, "missing or wrong CSRF token: reload the page")
        return session

    async def session_of(self, headers: dict[str, str]) -> Session | None:
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no session
            return None
        morsel = cookie.get(COOKIE)
        if not morsel or not morsel.value:
            return None
        key, now = _digest(morsel.value), time.monotonic()
        cached = self.sessions.get(key)
        if cached and now - cached[1] < SESSION_CACHE_S:
            return cached[0]
        found = await anyio.to_thread.run_sync(self.backend.session, morsel.value)
        if found is None:
            self.sessions.pop(key, None)
            return None
        session = Session(found["operator"], found["csrf"], found["created_at"])
        self.sessions[key] = (session, now)
        return session

    async def sign_in(self, scope: Scope, send: Send) -> None:
        """Trade a one-time sign-in token for a session (each token works once, in any console of this store)."""
        home = f"{self.prefix}/".encode()
        headers = _headers(scope)
        if await self.session_of(headers) is not None:
            return await _redirect(send, home, [])
        token = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token") or [""])[0]
        found = await anyio.to_thread.run_sync(self.backend.sign_in, token) if token else None
        if found is None:
            return await _refuse(scope, send, Refusal(403, "this sign-in link was already used, expired or is not "
                                                           "this console's: get a new one with `sentinel web "
                                                           "--sign-in`"))
        self.sessions[_digest(found["secret"])] = (Session(found["operator"], found["csrf"], found["created_at"]),
                                                   time.monotonic())
        secure = "; Secure" if headers.get("host", "").lower() == self.secure_host else ""
        cookie = f"{COOKIE}={found['secret']}; Path={self.prefix}/; HttpOnly; SameSite=Strict{secure}"
        await _redirect(send, home, [(b"set-cookie", cookie.encode())])


def allowed_hosts(names: list[str], port: int) -> set[str]:
    """`Host` values the console answers to: each name with this port (a name given with a port is kept)."""
    out = set()
    for name in (*LOOPBACK, *names):
        name = name.lower()
        if name.count(":") > 1 and not name.startswith("["):  # a bare IPv6 address
            name = f"[{name}]"
        has_port = name.rsplit("]", 1)[-1].count(":") == 1
        out.add(name if has_port else f"{name}:{port}")
    return out


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _with_headers(send: Send) -> Send:
    """HEADERS on every response, except where the route set that header itself."""
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            own = {name.lower() for name, _ in message.get("headers", [])}
            message = {**message, "headers": [*message.get("headers", []), *(h for h in HEADERS if h[0] not in own)]}
        await send(message)

    return wrapped


async def _redirect(send: Send, location: bytes, extra: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location), (b"content-length", b"0"), *extra]})
    await send({"type": "http.response.body", "body": b""})


async def _refuse(scope: Scope, send: Send, refusal: Refusal) -> None:
    """One line: JSON for the page's script, a small page for a browser navigation."""
    accept = _headers(scope).get("accept", "")
    if "text/html" in accept and scope["method"] == "GET":
        body = (f"<!doctype html><meta charset=utf-8><title>Sentinel console</title>"
                f"<p>{escape(refusal.message)}</p>").encode()
        kind = b"text/html; charset=utf-8"
    else:
        body, kind = json.dumps({"error": refusal.message}).encode(), b"application/json"
    await send({"type": "http.response.start", "status": refusal.status,
                "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
