"""The console's routes: pages, fragments the page's script swaps in, the live stream, and the two decisions.

    GET  /                        approvals inbox
    GET  /runs[?status=S]         runs, child runs under their parent      (/runs/table: the rows only)
    GET  /runs/ID                 one run: pending approvals, decisions with every layer, events (live)
    GET  /runs/ID/decisions       the decisions fragment (refreshed when the run decides or resolves)
    GET  /watchers                watcher firings and the operator inbox, when this installation has them
    GET  /stream[?run=ID&after=N] server-sent events: approvals, run changes, one run's events
    POST /approvals/ID/approve    {"digest": D[, "always": true]}  decide exactly what the page showed (always: a
                                                              coding agent's ask joins its repository's allowlist)
    POST /approvals/ID/deny       {"digest": D, "reason": R}

All under the launch's secret prefix, behind `sentinel.web.guard`. Every read and decision goes through the
engine protocol, so the CLI, the chat and this page share one store and each approval resolves once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import AsyncIterator, Callable

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from sentinel.engine.api import Engine, Outcome
from sentinel.errors import Busy, NotFound, SentinelError, UsageError
from sentinel.jsontypes import JSON, JSONObject
from sentinel.web import render
from sentinel.web.live import Engines, Hub, Snapshot, run_events
from sentinel.engine.status import RunStatus

logger = logging.getLogger("sentinel.web")
KEEPALIVE_S = 15.0
RUN_STATUSES = (RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.WAITING_CHILD, RunStatus.DONE,
                RunStatus.DONE_UNVERIFIED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.INTERRUPTED)


class BadRequest(UsageError):
    """The request itself is malformed (400); a UsageError from the engine is a conflict (409)."""


@dataclass
class Console:
    """What every route needs: the engines, the live hub, the templates and the launch's prefix."""

    engines: Engines
    hub: Hub
    templates: render.Templates
    prefix: str
    operator: str

    def page(self, request: Request, name: str, status_code: int = 200, **context: object) -> HTMLResponse:
        session = request.scope["state"]["session"]
        html = self.templates.render(name, prefix=self.prefix, csrf=session.csrf, operator=session.operator,
                                     mode=self.engines.mode, pending_count=len(self.hub.snapshot.pending),
                                     poll_error=self.hub.snapshot.error, **context)
        return HTMLResponse(html, status_code)

    def fragment(self, name: str, **context: object) -> str:
        return self.templates.render(name, prefix=self.prefix, **context)


def _console(request: Request) -> Console:
    console: Console = request.app.state.console  # set once by app.py; starlette's state is untyped
    return console


# -- pages ------------------------------------------------------------------------------------------

async def inbox(request: Request) -> Response:
    c = _console(request)
    snap = await c.hub.refresh()
    return c.page(request, "inbox.html", approvals=render.approval_views(snap.pending, snap.runs))


def _status_filter(request: Request) -> str | None:
    status = request.query_params.get("status") or None
    if status is not None and status not in RUN_STATUSES:
        raise BadRequest(f"status: {status!r} is not one of {', '.join(RUN_STATUSES)}")
    return status


async def runs(request: Request) -> Response:
    c = _console(request)
    status = _status_filter(request)
    snap = await c.hub.refresh()
    return c.page(request, "runs.html", rows=render.run_tree(snap.runs, status), status=status,
                  statuses=RUN_STATUSES)


async def runs_table(request: Request) -> Response:
    c = _console(request)
    snap = c.hub.snapshot if c.hub.snapshot.version else await c.hub.refresh()
    return HTMLResponse(c.fragment("_runs_rows.html", rows=render.run_tree(snap.runs, _status_filter(request))))


async def run_page(request: Request) -> Response:
    c = _console(request)
    run_id = request.path_params["run_id"]
    data, events = await c.engines.call(lambda e: (e.show(run_id), list(e.events(run_id))))
    snap = await c.hub.refresh()
    events = [ev for ev in events if ev.durable]
    return c.page(request, "run.html", run=data, row=snap.runs.get(run_id) or {},
                  chain=render.chain(run_id, snap.runs), children=render.children_of(run_id, snap.runs),
                  approvals=render.approval_views({a.id: a for a in data.pending_approvals},
                                                  snap.runs),
                  events=[c.templates.event(c.prefix, ev) for ev in events],
                  after=events[-1].seq if events else 0)


async def run_decisions(request: Request) -> Response:
    c = _console(request)
    run_id = request.path_params["run_id"]
    data = await c.engines.call(lambda e: e.show(run_id))
    return HTMLResponse(c.fragment("_decisions.html", run=data))


async def watchers(request: Request) -> Response:
    """Firings and the operator inbox come from the engine when it offers them (`firings()`, `inbox()`)."""
    c = _console(request)

    def read(engine: Engine) -> tuple[object, object]:
        firings, notes = getattr(engine, "firings", None), getattr(engine, "inbox", None)
        return (firings() if callable(firings) else None), (notes() if callable(notes) else None)

    firings, notes = await c.engines.call(read)
    return c.page(request, "watchers.html", firings=firings, inbox=notes)


# -- decisions --------------------------------------------------------------------------------------

async def approve(request: Request) -> Response:
    return await _decide(request, approved=True)


async def deny(request: Request) -> Response:
    return await _decide(request, approved=False)


async def _decide(request: Request, approved: bool) -> Response:
    c = _console(request)
    approval_id = request.path_params["approval_id"]
    body = await _json_body(request)
    digest, reason = body.get("digest"), body.get("reason") or ""
    if not isinstance(digest, str) or not digest:
        raise BadRequest("digest: required (the SHA-256 the page showed for this call)")
    if not isinstance(reason, str):
        raise BadRequest("reason: must be text")
    if not approval_id.startswith("a-"):
        raise BadRequest(f"{approval_id!r} is not an approval id")
    always = body.get("always", False)
    if not isinstance(always, bool) or (always and not approved):
        raise BadRequest("always: true or false, and only with approve (a coding agent's ask)")
    value = await decide(c.engines, approval_id, approved, digest, reason, always)
    if isinstance(value, Exception):
        raise value
    verb = "approved" if approved else "denied"
    return JSONResponse({"ok": True, "approval_id": approval_id, "decision": verb, "status": value.status,
                         "message": f"{verb}; the run is {value.status}"})


async def _json_body(request: Request) -> JSONObject:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        raise BadRequest("body: must be a JSON object") from None
    if not isinstance(body, dict):
        raise BadRequest("body: must be a JSON object")
    return body


async def decide(engines: Engines, approval_id: str, approved: bool, digest: str, reason: str,
                 always: bool = False) -> Outcome | Exception:
    """Record the decision and answer: where the run stands, or what failed.

    The engine resolves (refusing a stale digest or an approval already resolved, as the CLI is refused) and
    hands the run's resume to its own runner: local mode's background thread, system mode's worker. No agent
    loop runs in the request; the page hears the run go on over /stream."""
    def act(engine: Engine) -> Outcome:
        if approved:
            return engine.approve(approval_id, digest=digest, follow=False, always=always)
        return engine.deny(approval_id, reason=reason, digest=digest, follow=False)

    return await decided(engines, act, approval_id)


async def decided(engines: Engines, act: Callable[[Engine], Outcome], label: str) -> Outcome | Exception:
    """`act(engine)`, a decision that does not follow its run, in a worker thread: its outcome, or what failed."""
    try:
        return await engines.call(act)
    except SentinelError as exc:
        return exc
    except Exception as exc:  # a harness bug: the page hears of it, the log has the traceback
        logger.exception("deciding %s failed", label)
        return exc


# -- the live stream --------------------------------------------------------------------------------

def _frame(kind: str, data: JSON, ident: int | None = None) -> bytes:
    head = f"id: {ident}\n" if ident is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def stream(request: Request) -> Response:
    c = _console(request)
    run_id = request.query_params.get("run") or None
    after = max(_int(request.query_params.get("after")), _int(request.headers.get("last-event-id")))
    return StreamingResponse(_frames(c, run_id, after), media_type="text/event-stream",
                             headers={"x-accel-buffering": "no"})


def _int(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


async def _frames(c: Console, run_id: str | None, after: int) -> AsyncIterator[bytes]:
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    tasks = [asyncio.ensure_future(_inbox_frames(c, run_id, queue))]
    if run_id:
        tasks.append(asyncio.ensure_future(_run_frames(c, run_id, after, queue)))
    try:
        yield b"retry: 1000\n\n"
        while True:
            try:
                yield await asyncio.wait_for(queue.get(), KEEPALIVE_S)
            except asyncio.TimeoutError:
                yield b": keepalive\n\n"
    finally:
        for task in tasks:
            task.cancel()


async def _inbox_frames(c: Console, run_id: str | None, queue: asyncio.Queue[bytes]) -> None:
    """`approval` (a card to add), `pending` (the ids still pending), `runs` (the registry changed),
    `status` (this page's run changed status), `trouble` (the engine cannot be read)."""
    shown: set[str] = set()
    runs: dict[str, tuple[str, float]] = {}
    async for snap in c.hub.subscribe():
        for view in render.approval_views({k: v for k, v in snap.pending.items() if k not in shown}, snap.runs):
            queue.put_nowait(_frame("approval", {"id": view["id"], "run_id": view["run_id"],
                                                 "html": c.fragment("_approval.html", a=view)}))
        shown = set(snap.pending)
        queue.put_nowait(_frame("pending", {"ids": list[JSON](sorted(shown))}))
        if _marks(snap) != runs:
            runs = _marks(snap)
            queue.put_nowait(_frame("runs", {"count": len(runs)}))
        if run_id and run_id in snap.runs:
            row = snap.runs[run_id]
            queue.put_nowait(_frame("status", {"run_id": run_id, "status": row.status,
                                               "label": render.status_label(row.status)}))
        queue.put_nowait(_frame("trouble", {"error": snap.error}))


def _marks(snap: Snapshot) -> dict[str, tuple[str, float]]:
    return {k: (r.status, r.updated_at) for k, r in snap.runs.items()}


async def _run_frames(c: Console, run_id: str, after: int, queue: asyncio.Queue[bytes]) -> None:
    try:
        async for event in run_events(c.engines, c.hub, run_id, after):
            queue.put_nowait(_frame("event", {"seq": event.seq, "type": event.type,
                                              "html": c.templates.event(c.prefix, event)}, event.seq))
    except SentinelError as exc:
        queue.put_nowait(_frame("trouble", {"error": str(exc)}))


# -- errors -----------------------------------------------------------------------------------------

ERROR_STATUS: list[tuple[type[Exception], int]] = [(BadRequest, 400), (NotFound, 404), (UsageError, 409),
                                                   (Busy, 409), (SentinelError, 502)]


def error_status(exc: Exception) -> int:
    return next((code for kind, code in ERROR_STATUS if isinstance(exc, kind)), 500)


async def sentinel_error(request: Request, exc: Exception) -> Response:
    """One line for the page's script (JSON) or the reader (a page); never a traceback."""
    code = error_status(exc)
    if request.method == "POST" or "text/html" not in request.headers.get("accept", ""):
        return JSONResponse({"error": str(exc)}, code)
    return _console(request).page(request, "error.html", status_code=code, message=str(exc))


ROUTES = [
    Route("/", inbox),
    Route("/runs", runs),
    Route("/runs/table", runs_table),
    Route("/runs/{run_id}", run_page),
    Route("/runs/{run_id}/decisions", run_decisions),
    Route("/watchers", watchers),
    Route("/stream", stream),
    Route("/approvals/{approval_id}/approve", approve, methods=["POST"]),
    Route("/approvals/{approval_id}/deny", deny, methods=["POST"]),
]
