"""Only the operator who opened the printed URL may use the console: each test makes one attack and asserts it
fails, and that the approval it aimed at is still pending (nothing ran)."""

from __future__ import annotations

import json

from console_helpers import pending

ROUTES = ["/", "/runs", "/runs/table", "/watchers", "/stream", "/static/console.js"]


def _pending() -> list[str]:
    return [a["id"] for a in pending()]


def _digest(approval_id: str) -> str:
    return next(a["digest"] for a in pending() if a["id"] == approval_id)


def test_without_the_session_cookie_every_page_and_action_is_refused(paused, console):
    (run_id, approval_id), = paused()
    c = console()
    anonymous = c.client()
    for path in [*ROUTES, f"/runs/{run_id}", f"/runs/{run_id}/decisions"]:
        answer = anonymous.get(c.base + path, headers={"accept": "text/html"})
        assert answer.status_code == 401, (path, answer.status_code)
        assert "not signed in" in answer.text and approval_id not in answer.text
    for action in ("approve", "deny"):
        answer = anonymous.post(f"{c.base}/approvals/{approval_id}/{action}", json={"digest": "x"},
                                headers={"origin": c.origin, "x-csrf-token": "guess"})
        assert answer.status_code == 401 and "not signed in" in answer.json()["error"]
    forged = anonymous.get(c.base + "/", headers={"cookie": "sentinel_console=forged"})
    assert forged.status_code == 401
    assert anonymous.get(c.origin + "/").status_code == 401  # outside the secret prefix: nothing either
    assert _pending() == [approval_id]


def test_the_one_time_token_signs_in_once(paused, console):
    c = console()
    first = c.client()
    answer = first.get(c.url)
    assert answer.status_code == 303 and answer.headers["location"] == c.base.split(c.origin)[1] + "/"
    cookie = answer.headers["set-cookie"]
    prefix = c.base.split(c.origin)[1]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and f"Path={prefix}/" in cookie
    replay = c.client().get(c.url)
    assert replay.status_code == 403 and "already used" in replay.text
    assert replay.headers.get("set-cookie") is None
    wrong = c.client().get(c.url.split("token=")[0] + "token=" + "A" * 43)
    assert wrong.status_code == 403
    assert first.get(c.base + "/").status_code == 200  # the signed-in browser keeps its session
    assert first.get(c.url).status_code == 303  # and revisiting the link just goes home


def test_a_rebound_host_name_is_refused_even_with_the_token_and_the_cookie(paused, console):
    c = console()
    rebound = {"host": f"attacker.example:{c.port}"}
    stolen = c.client().get(c.url, headers=rebound)
    assert stolen.status_code == 403 and "Host" in stolen.json()["error"]
    session = c.signed_in()  # the token was not spent by the refused request
    for path in ("/", "/stream", "/runs"):
        assert session.get(path, headers=rebound).status_code == 403
    assert session.get("/", headers={"host": "127.0.0.1:1"}).status_code == 403  # another port is another origin
    assert session.get("/", headers={"host": f"localhost:{c.port}"}).status_code == 200


def test_a_foreign_origin_cannot_decide_or_listen(paused, console):
    (run_id, approval_id), = paused()
    c = console()
    session = c.signed_in()
    digest = _digest(approval_id)
    evil = session.decide(approval_id, digest=digest, headers={"origin": "http://evil.example"})
    assert evil.status_code == 403 and "Origin" in evil.json()["error"]
    null = session.decide(approval_id, digest=digest, headers={"origin": "null"})
    assert null.status_code == 403
    no_origin = session.decide(approval_id, digest=digest, headers={"origin": None})
    assert no_origin.status_code == 403
    listen = session.get("/stream", headers={"origin": "http://evil.example"})
    assert listen.status_code == 403
    assert _pending() == [approval_id]


def test_no_cors_preflight_is_answered_and_no_response_allows_another_origin(paused, console):
    c = console()
    session = c.signed_in()
    preflight = session.http.options(c.base + "/approvals/a-x/approve",
                                      headers={"origin": "http://evil.example", "access-control-request-method": "POST"})
    assert preflight.status_code in (403, 405)
    for answer in (preflight, session.get("/"), session.get("/runs"), session.get("/static/console.js")):
        assert not any(h.lower().startswith("access-control-") for h in answer.headers), answer.headers
    page = session.get("/")
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["referrer-policy"] == "no-referrer"


def test_a_change_without_the_right_csrf_token_is_refused(paused, console):
    (run_id, approval_id), = paused()
    c = console()
    session = c.signed_in()
    digest = _digest(approval_id)
    for token in (None, "", "wrong", session.csrf[:-1]):
        answer = session.decide(approval_id, digest=digest, headers={"x-csrf-token": token})
        assert answer.status_code == 403 and "CSRF" in answer.json()["error"], token
    assert _pending() == [approval_id]


def test_a_stale_digest_is_refused_and_the_call_does_not_run(paused, console, sentinel_home):
    (run_id, approval_id), = paused()
    c = console()
    session = c.signed_in()
    stale = session.decide(approval_id, digest="0" * 64)
    assert stale.status_code == 409
    assert "digest shown" in stale.json()["error"] and "reload and decide again" in stale.json()["error"]
    missing = session.decide(approval_id)
    assert missing.status_code == 400 and "digest" in missing.json()["error"]
    assert _pending() == [approval_id]
    assert not (sentinel_home / "workspace" / "ran.txt").exists()


def test_an_approval_already_resolved_in_the_cli_is_refused_and_runs_once(paused, console, cli, sentinel_home):
    (run_id, approval_id), = paused()
    c = console()
    session = c.signed_in()
    digest = _digest(approval_id)
    cli("deny", approval_id, "--reason", "not today", check=1)  # its only call denied: the run failed
    late = session.decide(approval_id, digest=digest)
    assert late.status_code == 409 and f"approval {approval_id} is denied, not pending" == late.json()["error"]
    shown = cli.json("show", run_id, "--json", check=0)
    assert shown["status"] == "failed" and "denied_undone" in shown["error"]
    assert [m["content"] for m in shown["messages"] if m["role"] == "tool"] == ["Denied by the operator: not today"]
    assert not (sentinel_home / "workspace" / "ran.txt").exists()


def test_bad_requests_get_one_line(paused, console):
    c = console()
    session = c.signed_in()
    assert session.get("/runs?status=bogus").status_code == 400
    unknown = session.decide("a-0000000000", digest="0" * 64)
    assert unknown.status_code == 404 and "no approval" in unknown.json()["error"]
    garbage = session.http.post(c.base + "/approvals/a-0000000000/approve", content=b"[1,2",
                                headers={"x-csrf-token": session.csrf, "origin": c.origin})
    assert garbage.status_code == 400 and json.loads(garbage.text)["error"] == "body: must be a JSON object"
    page = session.get("/runs/r-nothere", headers={"accept": "text/html"})
    assert page.status_code == 404 and "no run" in page.text and "Traceback" not in page.text
