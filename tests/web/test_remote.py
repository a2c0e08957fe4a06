"""Remote access: sign-in per operator that survives a console restart, `sentinel web --sign-in` at the public URL
behind a TLS proxy, and `--host` with its warning."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import httpx

from sentinel.local.engine import operator_name

PUBLIC = "https://sentinel.example.test"


def _sign_in(client: httpx.Client, url: str, **kw) -> httpx.Response:
    answer = client.get(url, **kw)
    assert answer.status_code == 303, answer.text
    return answer


def test_a_signed_in_browser_stays_signed_in_across_a_console_restart(console, sentinel_home):
    first = console()
    client = httpx.Client(timeout=10, follow_redirects=False)
    try:
        _sign_in(client, first.url)
        assert client.get(first.base + "/").status_code == 200
        second = console()  # another launch on the same home: same secret path, same sessions
        assert second.base.split("/s/")[1] == first.base.split("/s/")[1]
        cookie = client.cookies.get("sentinel_console")
        again = httpx.get(second.base + "/", headers={"cookie": f"sentinel_console={cookie}"}, timeout=10)
        assert again.status_code == 200 and "Approvals" in again.text
        assert httpx.get(second.base + "/", timeout=10).status_code == 401
        forged = httpx.get(second.base + "/", headers={"cookie": "sentinel_console=" + "x" * 43}, timeout=10)
        assert forged.status_code == 401
    finally:
        client.close()


def test_a_sign_in_link_from_the_cli_works_once_at_the_public_url(console, configure, cli):
    configure({"web": {"public_url": PUBLIC}})
    shown = cli("web", "--sign-in", check=0).stdout.strip()
    assert re.fullmatch(re.escape(PUBLIC) + r"/s/[\w-]+/login\?token=[\w-]+", shown), shown
    c = console(public_url=PUBLIC)
    path = shown[len(PUBLIC):]
    assert path.startswith(c.base.split(c.origin)[1] + "/login")
    proxied = {"host": "sentinel.example.test"}  # what a TLS proxy passes on (docs/notify.md)
    with httpx.Client(timeout=10, follow_redirects=False) as client:
        answer = _sign_in(client, c.origin + path, headers=proxied)
        assert "Secure" in answer.headers["set-cookie"] and "HttpOnly" in answer.headers["set-cookie"]
        secret = re.search(r"sentinel_console=([^;]+)", answer.headers["set-cookie"]).group(1)
        page = client.get(c.base + "/", headers={**proxied, "cookie": f"sentinel_console={secret}"})
        assert page.status_code == 200 and operator_name() in page.text
    with httpx.Client(timeout=10, follow_redirects=False) as other:
        assert other.get(c.origin + path, headers=proxied).status_code == 403  # the token works once
    evil = httpx.get(c.origin + path, headers={"host": "evil.example.test"}, timeout=10)
    assert evil.status_code == 403 and "is not this console's" in evil.text


def test_another_public_origin_is_refused(console):
    c = console(public_url=PUBLIC)
    session = c.signed_in()
    answer = session.decide("a-nothing", digest="0" * 64, headers={"origin": "https://sentinel.example.test.evil"})
    assert answer.status_code == 403 and "Origin" in answer.text


def test_host_prints_an_explicit_warning(sentinel_home):
    env = {**os.environ, "SENTINEL_HOME": str(sentinel_home)}
    proc = subprocess.Popen([sys.executable, "-m", "sentinel", "web", "--host", "127.0.0.2", "--port", "0"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline()
        assert url.startswith("http://127.0.0.2:")
        proc.stderr.readline()
        warning = proc.stderr.readline()
        assert warning.startswith("warning: the console listens on 127.0.0.2: it is reachable from the network")
        assert "TLS" in warning and "docs/notify.md" in warning
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
