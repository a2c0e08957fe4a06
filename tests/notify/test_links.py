"""One-tap decision links, attacked: single use, expiry, the digest they were minted for, nothing more granted.
The console runs in this process (uvicorn in a thread, local mode); runs pause through `sentinel run`."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from sentinel.engine.store import call_digest


@pytest.fixture
def console():
    from sentinel.local.engine import LocalEngine
    from sentinel.web.app import InThread, engines_for
    from sentinel.web.settings import WebSettings

    servers = []

    def start() -> InThread:
        servers.append(InThread(engines_for(LocalEngine()), WebSettings(poll_s=0.1)).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def _link(server, notification: dict) -> str:
    """The notification's decision link, on this console's port (the link names web.port, 8789)."""
    url = notification["decide_url"]
    assert url.startswith("http://127.0.0.1:8789/s/")
    return f"http://127.0.0.1:{server.port}" + url.split("8789", 1)[1]


def _paused_with_link(notify_config, webhook, cli, console, **web):
    hook = webhook()
    notify_config([{"type": "webhook", "url": hook.url, "on": ["approval"], "one_tap": True}], **web)
    run = cli.json("run", "write that it ran to ran.txt", "--json", check=3)
    (got,) = hook.wait(1)
    server = console()
    return run, server, _link(server, got["json"]), f"http://127.0.0.1:{server.port}"


def _post(link: str, origin: str, decision: str = "approve", **extra) -> httpx.Response:
    return httpx.post(link, data={"decision": decision, **extra}, headers={"origin": origin}, timeout=30)


def test_a_link_shows_the_call_then_approves_it_once(notify_config, webhook, cli, console, sentinel_home):
    run, server, link, origin = _paused_with_link(notify_config, webhook, cli, console)
    page = httpx.get(link, timeout=10)
    assert page.status_code == 200 and "set-cookie" not in page.headers
    assert "echo ran &gt;&gt; ran.txt" in page.text and run["approval_id"] in page.text
    assert call_digest("bash", {"command": "echo ran >> ran.txt"}) in page.text
    assert cli.json("show", run["id"], "--json")["status"] == "waiting_approval"  # opening decides nothing
    done = _post(link, origin)
    assert done.status_code == 200 and "approved; the run is" in done.text
    deadline = time.monotonic() + 20
    while (shown := cli.json("show", run["id"], "--json"))["status"] != "done":
        assert time.monotonic() < deadline, shown["status"]
        time.sleep(0.1)
    assert (sentinel_home / "workspace" / "ran.txt").read_text() == "ran\n"
    assert shown["decisions"][0]["approval"]["by"].startswith("one-tap link (webhook http://127.0.0.1:")
    again = _post(link, origin)
    assert again.status_code == 410 and "already used" in again.text
    assert httpx.get(link, timeout=10).status_code == 410


def test_a_second_use_is_refused_even_to_deny(notify_config, webhook, cli, console):
    run, server, link, origin = _paused_with_link(notify_config, webhook, cli, console)
    assert _post(link, origin, "deny", reason="not now").status_code == 200
    refused = _post(link, origin, "approve")
    assert refused.status_code == 410 and "already used" in refused.text
    shown = cli.json("show", run["id"], "--json")
    assert shown["decisions"][0]["approval"]["approved"] is False  # the first use stands


def test_an_expired_link_is_refused(notify_config, webhook, cli, console):
    run, server, link, origin = _paused_with_link(notify_config, webhook, cli, console, link_ttl_s=0.5)
    time.sleep(0.8)
    page = httpx.get(link, timeout=10)
    assert page.status_code == 410 and "expired" in page.text
    assert _post(link, origin).status_code == 410
    assert cli.json("show", run["id"], "--json")["status"] == "waiting_approval"


def test_a_link_whose_call_changed_is_refused(notify_config, webhook, cli, console, sentinel_home):
    run, server, link, origin = _paused_with_link(notify_config, webhook, cli, console)
    from sentinel.engine.store import Store

    changed = {"command": "rm -rf ~"}
    with Store.open(sentinel_home / "state" / "sentinel.db") as store:  # the call is not the one the link was for
        store.conn.execute("UPDATE approvals SET arguments=?, digest=? WHERE id=?",
                           (json.dumps(changed), call_digest("bash", changed), run["approval_id"]))
    page = httpx.get(link, timeout=10)
    assert page.status_code == 410 and "not the one this link was sent for" in page.text
    assert "rm -rf" not in page.text
    assert _post(link, origin).status_code == 410
    assert cli.json("show", run["id"], "--json")["status"] == "waiting_approval"


def test_a_link_grants_nothing_else(notify_config, webhook, cli, console):
    run, server, link, origin = _paused_with_link(notify_config, webhook, cli, console)
    prefix = link.split("/link/")[0]
    with httpx.Client(timeout=10) as client:
        client.get(link)
        assert client.get(prefix + "/").status_code == 401           # no session comes with it
        assert client.get(prefix + f"/runs/{run['id']}").status_code == 401
        assert client.post(f"{prefix}/approvals/{run['approval_id']}/approve", headers={"origin": origin},
                           json={"digest": "x"}).status_code == 401
    wrong = link[:-4] + ("AAAA" if not link.endswith("AAAA") else "BBBB")
    assert httpx.get(wrong, timeout=10).status_code == 410
    assert httpx.post(link, data={"decision": "approve"}, timeout=10).status_code == 403    # no Origin
    assert _post(link, "http://evil.example").status_code == 403                            # another site
    assert cli.json("show", run["id"], "--json")["status"] == "waiting_approval"
    assert _post(link, origin).status_code == 200                                           # still usable once


def test_a_link_names_the_console_that_serves_it(notify_config, webhook, cli, console):
    """The console listens on a port of its own (not web.port, 8789): the link names that listener."""
    hook = webhook()
    notify_config([{"type": "webhook", "url": hook.url, "on": ["approval"], "one_tap": True}])
    server = console()  # started first: it says where it listens
    run = cli.json("run", "write that it ran to ran.txt", "--json", check=3)
    (got,) = hook.wait(1)
    link = got["json"]["decide_url"]
    assert link.startswith(f"http://127.0.0.1:{server.port}/s/"), link
    assert got["json"]["url"].startswith(f"http://127.0.0.1:{server.port}/s/")
    page = httpx.get(link, timeout=10)
    assert page.status_code == 200 and run["approval_id"] in page.text


def test_a_public_url_wins_over_the_listener(notify_config, webhook, cli, console):
    hook = webhook()
    notify_config([{"type": "webhook", "url": hook.url, "on": ["approval"], "one_tap": True}],
                  public_url="https://sentinel.example.com/ops")
    console()
    cli.json("run", "write that it ran to ran.txt", "--json", check=3)
    (got,) = hook.wait(1)
    assert got["json"]["decide_url"].startswith("https://sentinel.example.com/ops/s/")


def test_a_link_opened_on_another_console_says_so_in_words(notify_config, webhook, cli, console, tmp_path):
    """Another user's console now listens where the link points: it says, in words, that the link is not its
    own (not a JSON 401 about signing in), and decides nothing."""
    from sentinel.local.engine import LocalEngine
    from sentinel.web.app import InThread
    from sentinel.web.live import Engines
    from sentinel.web.settings import WebSettings

    run, server, link, _ = _paused_with_link(notify_config, webhook, cli, console)
    other_home = tmp_path / "someone-else"
    other_home.mkdir()
    other = InThread(Engines(lambda: LocalEngine(home=other_home), "local"), WebSettings(poll_s=0.1)).start()
    try:
        path = link.split(str(server.port), 1)[1]
        foreign = f"http://127.0.0.1:{other.port}{path}"
        page = httpx.get(foreign, headers={"accept": "text/html"}, timeout=10)
        assert page.status_code == 404 and "text/html" in page.headers["content-type"]
        assert "does not belong to this console" in page.text and "another Sentinel console" in page.text
        assert "not signed in" not in page.text
        post = httpx.post(foreign, data={"decision": "approve"}, headers={"origin": f"http://127.0.0.1:{other.port}"},
                          timeout=10)
        assert post.status_code == 404 and "does not belong to this console" in post.json()["error"]
    finally:
        other.stop()
    assert cli.json("show", run["id"], "--json")["status"] == "waiting_approval"
    assert httpx.get(link, timeout=10).status_code == 200  # its own console still serves it
