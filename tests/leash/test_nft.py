"""Per-UID nftables egress, checked as root inside a network namespace made for the test (loopback only)."""

from __future__ import annotations

import secrets
import subprocess
import textwrap

import pytest

from sentinel.leash import nft

pytestmark = pytest.mark.root

PROBE = textwrap.dedent("""
    import socket, sys
    for port in (int(sys.argv[1]), int(sys.argv[2])):
        try:
            socket.create_connection(("127.0.0.1", port), 2).close(); print("tcp", port, "ok")
        except OSError as e: print("tcp", port, "fail", e.errno)
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 53)); print("udp ok")
    except OSError as e: print("udp fail", e.errno)
""")


@pytest.fixture
def netns():
    name = f"sltest-nft-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True)
    yield name
    subprocess.run(["ip", "netns", "del", name], check=True)


def _in_ns(ns, uid, *args):
    cmd = ["ip", "netns", "exec", ns, "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout


def test_leashed_uid_reaches_only_allowed_ports(netns, leashed_user):
    server = subprocess.Popen(["ip", "netns", "exec", netns, "/usr/bin/python3", "-c", textwrap.dedent("""
        import socket, time
        socks = []
        for port in (18787, 18999):
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port)); s.listen(16); socks.append(s)
        print("ready", flush=True); time.sleep(30)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        nft.install([leashed_user.pw_uid], [18787], netns=netns)
        nft.install([leashed_user.pw_uid], [18787], netns=netns)  # idempotent
        assert nft.installed(netns)
        leashed = _in_ns(netns, leashed_user.pw_uid, "/usr/bin/python3", "-c", PROBE, "18787", "18999")
        assert leashed.splitlines() == ["tcp 18787 ok", "tcp 18999 fail 111", "udp fail 1"], leashed
        other = _in_ns(netns, 65534, "/usr/bin/python3", "-c", PROBE, "18787", "18999")
        assert other.splitlines() == ["tcp 18787 ok", "tcp 18999 ok", "udp ok"], other
        nft.uninstall(netns)
        assert not nft.installed(netns)
        freed = _in_ns(netns, leashed_user.pw_uid, "/usr/bin/python3", "-c", PROBE, "18787", "18999")
        assert "tcp 18999 ok" in freed
    finally:
        server.kill()
        server.wait()
        server.stdout.close()
