"""The README's system-mode path on this machine, from nothing: the installer's system step, the operator's
edit of /etc/sentinel/config.yaml, `sentinel setup --name "Ux Agent"`, `sentinel supervisor`, a root
`sentinel run ... --agent ux_agent` that finishes, and `sudo -u ux_agent sentinel chat` that answers and
asks y/N inline for a bash call, with the agent's per-UID egress rules installed.

Everything runs in a network namespace of its own (the egress table goes there, Muzzle's default port
8787 is free there, the host's rules are never touched); the files are what the setup code wrote, at
paths moved by the SENTINEL_* overrides so this runs beside a real installation. The model is the
scripted double (a real HTTP server, reached through the real Muzzle)."""

from __future__ import annotations

import ctypes
import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from sx_helpers import SupervisorProc
from test_done_when import _exists
from test_setup_modes import edit_config, sentinel_as_root

pytestmark = pytest.mark.root

CLONE_NEWNET = 0x40000000
APPROVE = r"approve\? \[y/N\]"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|[\r\x08]")


@pytest.fixture
def in_netns():
    """This test's thread, and every process and thread it starts from here on, in a fresh network namespace
    with loopback up; back in the host's afterwards."""
    name = f"sx-real-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True)
    libc = ctypes.CDLL(None, use_errno=True)
    host = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        assert libc.setns(target, CLONE_NEWNET) == 0, os.strerror(ctypes.get_errno())
        yield name
    finally:
        assert libc.setns(host, CLONE_NEWNET) == 0, os.strerror(ctypes.get_errno())
        os.close(host)
        os.close(target)
        subprocess.run(["ip", "netns", "del", name], check=True)


def as_agent(user: str, env: dict, *args: str) -> list[str]:
    """`sudo -u USER ...` (runuser where there is no sudo), with sudo's clean environment plus `env`."""
    pw = pwd.getpwnam(user)
    clean = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": pw.pw_dir, "USER": user, "LOGNAME": user,
             "LANG": "C.UTF-8", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "SENTINEL_WARM": "0", **env}
    become = ["sudo", "-u", user, "--"] if shutil.which("sudo") else ["runuser", "-u", user, "--"]
    return [*become, "env", "-i", *(f"{k}={v}" for k, v in clean.items()), sys.executable, "-m", "sentinel", *args]


class Screen:
    """What a person at the chat's terminal sees (escape sequences taken out)."""

    def __init__(self, child: pexpect.spawn):
        self.child, self.raw, self.pos = child, "", 0

    def expect(self, pattern: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not (match := re.compile(pattern).search(ANSI.sub("", self.raw), self.pos)):
            if time.monotonic() > deadline or not self.child.isalive() and not self._more(0):
                raise AssertionError(f"never saw {pattern!r}; the screen:\n{ANSI.sub('', self.raw)[-3000:]}")
            self._more(0.1)
        self.pos = match.end()

    def _more(self, timeout: float) -> bool:
        try:
            self.raw += self.child.read_nonblocking(65536, timeout=timeout)
            return True
        except (pexpect.TIMEOUT, pexpect.EOF):
            return False


def test_ux_agent_from_setup_to_an_inline_approval_at_its_own_terminal(fresh_system, in_netns, scripted_server):
    if _exists("ux_agent"):
        pytest.skip("a user ux_agent already exists on this machine")
    fresh = fresh_system
    fresh.env.update({"SENTINEL_EGRESS": "nftables", "SENTINEL_EGRESS_NETNS": in_netns})
    # The double answers by the conversation's turn: root's run ends at the first, the chat goes on.
    server = scripted_server([
        "Hello, I am Ux Agent.",
        {"content": "Counting.", "tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]},
        "Counted: counter.txt has a line."])

    sentinel_as_root(fresh, module="sentinel.supervisor.install")          # installer/install.sh --system
    edit_config(fresh.etc, {"providers": {"fake": {"base_url": server.base_url}}, "default_model": "fake/m",
                            "muzzle": {"state_dir": str(fresh.base / "muzzle")}})
    fresh.users.append("ux_agent")
    sentinel_as_root(fresh, "setup", "--name", "Ux Agent")
    pw = pwd.getpwnam("ux_agent")
    table = subprocess.run(["nft", "list", "table", "inet", "sentinel"], capture_output=True, text=True)
    assert table.returncode == 0 and str(pw.pw_uid) in table.stdout and "8787" in table.stdout  # egress installed

    sup = SupervisorProc(fresh).start()
    try:
        status = json.loads(sentinel_as_root(fresh, "status", "--json").stdout)
        assert status["mode"] == "system" and status["unreadable"] == [] and "answering" in status["muzzle"]
        run = json.loads(sentinel_as_root(fresh, "run", "say hello", "--agent", "ux_agent", "--json", check=4).stdout)
        # an answer is all this task asks for: nothing the harness can check, so it says so (exit 4)
        assert (run["status"], run["output"]) == ("done_unverified", "Hello, I am Ux Agent.")
        workspace = Path(pw.pw_dir) / ".sentinel" / "workspace"

        command = as_agent("ux_agent", {"SENTINEL_AGENT_SOCKET": str(fresh.agent_socket)}, "chat")
        chat = pexpect.spawn(command[0], command[1:], cwd="/", encoding="utf-8", timeout=60, dimensions=(50, 160))
        screen = Screen(chat)
        try:
            screen.expect(r"system mode: the supervisor runs this chat as agent ux_agent")
            screen.expect("›")
            chat.sendline("hello")
            screen.expect("Hello, I am Ux Agent.")
            screen.expect("›")
            chat.sendline("count the runs")
            screen.expect(r"echo ran >> counter\.txt")
            screen.expect(APPROVE)
            chat.send("y\r")
            screen.expect("Counted: counter.txt has a line.")
            screen.expect("›")
            chat.sendeof()
            chat.expect(pexpect.EOF, timeout=30)
        finally:
            chat.close(force=True)
        assert chat.exitstatus == 0, ANSI.sub("", screen.raw)[-2000:]
        assert (workspace / "counter.txt").read_text() == "ran\n" and (workspace / "counter.txt").stat().st_uid == pw.pw_uid

        [session] = json.loads(sentinel_as_root(fresh, "chats", "--json").stdout)  # a supervised run
        assert (session["user"], session["status"], session["title"]) == ("ux_agent", "idle", "hello")
        shown = json.loads(sentinel_as_root(fresh, "show", session["id"], "--json").stdout)
        [approved] = [d for d in shown["decisions"] if d.get("approval")]
        assert approved["approval"]["by"] == "ux_agent"  # answered at the agent's terminal, recorded by root
        assert not any((Path(pw.pw_dir) / ".sentinel" / "state").glob("muzzle*"))  # no Muzzle of its own
    finally:
        sup.stop()
