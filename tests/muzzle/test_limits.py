"""Request limits under attack: huge bodies, half-sent headers, connection floods, heavy inspection.

Each attack runs while another client's ordinary call must still succeed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import httpx
import openai
import pytest

Q = [{"role": "user", "content": "q"}]
MB = 1 << 20


def _ok(h, client=None):
    client = client or h.client(h.token())
    return client.chat.completions.create(model="fake/m", messages=Q).choices[0].message.content


def _peak_rss_reset() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # resets VmHWM, the peak resident size


def _peak_rss() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))


def _raw_post(base_url, token, head_extra, body_parts):
    """POST to Muzzle over a raw socket, writing the body from a generator; returns (status line, body)."""
    host, port = base_url.split("//")[1].split("/")[0].split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    try:
        sock.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\n"
                     f"content-type: application/json\r\n{head_extra}\r\n".encode())
        try:
            for part in body_parts:
                sock.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the body was read
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < 20:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
        head, _, body = answer.partition(b"\r\n\r\n")
        return head.split(b"\r\n")[0].decode(), body
    finally:
        sock.close()


def _zeros(total, step=MB):
    sent = 0
    while sent < total:
        yield b"0" * min(step, total - sent)
        sent += step


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_58_mb_request_is_refused_413_without_being_buffered(muzzle, framing):
    h = muzzle(["ok"], muzzle_settings={"max_request_bytes": 4 * MB})
    token = h.token()
    size = 58 * MB
    if framing == "content-length":
        head, parts = f"content-length: {size}\r\n", _zeros(size)
    else:
        head, parts = "transfer-encoding: chunked\r\n", (b"%x\r\n" % len(p) + p + b"\r\n" for p in _zeros(size))
    others = []
    _peak_rss_reset()
    before = _peak_rss()
    worker = threading.Thread(target=lambda: others.append(_ok(h)))
    worker.start()  # another agent's call, during the attack
    status, body = _raw_post(h.base_url, token, head, parts)
    worker.join(30)
    assert status.startswith("HTTP/1.1 413") and json.loads(body)["error"]["code"] == "request_too_large"
    assert others == ["ok"]
    assert _peak_rss() - before < 40 * MB  # at most the cap (4 MB) and buffers, never the 58 MB
    assert "denied:request_too_large" in [line["decision"] for line in h.log()]


def test_an_oversized_body_gets_a_clear_413_in_the_openai_client(muzzle):
    h = muzzle(["ok"], muzzle_settings={"max_request_bytes": MB})
    with pytest.raises(openai.APIStatusError) as err:
        h.client().chat.completions.create(model="fake/m", messages=[{"role": "user", "content": "x" * (3 * MB)}])
    assert err.value.status_code == 413 and "muzzle.max_request_bytes" in err.value.message
    assert _ok(h) == "ok"


def test_a_large_body_is_inspected_off_the_event_loop(muzzle, monkeypatch):
    """2 MB dense with secrets, under the cap: while it is being inspected, another call is answered.

    The inspection of the big body is held until the small call has its answer: were inspection on the
    event loop, the small call could never be answered and the test would time out."""
    from sentinel.muzzle.inspect import Inspector

    h = muzzle(["ok"])
    big = ("export API_KEY=" + "k" * 20 + " and the token is here\n") * (2 * MB // 50)
    inspecting, release = threading.Event(), threading.Event()
    real = Inspector.request

    def held(self, body):
        if len(json.dumps(body)) > MB:
            inspecting.set()
            assert release.wait(30), "the small call was never answered while the big one was held"
        return real(self, body)

    monkeypatch.setattr(Inspector, "request", held)
    done: dict = {}

    def ask_big():
        h.client().chat.completions.create(model="fake/m", messages=[{"role": "user", "content": big}])
        done["big"] = time.monotonic()

    worker = threading.Thread(target=ask_big)
    worker.start()
    assert inspecting.wait(30)
    small = _ok(h)
    upstream_then = len(h.upstream.requests)
    release.set()
    worker.join(120)
    assert small == "ok" and "big" in done
    assert upstream_then == 1  # answered while the big body was still being inspected, not after it
    assert len(h.upstream.requests) == 2 and "k" * 20 not in json.dumps(h.upstream.requests)


def _half_sent(base_url, count, head=b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"):
    host, port = base_url.split("//")[1].split("/")[0].split(":")
    socks = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)))
        sock.sendall(head)
        socks.append(sock)
    return socks


def _answer(sock, timeout=5.0):
    """The status of what the server answered before closing (None: it said nothing)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    finally:
        sock.close()
    return int(data.split()[1]) if data.startswith(b"HTTP/1.1 ") else None


def test_half_sent_headers_are_cut_off_after_the_header_timeout(muzzle):
    h = muzzle(["ok"], muzzle_settings={"header_timeout_s": 0.5})
    socks = _half_sent(h.base_url, 3)
    began = time.monotonic()
    assert [_answer(s) for s in socks] == [408, 408, 408]
    assert time.monotonic() - began < 4
    assert _ok(h) == "ok"


def test_a_body_slower_than_the_body_timeout_is_cut_off_with_408(muzzle):
    h = muzzle(["ok"], muzzle_settings={"body_timeout_s": 0.5})
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {h.token()}\r\n"
            "content-type: application/json\r\ncontent-length: 100\r\n\r\n{\"model\": ").encode()
    began = time.monotonic()
    assert _answer(_half_sent(h.base_url, 1, head)[0]) == 408
    assert time.monotonic() - began < 4
    deadline = time.monotonic() + 5  # the log line follows the close
    while not h.log() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert h.log()[-1]["decision"] == "denied:request_timeout"
    assert _ok(h) == "ok"


def test_a_kept_alive_connection_gets_the_header_timeout_again_for_its_next_request(muzzle):
    h = muzzle(["ok"], muzzle_settings={"header_timeout_s": 0.5})
    with httpx.Client() as client:  # one kept-alive connection, several requests
        for _ in range(2):
            r = client.post(f"{h.base_url}/chat/completions", json={"model": "fake/m", "messages": Q},
                            headers={"authorization": f"Bearer {h.token()}"})
            assert r.status_code == 200
            time.sleep(0.7)  # idle longer than the header timeout: idle is not a slow head
    sock = _half_sent(h.base_url, 1, b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\nPOST /v1/chat/completions HTTP/1.1\r\n")[0]
    began = time.monotonic()
    assert _answer(sock) == 200  # the first answer, then the second head runs out of time and is closed
    assert time.monotonic() - began < 3


def test_a_head_over_64_kib_is_refused_431(muzzle):
    h = muzzle(["ok"])
    head = b"POST /v1/chat/completions HTTP/1.1\r\n" + b"".join(b"x-pad-%d: %s\r\n" % (i, b"a" * 1000)
                                                                   for i in range(80))
    assert _answer(_half_sent(h.base_url, 1, head)[0]) == 431
    assert _ok(h) == "ok"


def test_connections_over_the_per_client_limit_get_429_and_freed_ones_count_again(muzzle):
    h = muzzle(["ok"], muzzle_settings={"max_connections_per_client": 5, "header_timeout_s": 30})
    held = _half_sent(h.base_url, 5)
    time.sleep(0.2)
    extra = _half_sent(h.base_url, 3)
    assert [_answer(s) for s in extra] == [429, 429, 429]
    with pytest.raises(openai.RateLimitError) as err:  # this client (this uid) is at its limit
        _ok(h)
    assert err.value.body["code"] == "too_many_connections"
    for sock in held:
        sock.close()
    time.sleep(0.2)
    assert _ok(h) == "ok"  # closed connections no longer count


def test_a_client_is_its_uid_on_loopback_and_its_address_otherwise():
    from sentinel.muzzle.guard import ConnectionGuard, SocketOwner
    from sentinel.muzzle.settings import MuzzleSettings

    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        conn, peer = server.accept()
        owner = SocketOwner()
        try:
            assert owner(peer, server.getsockname()) == os.getuid()
            assert owner(("127.0.0.1", 1), server.getsockname()) is None  # no such socket on this host
            assert ConnectionGuard(MuzzleSettings(), owner).client(peer, server.getsockname()) == f"uid {os.getuid()}"
        finally:
            owner.close()
            client.close()
            conn.close()
    unknown = ConnectionGuard(MuzzleSettings(), lambda peer, local: None)
    assert unknown.client(("10.1.2.3", 5000), ("10.1.2.4", 8787)) == "address 10.1.2.3"


ATTACKER = r"""
import json, socket, sys, time
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
import resource
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
socks = []
for _ in range(count):
    s = socket.create_connection((host, port))
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: appl")
    socks.append(s)
print("holding", flush=True)
sys.stdin.readline()
answers = {}
for s in socks:
    s.settimeout(10)
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except (socket.timeout, ConnectionResetError):
        data = data or b"still open"
    key = data.split()[1].decode() if data.startswith(b"HTTP/1.1 ") else data.decode()[:20] or "closed"
    answers[key] = answers.get(key, 0) + 1
print(json.dumps(answers), flush=True)
"""


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.root
def test_1100_half_sent_heads_from_one_uid_hold_64_connections_and_starve_no_one_else(muzzle):
    h = muzzle(["ok"], muzzle_settings={"header_timeout_s": 2})
    fds_before = _open_fds()
    host, port = h.base_url.split("//")[1].split("/")[0].split(":")
    with subprocess.Popen([sys.executable, "-c", ATTACKER, host, port, "1100"], user="nobody", group="nogroup",
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as attacker:
        try:
            assert attacker.stdout.readline().strip() == "holding"
            held = _open_fds() - fds_before
            assert _ok(h) == "ok"  # another client (root here) is served while the attack holds its connections
            attacker.stdin.write("go\n")
            attacker.stdin.flush()
            answers = json.loads(attacker.stdout.readline())
        finally:
            attacker.kill()
    assert held <= 64 + 8  # the attacker's 64 and a few of ours, never 1,100
    assert answers == {"429": 1100 - 64, "408": 64}, answers  # refused at once, or cut off at the header timeout
