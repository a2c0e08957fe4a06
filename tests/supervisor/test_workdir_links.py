"""The supervisor makes each MCP server's `workdir:` as root at every worker launch: through no link another user
could have made (sentinel/mcp/launch.py `make_workdir`, workers.mcp_workdirs). The agent is `nobody` here."""

from __future__ import annotations

import os
import pwd
import stat

import pytest

from sentinel.config import Config
from sentinel.errors import UsageError
from sentinel.mcp.launch import make_workdir
from sentinel.supervisor.workers import mcp_workdirs

pytestmark = pytest.mark.root
NOBODY = pwd.getpwnam("nobody").pw_uid


@pytest.fixture
def tree(tmp_path):
    os.chmod(tmp_path, 0o755)
    ws, vault = tmp_path / "ws", tmp_path / "vault"
    ws.mkdir()
    os.chown(ws, NOBODY, NOBODY)
    vault.mkdir(mode=0o700)
    return ws, vault


def agent_link(target, link):
    os.symlink(target, link)
    os.lchown(link, NOBODY, NOBODY)


def test_a_link_the_agent_planted_on_the_way_is_refused(tree):
    ws, vault = tree
    agent_link(vault, ws / "mcp")
    with pytest.raises(UsageError, match=r"/ws/mcp/files/home: goes through the link .*/ws/mcp,"):
        make_workdir(ws / "mcp" / "files" / "home")
    assert os.listdir(vault) == []


def test_mcp_workdirs_names_the_server(tree):
    ws, vault = tree
    agent_link(vault, ws / "mcp")
    config = Config.model_validate({"mcp_servers": {"files": {"command": ["/bin/true"], "workdir": str(ws / "mcp")}}})
    with pytest.raises(UsageError, match=r"^MCP server 'files': workdir .*/ws/mcp: goes through the link"):
        mcp_workdirs(config)
    assert os.listdir(vault) == []


def test_missing_directories_are_made_0755_whatever_the_umask(tree):
    ws, _ = tree
    old = os.umask(0o077)
    try:
        assert make_workdir(ws / "a" / "b") == ws / "a" / "b"
    finally:
        os.umask(old)
    for made in (ws / "a", ws / "a" / "b"):
        st = os.lstat(made)
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o755 and st.st_uid == 0


def test_a_root_link_in_a_root_only_directory_is_followed(tree, tmp_path):
    ws, _ = tree
    etc = tmp_path / "etc"
    etc.mkdir(mode=0o755)
    os.symlink(ws, etc / "servers")
    make_workdir(etc / "servers" / "files")
    assert (ws / "files").is_dir() and not (ws / "files").is_symlink()


def test_a_file_where_the_directory_should_be_is_one_line(tree):
    ws, _ = tree
    (ws / "f").write_text("")
    with pytest.raises(UsageError, match=r"/ws/f/x: Not a directory$"):
        make_workdir(ws / "f" / "x")
