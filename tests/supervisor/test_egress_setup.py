"""The per-UID egress table follows the agents (here in a throwaway network namespace): `sentinel setup` adds an
agent's uid idempotently, `sentinel agent remove` and a supervisor start drop uids that are no agent's."""

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


def _uids_in(netns) -> set[int]:
    import re

    listing = _table(netns).stdout
    match = re.search(r"elements = \{([^}]*)\}", listing)
    return {int(u) for u in match.group(1).replace(",", " ").split()} if match else set()


def test_removing_an_agent_takes_its_uid_out_and_with_user_its_account(system, make_agent, netns, monkeypatch,
                                                                       sentinel_cmd):
    import json
    from pathlib import Path

    monkeypatch.setitem(system.env, "SENTINEL_EGRESS", "nftables")
    monkeypatch.setitem(system.env, "SENTINEL_EGRESS_NETNS", netns)
    gone, kept = make_agent(), make_agent()
    gone_pw, kept_uid = pwd.getpwnam(gone), pwd.getpwnam(kept).pw_uid
    assert {gone_pw.pw_uid, kept_uid} <= _uids_in(netns)
    done = json.loads(sentinel_cmd("agent", "remove", gone, "--user", "--json", check=0).stdout)
    assert done["user_deleted"] is True and done["egress"] == "nftables"
    assert _uids_in(netns) == {kept_uid}
    with pytest.raises(KeyError):
        pwd.getpwnam(gone)
    assert not Path(gone_pw.pw_dir).exists()
    assert not (Path(system.env["SENTINEL_ETC_DIR"]) / "leash" / f"{gone}.yaml").exists()
    # the next user to get that uid is nobody's agent: it is in no egress set
    heir = f"sxheir{secrets.token_hex(2)}"
    system.users.append(heir)
    made = subprocess.run(["useradd", "--uid", str(gone_pw.pw_uid), "--no-create-home", heir], capture_output=True)
    # 4: the uid is taken already, by a user another test made meanwhile (the suite runs on several workers): that
    # user is the heir, and is nobody's agent just the same
    assert made.returncode in (0, 4), made.stderr
    sentinel_cmd("leash", "egress", check=0)
    assert _uids_in(netns) == {kept_uid}
    again = sentinel_cmd("agent", "remove", gone)
    assert again.returncode == 2 and "no system agent" in again.stderr and "Traceback" not in again.stderr


def test_an_existing_user_registered_with_init_keeps_its_account(system, netns, monkeypatch, sentinel_cmd):
    monkeypatch.setitem(system.env, "SENTINEL_EGRESS", "nftables")
    monkeypatch.setitem(system.env, "SENTINEL_EGRESS_NETNS", netns)
    name = f"sxinit{secrets.token_hex(2)}"
    system.users.append(name)
    subprocess.run(["useradd", "--create-home", name], check=True)
    sentinel_cmd("init", "--leash", name, check=0)
    refused = sentinel_cmd("agent", "remove", name, "--user")
    assert refused.returncode == 2 and "--user" in refused.stderr and pwd.getpwnam(name)
    sentinel_cmd("agent", "remove", name, check=0)
    assert pwd.getpwnam(name).pw_uid not in _uids_in(netns)


def test_the_supervisor_prunes_uids_that_are_no_agents_when_it_starts(system, make_agent, netns, monkeypatch,
                                                                      supervisor, sentinel_cmd):
    from sentinel.leash import nft

    monkeypatch.setitem(system.env, "SENTINEL_EGRESS", "nftables")
    monkeypatch.setitem(system.env, "SENTINEL_EGRESS_NETNS", netns)
    name = make_agent()
    uid = pwd.getpwnam(name).pw_uid
    stale = 4_000_000  # a uid left by a removed agent
    nft.install([uid, stale], [system.muzzle_port, 8790], netns=netns)
    assert stale in _uids_in(netns)
    supervisor()
    sentinel_cmd("status", check=0)
    assert _uids_in(netns) == {uid}
