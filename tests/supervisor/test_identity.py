"""Identity: one name for the agent and its Linux user; setup writes the tree as that user, never as root."""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from sentinel.supervisor.identity import check_name, normalize
from sentinel.errors import UsageError
from sx_helpers import as_user, write_as


@pytest.mark.parametrize("display,name", [("Bars Agent", "bars_agent"), ("Naomi", "naomi"), ("Zoë  O'Neil", "zoe_o_neil"),
                                          ("  __x--y__ ", "x_y"), ("A" * 40, "a" * 32)])
def test_normalize(display, name):
    assert normalize(display) == name


@pytest.mark.parametrize("display,why", [("!!!", "no letters or digits"), ("", "no letters or digits"),
                                         ("42", "must start with a letter"), ("Root", "reserved"),
                                         ("www-data", "reserved"), ("Sentinel", "reserved")])
def test_bad_names_get_one_line_errors(display, why):
    with pytest.raises(UsageError, match=why):
        check_name(display)


def test_setup_without_root_is_a_clear_error(sentinel_cmd):
    if os.geteuid() == 0:
        pytest.skip("checks the non-root message")
    proc = sentinel_cmd("setup", "--name", "x")
    assert proc.returncode == 2 and "root" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.root
def test_setup_creates_the_user_and_its_tree_as_that_user(system, make_agent, sentinel_cmd):
    name = make_agent("Sx Tree Test")
    assert name == "sx_tree_test"
    pw = pwd.getpwnam(name)
    home, root = Path(pw.pw_dir), Path(pw.pw_dir) / ".sentinel"
    assert pw.pw_shell == "/usr/sbin/nologin" and os.getgrouplist(name, pw.pw_gid) == [pw.pw_gid]
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for sub in ("agents", "skills", "tools", "memory", "runs", "workflows", "watchers", "workspace"):
        st = (root / sub).stat()
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (pw.pw_uid, pw.pw_gid, 0o700), sub
    for rel in ("config.yaml", "user.md", f"agents/{name}.yaml", f"agents/{name}.soul.md"):
        st = (root / rel).stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (pw.pw_uid, 0o600), rel
    assert yaml.safe_load((root / f"agents/{name}.yaml").read_text())["display_name"] == "Sx Tree Test"
    assert yaml.safe_load((root / "config.yaml").read_text())["default_agent"] == name
    assert (root / f"agents/{name}.soul.md").read_text().strip()
    policy = Path(system.env["SENTINEL_ETC_DIR"]) / "leash" / f"{name}.yaml"
    assert policy.stat().st_uid == 0 and stat.S_IMODE(policy.stat().st_mode) == 0o644


@pytest.mark.root
def test_rerunning_setup_keeps_everything_and_a_new_name_adds_an_agent(system, make_agent, sentinel_cmd):
    first = make_agent("Sx First")
    user_md = Path(pwd.getpwnam(first).pw_dir) / ".sentinel" / "user.md"
    write_as(first, user_md, "my notes\n")
    again = json.loads(sentinel_cmd("setup", "--name", "Sx First", "--json", check=0).stdout)
    assert again["created"] is False and user_md.read_text() == "my notes\n"
    second = make_agent("Sx Second")
    assert (Path(pwd.getpwnam(first).pw_dir) / ".sentinel" / "agents" / f"{first}.yaml").exists()
    from sentinel.supervisor import registry
    from sentinel.supervisor.server import open_store

    store = open_store(system.state)
    try:
        assert {a.name for a in registry.all_agents(store)} == {first, second}
        assert registry.default(store) == second
    finally:
        store.close()


@pytest.mark.root
def test_an_account_sentinel_did_not_create_is_refused(system, sentinel_cmd):
    human = f"sxhuman{os.getpid()}"
    system.users.append(human)
    subprocess.run(["useradd", "--no-create-home", human], check=True)
    proc = sentinel_cmd("setup", "--name", human)
    assert proc.returncode == 2 and "already exists and was not created by Sentinel" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    reserved = sentinel_cmd("setup", "--name", "daemon")
    assert reserved.returncode == 2 and "reserved" in reserved.stderr


@pytest.mark.root
def test_init_registers_an_existing_user_but_never_an_operator(system, sentinel_cmd):
    user, op = f"sxinit{os.getpid()}", f"sxop{os.getpid()}"
    system.users += [user, op]
    subprocess.run(["groupadd", "--system", system.group], check=False)
    for u in (user, op):
        subprocess.run(["useradd", "--create-home", "--shell", "/usr/sbin/nologin", u], check=True)
    subprocess.run(["usermod", "-aG", system.group, op], check=True)
    out = json.loads(sentinel_cmd("init", "--leash", user, "--muzzle", "--json", check=0).stdout)
    assert out["name"] == user and "Landlock" in out["leash"] and out["muzzle"]
    assert (Path(pwd.getpwnam(user).pw_dir) / ".sentinel" / "agents" / f"{user}.yaml").stat().st_uid == \
        pwd.getpwnam(user).pw_uid
    refused = sentinel_cmd("init", "--leash", op)
    assert refused.returncode == 2 and "is an operator" in refused.stderr
    missing = sentinel_cmd("init", "--leash", "sx_no_such_user")
    assert missing.returncode == 2 and "no Linux user" in missing.stderr


@pytest.mark.root
def test_planted_symlinks_never_make_root_write_or_read_elsewhere(system, make_agent, sentinel_cmd, tmp_path):
    name = make_agent()
    pw = pwd.getpwnam(name)
    root = Path(pw.pw_dir) / ".sentinel"
    victim = Path("/tmp") / f"sx-victim-{os.getpid()}"
    victim.write_text("original\n")
    os.chmod(victim, 0o644)
    try:
        for rel in ("config.yaml", "user.md", f"agents/{name}.soul.md"):
            assert as_user(name, "rm", "-f", str(root / rel)).returncode == 0
            assert as_user(name, "ln", "-s", str(victim), str(root / rel)).returncode == 0
        assert as_user(name, "ln", "-s", "/etc", str(root / "skills2")).returncode == 0
        sentinel_cmd("setup", "--name", name, check=None)
        assert victim.read_text() == "original\n" and victim.stat().st_uid == 0
        # a journal planted as a symlink to a root-only file is never read out by the supervisor
        (tmp_path / "sec").mkdir()
        secret = tmp_path / "sec" / "journal.jsonl"
        secret.write_text(json.dumps({"type": "message", "message": {"role": "user", "content": "TOPSECRET"}}) + "\n")
        from sentinel.supervisor import agentfs

        run_dir = root / "runs" / "r-planted"
        assert as_user(name, "mkdir", str(run_dir)).returncode == 0
        assert as_user(name, "ln", "-s", str(secret), str(run_dir / "journal.jsonl")).returncode == 0
        assert agentfs.read_journal(pw.pw_dir, "r-planted", pw.pw_uid) == ([], 0)
        assert as_user(name, "ln", "-s", str(secret.parent), str(root / "runs" / "r-linkdir")).returncode == 0
        assert agentfs.read_journal(pw.pw_dir, "r-linkdir", pw.pw_uid) == ([], 0)
    finally:
        victim.unlink()



@pytest.mark.root
def test_setup_again_never_imports_a_package_the_agent_put_in_its_home(system, make_agent, sentinel_cmd):
    """Setup writes the tree by running Sentinel as the agent's user from its home: a `sentinel/` package the
    agent's user left there must not be what runs (python -I: the working directory is not on sys.path)."""
    name = make_agent("Sx Planted")
    home = Path(pwd.getpwnam(name).pw_dir)
    marker = home / "PLANTED-RAN"
    assert as_user(name, "mkdir", "-p", str(home / "sentinel" / "supervisor")).returncode == 0
    for init in (home / "sentinel" / "__init__.py", home / "sentinel" / "supervisor" / "__init__.py"):
        write_as(name, init, "")
    write_as(name, home / "sentinel" / "supervisor" / "identity.py", f"open({str(marker)!r}, 'w')\n")
    proc = sentinel_cmd("setup", "--name", name, "--json")
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert (home / ".sentinel" / "agents").is_dir()


@pytest.mark.root
def test_watcher_commands_never_have_root_make_the_agents_workspace(system, make_agent, tmp_path):
    """The watcher child runs as root; the agent's workspace lies in the agent's home, where a link the agent put
    (`~/.sentinel` -> a root-owned directory) would have root create `workspace` wherever it points. Root makes
    nothing there: the command is refused with one line naming the missing workspace."""
    from sentinel import config as config_mod
    from sentinel.supervisor import layout
    from sentinel.watchers.__main__ import _run_command

    name = make_agent("Sx Watch Link")
    home = Path(pwd.getpwnam(name).pw_dir)
    target = tmp_path / "root-only"
    target.mkdir(mode=0o755)
    assert as_user(name, "mv", str(home / ".sentinel"), str(home / ".sentinel.real")).returncode == 0
    assert as_user(name, "ln", "-s", str(target), str(home / ".sentinel")).returncode == 0
    config = config_mod.load(layout.etc_dir()).model_copy(update={"default_agent": name})
    code, output = _run_command(config)(["/bin/true"], 10, None)
    assert code is None and "workspace is missing" in output and "\n" not in output.strip()
    assert list(target.iterdir()) == []
