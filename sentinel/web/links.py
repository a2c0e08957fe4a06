"""One-tap decision links from notifications (sentinel/notify): a page that shows the call, and one decision.

    GET  /link/SECRET    the approval as it is now: run, tool, arguments, reason, digest; Approve and Deny
    POST /link/SECRET    decision=approve|always|deny[&reason=R]: decides it once, bound to the digest the link was
                         made for (always: a coding agent's ask, whose exact call also joins its repository's allowlist)

Opening the link decides nothing (chat apps fetch links to preview them); the POST does, once. The secret
decides exactly this approval and nothing else: it signs nobody in and shows no other page. A link that was
used, expired, or whose approval changed (another digest) or is no longer pending is refused, 410.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from sentinel.engine.api import Engine, Outcome
from sentinel.errors import SentinelError, UsageError
from sentinel.web import views

REFUSED = 410
FORM_MAX = 8192


async def show(request: Request) -> Response:
    c = views._console(request)
    secret = request.path_params["secret"]
    try:
        view = await c.engines.call(lambda e: e.link(secret))
    except UsageError as exc:  # LinkRefused (over the supervisor's socket: its UsageError)
        return _page(c, "refused", message=str(exc), status_code=REFUSED)
    return _page(c, "ask", a=view["approval"], run=view["run"], expires_at=view["expires_at"])


async def decide(request: Request) -> Response:
    c = views._console(request)
    secret = request.path_params["secret"]
    form = parse_qs((await request.body())[:FORM_MAX].decode("utf-8", "replace"))
    choice = (form.get("decision") or [""])[0]
    if choice not in ("approve", "always", "deny"):
        return _page(c, "refused", message="decision: must be approve, always or deny", status_code=400)
    reason = (form.get("reason") or [""])[0][:2000]

    def act(engine: Engine) -> Outcome:
        # `always`: a coding agent's ask, its exact call allowlisted too
        return engine.decide_link(secret, approved=choice != "deny", reason=reason, follow=False,
                                  always=choice == "always")

    value = await views.decided(c.engines, act, "link")
    if isinstance(value, Exception):
        if isinstance(value, SentinelError):
            code = REFUSED if isinstance(value, UsageError) else views.error_status(value)
            return _page(c, "refused", message=str(value), status_code=code)
        raise value
    verb = "denied" if choice == "deny" else "approved"
    return _page(c, "done", message=f"{verb}; the run is {value.status}")


def _page(c: views.Console, state: str, status_code: int = 200, **context: object) -> HTMLResponse:
    html = c.templates.render("link.html", prefix=c.prefix, state=state, **context)
    # same-origin, not the console's no-referrer: a form POST under no-referrer sends `Origin: null`, which the
    # guard refuses; the link's path still never goes to another site.
    return HTMLResponse(html, status_code, headers={"referrer-policy": "same-origin"})


ROUTES = [Route("/link/{secret}", show), Route("/link/{secret}", decide, methods=["POST"])]
