"""`sentinel setup` installs the per-UID egress table idempotently (here into a throwaway network namespace)."""

from __future__ import annotations

import pwd
import secrets
import subprocess

import pytest

pytestmark = pytest.mark.root


@pytest.fixture
def netns():
    name = f"sx-egress-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    yield name
    subprocess.run(["ip", "netns", "del", name], check=True)


def _table(ns):
    return subprocess.run(["ip", "netns", "exec", ns, "nft", "list", "table", "inet", "sentinel"],
                          capture_output=True, text=True)


def test_setup_puts_every_agent_uid_in_the_egress_table(system, make_agent, netns, monkeypatch):
    monkeypatch.setitem(system.env, "SENTINEL_EGRESS", "nftables")
    monkeypatch.setitem(system.env, "SENTINEL_EGRESS_NETNS", netns)
    first, second = make_agent(), make_agent()
    listing = _table(netns)
    assert listing.returncode == 0, listing.stderr
    for name in (first, second):
        assert str(pwd.getpwnam(name).pw_uid) in listing.stdout
    assert str(system.muzzle_port) in listing.stdout and "8790" in listing.stdout  # Muzzle and the egress proxy
    assert listing.stdout.count("table inet sentinel") == 1  # replaced, not duplicated


def test_leash_egress_uninstall_removes_the_table(system, make_agent, netns, monkeypatch, sentinel_cmd):
    monkeypatch.setitem(system.env, "SENTINEL_EGRESS", "nftables")
    monkeypatch.setitem(system.env, "SENTINEL_EGRESS_NETNS", netns)
    make_agent()
    sentinel_cmd("leash", "egress", check=0)
    assert _table(netns).returncode == 0
    sentinel_cmd("leash", "egress", "--uninstall", check=0)
    assert _table(netns).returncode != 0
