"""System-mode test helpers and fixtures (re-exported by tests/supervisor/conftest.py and tests/agents/conftest.py):
a throwaway state dir, /etc dir, socket dir and operator group; agents created with `sentinel setup` and deleted
(userdel -r) afterwards; a real `sentinel supervisor` subprocess."""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

PY = sys.executable


def _run(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, **kw)


def as_user(user: str, *argv: str, env: dict | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """Run argv as `user` (runuser, no login shell) with a clean environment plus `env`."""
    pw = pwd.getpwnam(user)
    base = {"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir, "LANG": "C.UTF-8", **(env or {})}
    pairs = [f"{k}={v}" for k, v in base.items()]
    return _run("runuser", "-u", user, "--", "env", "-i", *pairs, *argv, input=input, timeout=60)


def write_as(user: str, path: Path, text: str) -> None:
    proc = as_user(user, "tee", str(path), input=text)
    assert proc.returncode == 0, proc.stderr


def delete_user(name: str) -> None:
    _run("userdel", "-r", name)
    try:
        grp.getgrnam(name)
        _run("groupdel", name)
    except KeyError:
        pass


@pytest.fixture
def system(tmp_path, monkeypatch):
    """Environment for system mode: state, etc and socket paths and an operator group, all throwaway."""
    sock_dir = Path(tempfile.mkdtemp(prefix="sx-run-", dir="/tmp"))
    os.chmod(sock_dir, 0o755)
    group = f"sxops{secrets.token_hex(3)}"
    env = {"SENTINEL_SYSTEM_DIR": str(tmp_path / "sys"), "SENTINEL_ETC_DIR": str(tmp_path / "etc"),
           "SENTINEL_SOCKET": str(sock_dir / "sentinel.sock"), "SENTINEL_OPERATOR_GROUP": group,
           # workers here reach a scripted model on a random loopback port: no host-wide egress table
           "SENTINEL_EGRESS": "off"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    users: list[str] = []

    class System:
        pass

    s = System()
    s.env, s.group, s.socket, s.state = env, group, sock_dir / "sentinel.sock", tmp_path / "sys"
    s.users = users
    yield s
    for name in users:
        delete_user(name)
    _run("groupdel", group)
    shutil.rmtree(sock_dir, ignore_errors=True)


@pytest.fixture
def sentinel_cmd(system):
    def run(*args: str, env: dict | None = None, check: int | None = None, timeout: float = 60):
        full = {**os.environ, **system.env, **(env or {})}
        proc = _run(PY, "-m", "sentinel", *args, env=full, timeout=timeout)
        if check is not None:
            assert proc.returncode == check, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        return proc

    return run


@pytest.fixture
def make_agent(system, sentinel_cmd):
    """`sentinel setup --name NAME` (a unique name by default); the user is deleted after the test."""

    def make(display: str | None = None) -> str:
        display = display or f"Sx {secrets.token_hex(3)}"
        from sentinel.supervisor.identity import normalize

        name = normalize(display)
        system.users.append(name)
        sentinel_cmd("setup", "--name", display, check=0)
        return name

    return make


def agent_config(user: str, server, extra: dict | None = None) -> None:
    """The agent's config.yaml, written as the agent: the scripted model, plain tools, no in-process Muzzle."""
    cfg = {"default_agent": user, "default_model": "fake/m",
           "providers": {"fake": {"base_url": server.base_url}},
           "muzzle": {"enabled": False}, "leash": {"tools": "plain"}, **(extra or {})}
    write_as(user, Path(pwd.getpwnam(user).pw_dir) / ".sentinel" / "config.yaml", yaml.safe_dump(cfg))


class SupervisorProc:
    def __init__(self, system, ports: list[int], extra: list[str] = ()):
        self.system, self.ports, self.extra, self.proc = system, ports, list(extra), None

    def start(self) -> "SupervisorProc":
        args = [PY, "-m", "sentinel", "supervisor"] + [f"--allow-model-port={p}" for p in self.ports] + self.extra
        self.proc = subprocess.Popen(args, env={**os.environ, **self.system.env}, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"supervisor exited: {self.proc.stderr.read()}")
            if _answers(self.system.socket):
                return self
            time.sleep(0.05)
        raise AssertionError("supervisor did not start")

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.proc.stderr.close()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc and self.proc.stderr and not self.proc.stderr.closed:
            self.proc.stderr.close()


def _answers(path: Path) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        sock.close()


@pytest.fixture
def supervisor(system):
    procs: list[SupervisorProc] = []

    def start(ports: list[int], extra: list[str] = ()) -> SupervisorProc:
        proc = SupervisorProc(system, ports, extra).start()
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.stop()


def scripted_bash(command: str, final: str = "All done.") -> list:
    return [{"content": "Working.", "tool_calls": [{"name": "write_file",
                                                    "arguments": {"path": "notes.txt", "content": "hello\n"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            final]
