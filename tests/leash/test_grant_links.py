"""Links never widen a sandbox: a granted path is resolved by Leash, and a link on its way that the agent could
have made (inside a path its tools may write, or, in system mode, one its user may change) is refused, never
followed (sentinel/leash/links.py `resolve`); the ruleset then opens each path with no link in it at all
(sentinel/leash/lsm.py `open_exact`), so a link put in after the check grants nothing.

The attacks: a tool replaces a directory the policy grants (read-only, read-write, a unix socket) with a link to
something outside, and the next launch must not grant the link's target; the same through a workspace given to
`sentinel run`, and through a link an agent's user left in a directory of its own (system mode)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sentinel.errors import UsageError
from sentinel.leash import lsm
from sentinel.leash.policy import LeashPolicy
from sentinel.leash.links import LinkRefused, Owner, resolve
from sentinel.leash.profile import system_real, tool_profile, undo_profile, worker_profile

PROXY = ("127.0.0.1", 1)


def _secret(shared_dir: Path) -> Path:
    secret = shared_dir / "outside" / "secret.txt"
    secret.parent.mkdir(exist_ok=True)
    secret.write_text("SECRET\n")
    os.chmod(secret, 0o666)
    return secret


# -- the attacks, through real launches in both modes -------------------------------------------------------

def test_a_read_only_grant_the_agent_replaced_with_a_link_is_refused_not_followed(leash, shared_dir):
    _secret(shared_dir)
    (leash.workspace / "vendor").mkdir()
    leash.policy(read_only=[str(leash.workspace / "vendor")])
    first = leash("rm -rf vendor && ln -s ../outside vendor && echo swapped")  # the agent's own tool
    assert "swapped" in first.output
    with pytest.raises(LinkRefused, match="goes through the link .*vendor") as refused:
        leash("cat vendor/secret.txt")
    assert "\n" not in str(refused.value)


def test_a_write_grant_nested_in_the_workspace_the_agent_replaced_with_a_link_is_refused(leash, shared_dir):
    secret = _secret(shared_dir)
    (leash.workspace / "out").mkdir()
    leash.policy(read_write=[str(leash.workspace / "out")])
    first = leash("rm -rf out && ln -s ../outside out && echo swapped")
    if "Device or resource busy" in first.output:  # as root the tool's own mounts hold `out` (a mount point);
        (leash.workspace / "out").rmdir()          # a tool without them (a non-root user) swaps it so:
        (leash.workspace / "out").symlink_to("../outside")
    else:
        assert "swapped" in first.output, first.output
    with pytest.raises(LinkRefused, match="inside"):
        leash("echo owned > out/secret.txt")
    assert secret.read_text() == "SECRET\n"


def test_a_unix_socket_entry_the_agent_replaced_with_a_link_is_refused(leash, shared_dir):
    (leash.workspace / "run").mkdir()
    leash.policy(unix_sockets=[str(leash.workspace / "run" / "app.sock")])
    leash("rm -rf run && ln -s /run run")
    with pytest.raises(LinkRefused):
        leash("true")


def test_links_outside_what_the_agent_may_write_are_followed(leash, shared_dir):
    """An operator's link (here: to a directory of real files beside the workspace) is a grant like any other."""
    data = shared_dir / "data"
    data.mkdir()
    (data / "note.txt").write_text("from the operator\n")
    os.chmod(data / "note.txt", 0o644)
    (shared_dir / "data-link").symlink_to(data)
    leash.policy(read_only=[str(shared_dir / "data-link")])
    res = leash(f"cat {shared_dir / 'data-link' / 'note.txt'}")
    assert "from the operator" in res.output


# -- each profile Leash builds, with the extra paths callers add -------------------------------------------

@pytest.fixture
def nested(tmp_path):
    """A workspace holding `sub/`, granted read-write by the policy, then replaced by a link to `elsewhere/`."""
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    (ws / "sub").symlink_to(elsewhere)
    return ws, LeashPolicy(read_write=[str(ws / "sub")])


def test_every_profile_refuses_a_grant_through_a_link_inside_another(nested, tmp_path):
    ws, policy = nested
    builds = [lambda: tool_profile(ws, policy, proxy=PROXY, home=tmp_path / "home"),
              lambda: worker_profile(tmp_path / "home", ws, policy, muzzle_port=1, proxy=PROXY),
              lambda: undo_profile(tmp_path / "run", ws, policy)]
    for build in builds:
        with pytest.raises(LinkRefused, match=f"goes through the link {ws / 'sub'}, inside {ws}"):
            build()


def test_extra_paths_a_caller_grants_are_checked_as_the_profiles_own(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "server").symlink_to("/etc")
    with pytest.raises(LinkRefused):  # an MCP server's `read` inside the workspace (sentinel/mcp/client.py)
        tool_profile(ws, LeashPolicy(), proxy=PROXY, extra_read=[str(ws / "server")], home=tmp_path / "home")
    prof = worker_profile(tmp_path / "home", ws, LeashPolicy(), muzzle_port=1, proxy=PROXY)
    with pytest.raises(LinkRefused):  # what the supervisor adds to a worker's (sentinel/supervisor/workers.py)
        prof.grant_read(ws / "server" / "passwd")


def test_resolve_gives_real_paths_and_takes_a_missing_path_as_written(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "l1").symlink_to("a")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    assert resolve(tmp_path / "l2") == str(tmp_path / "a")
    assert resolve(tmp_path / "l2" / ".." / "a") == str(tmp_path / "a")
    assert resolve(tmp_path / "nope" / ".." / "x") == str(tmp_path / "x")
    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises(UsageError, match="too many levels of links"):
        resolve(tmp_path / "loop")
    if os.path.islink("/lib"):  # merged /usr: the system's own links are followed...
        assert resolve("/lib") == os.path.realpath("/lib")
        assert os.path.realpath("/lib") in system_real([str(tmp_path)])
        with pytest.raises(LinkRefused):  # ...and checked for each profile, though walked once per process
            system_real(["/"])


# -- system mode: a link the agent's user could change, wherever it lies -----------------------------------

@pytest.mark.root
def test_a_link_the_agents_user_could_change_is_refused_wherever_it_lies(leashed_user, shared_dir):
    owner = Owner.of(leashed_user)
    target = shared_dir / "outside"
    own = shared_dir / "own"  # a directory of the agent's (a workspace of an earlier run, say)
    own.mkdir()
    os.chown(own, leashed_user.pw_uid, leashed_user.pw_gid)
    (own / "proj").symlink_to(target)
    with pytest.raises(LinkRefused, match="which the agent's user can change"):
        resolve(own / "proj", (), owner)
    root_dir = shared_dir / "roots"  # root's directory, root's link: followed
    root_dir.mkdir()
    (root_dir / "proj").symlink_to(target)
    assert resolve(root_dir / "proj", (), owner) == str(target)
    (root_dir / "theirs").symlink_to(target)  # a link the agent's user owns, even in root's directory
    os.lchown(root_dir / "theirs", leashed_user.pw_uid, leashed_user.pw_gid)
    with pytest.raises(LinkRefused):
        resolve(root_dir / "theirs", (), owner)
    sticky = shared_dir / "sticky"  # /tmp's kind: anyone may add, only a link's owner may replace it
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    (sticky / "roots").symlink_to(target)
    assert resolve(sticky / "roots", (), owner) == str(target)
    os.chmod(sticky, 0o777)  # without the sticky bit the agent's user could replace root's link
    with pytest.raises(LinkRefused):
        resolve(sticky / "roots", (), owner)


@pytest.mark.root
def test_the_supervisor_resolves_a_run_workspace_refusing_the_agents_link(leashed_user, shared_dir):
    from sentinel.supervisor.ops.runs import _workspace

    own = shared_dir / "own"
    own.mkdir()
    os.chown(own, leashed_user.pw_uid, leashed_user.pw_gid)
    (own / "proj").symlink_to("/")
    with pytest.raises(UsageError, match=r"^--workspace: .*proj goes through the link .*which the agent's user"):
        _workspace(str(own / "proj"), leashed_user)
    (shared_dir / "operators").symlink_to(own)  # the operator's own link, in root's directory: followed
    assert _workspace(str(shared_dir / "operators"), leashed_user) == str(own)


# -- the race: a link put in after the profile was resolved --------------------------------------------------

RACE = textwrap.dedent("""
    import ctypes, os, sys
    from sentinel.leash import lsm
    granted, swapped_in = sys.argv[1], sys.argv[2]
    built = lsm.build(lsm.RulesetSpec(read=[granted], write=[], tcp_connect=[]))
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    lsm.restrict_self(built.fd)
    try:
        print(open(os.path.join(swapped_in, "secret.txt")).read().strip())
    except PermissionError:
        print("denied")
""")


@pytest.mark.skipif(not lsm.abi_version(), reason="no Landlock in this kernel")
def test_a_link_put_in_after_resolution_grants_nothing(shared_dir):
    secret = _secret(shared_dir)
    granted = shared_dir / "vendor"
    granted.mkdir()
    real = resolve(granted)  # what the profile holds
    granted.rmdir()
    granted.symlink_to(secret.parent)  # the swap, between the profile and the ruleset
    with pytest.raises(OSError):
        os.close(lsm.open_exact(real))
    out = subprocess.run([sys.executable, "-c", RACE, real, str(secret.parent)], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "denied", out.stderr


def test_the_keeper_connects_to_an_allowed_socket_only_through_no_link(tmp_path):
    """The keeper decides on the path the caller asked for, then connects: to the entry's file, opened with no
    link on the way, so a directory swapped for a link in between reaches no other socket."""
    import errno
    import socket

    from sentinel.leash.unix_allow import _connect_exact

    (tmp_path / "real").mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "real" / "app.sock"))
    server.listen(1)
    (tmp_path / "swapped").symlink_to(tmp_path / "real")
    with socket.socket(socket.AF_UNIX) as client:
        assert _connect_exact(client, str(tmp_path / "swapped" / "app.sock")) == errno.ELOOP
    with socket.socket(socket.AF_UNIX) as client:
        assert _connect_exact(client, str(tmp_path / "real" / "app.sock")) == 0
        accepted, _ = server.accept()
        client.sendall(b"x")
        assert accepted.recv(1) == b"x"
        accepted.close()
    server.close()


@pytest.mark.root
def test_the_read_only_view_binds_back_no_writable_path_reached_through_a_link(tmp_path):
    """As root a tool's writable paths are bound back read-write over a read-only view (metadata changes,
    which Landlock does not govern): a path swapped for a link after resolution is neither cloned nor mounted."""
    from sentinel.leash import mounts

    (tmp_path / "real").mkdir()
    (tmp_path / "swapped").symlink_to("/")
    rw = mounts._MountAttr(0, mounts.MOUNT_ATTR_RDONLY, 0, 0)
    assert mounts._clone(str(tmp_path / "swapped"), rw, None, directory=True) is None
    assert mounts._clone(str(tmp_path / "missing"), rw, None, directory=True) is None
    tree = mounts._clone(str(tmp_path / "real"), rw, None, directory=True)  # a detached copy, never attached here
    assert tree is not None
    os.close(tree)


def test_a_nested_writable_path_is_bound_back_inside_its_parents_tree(leash, shared_dir):
    (leash.workspace / "out").mkdir()
    if leash.mode == "system":
        os.chown(leash.workspace / "out", leash.uid, -1)
    leash.policy(read_write=[str(leash.workspace / "out")])
    res = leash("echo a > out/f && echo b > g && touch -d 2001-01-01 out/f g && cat out/f g")
    assert res.exit_code == 0 and res.output.split() == ["a", "b"], res.output
