"""System-mode test helpers and fixtures (re-exported by tests/supervisor/conftest.py and tests/agents/conftest.py):
a throwaway state dir, /etc dir, socket dir, operator group and Muzzle user; agents created with `sentinel setup`
and deleted (userdel -r) afterwards; a real `sentinel supervisor` subprocess, which starts the real Muzzle as its
own user on a free port of this test's own."""

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
    """Run argv as `user` (runuser, no login shell) with a clean environment plus `env` (and the warm start off, as
    in every test: a warm server outlives the test that started it)."""
    pw = pwd.getpwnam(user)
    base = {"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir, "LANG": "C.UTF-8", "SENTINEL_WARM": "0", **(env or {})}
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


from freeport import free_port  # noqa: E402,F401  (re-exported: Muzzle's port of a test's system)


@pytest.fixture
def system(tmp_path, monkeypatch):
    """Environment for system mode: state, etc and socket paths, an operator group and Muzzle's user and port,
    all throwaway. The etc dir is readable by Muzzle's user and the agents, as /etc/sentinel is."""
    base = Path(tempfile.mkdtemp(prefix="sx-", dir="/tmp"))
    os.chmod(base, 0o755)
    (base / "etc").mkdir(mode=0o755)
    group = f"sxops{secrets.token_hex(3)}"
    muzzle_user = f"sxmz{secrets.token_hex(3)}"
    env = {"SENTINEL_SYSTEM_DIR": str(tmp_path / "sys"), "SENTINEL_ETC_DIR": str(base / "etc"),
           "SENTINEL_SOCKET": str(base / "run" / "sentinel.sock"), "SENTINEL_OPERATOR_GROUP": group,
           "SENTINEL_MUZZLE_USER": muzzle_user,
           # no host-wide egress table from tests (tests/supervisor/test_egress_setup.py uses a netns)
           "SENTINEL_EGRESS": "off"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    (base / "run").mkdir(mode=0o755)
    users: list[str] = []

    class System:
        pass

    s = System()
    s.env, s.group, s.socket, s.state = env, group, base / "run" / "sentinel.sock", tmp_path / "sys"
    s.etc, s.base, s.users, s.muzzle_user = base / "etc", base, users, muzzle_user
    s.muzzle_port = free_port()
    operator_config(s.etc, {"muzzle": {"port": s.muzzle_port, "state_dir": str(base / "muzzle")}})
    yield s
    for name in users + [muzzle_user]:
        delete_user(name)
    _run("groupdel", group)
    shutil.rmtree(base, ignore_errors=True)


def operator_config(etc: Path, extra: dict) -> dict:
    """Merge `extra` into the operator's config.yaml (one level deep) and return the whole config."""
    path = etc / "config.yaml"
    cfg = yaml.safe_load(path.read_text()) if path.exists() else {}
    for key, value in extra.items():
        cfg[key] = {**cfg[key], **value} if isinstance(value, dict) and isinstance(cfg.get(key), dict) else value
    path.write_text(yaml.safe_dump(cfg))
    os.chmod(path, 0o644)
    return cfg


def serve_model(etc: Path, server, extra: dict | None = None) -> None:
    """The operator's config: the scripted model as provider `fake`, the default model, plain tools, and no
    curator model call at a run's end (the scripted server's requests are the run's own)."""
    operator_config(etc, {"providers": {"fake": {"base_url": server.base_url}}, "default_model": "fake/m",
                          "leash": {"tools": "plain"}, "context": {"curator_model": "off"}, **(extra or {})})


@pytest.fixture
def sentinel_cmd(system, zygote):
    """The operator's `sentinel ARGS` (root), forked from the test worker's zygote as the `cli` fixture's are."""
    def run(*args: str, env: dict | None = None, check: int | None = None, timeout: float = 60):
        full = {**os.environ, **system.env, **(env or {})}
        if zygote is None:
            proc = _run(PY, "-m", "sentinel", *args, env=full, timeout=timeout)
        else:
            proc = zygote.run([str(a) for a in args], full, Path.cwd(), timeout)
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
    """Serve `server` to `user`: to its system-mode runs through the operator's config.yaml (under
    SENTINEL_ETC_DIR, read by the supervisor and Muzzle when they start; a system-mode run never reads the
    agent's own), and to the user's own local-mode commands through its ~/.sentinel/config.yaml."""
    serve_model(Path(os.environ["SENTINEL_ETC_DIR"]), server, extra)
    own_config(user, {"default_agent": user, "default_model": "fake/m",
                      "providers": {"fake": {"base_url": server.base_url}},
                      "muzzle": {"enabled": False}, "leash": {"tools": "plain"}, "context": {"curator_model": "off"},
                      **(extra or {})})


def own_config(user: str, cfg: dict) -> None:
    """The agent's own ~/.sentinel/config.yaml, written as the agent (what a system-mode run must ignore)."""
    write_as(user, Path(pwd.getpwnam(user).pw_dir) / ".sentinel" / "config.yaml", yaml.safe_dump(cfg))


class SupervisorProc:
    def __init__(self, system, extra: list[str] = ()):
        self.system, self.extra, self.proc = system, list(extra), None

    def start(self, wait_s: float = 20) -> "SupervisorProc":
        args = [PY, "-m", "sentinel", "supervisor"] + self.extra
        self.proc = subprocess.Popen(args, env={**os.environ, **self.system.env}, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + wait_s
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
    """start(ports=(), extra=()) -> a running `sentinel supervisor`. Workers reach models only through Muzzle,
    so `ports` (once the scripted servers' ports) is accepted and not needed."""
    procs: list[SupervisorProc] = []

    def start(ports: list[int] = (), extra: list[str] = ()) -> SupervisorProc:
        proc = SupervisorProc(system, extra).start()
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


@pytest.fixture
def fresh_system(monkeypatch):
    """System mode from nothing: only where things go is moved (so tests run beside each other and beside a
    real installation); what is there, with which owner and mode, is what the setup code writes. The etc
    directory does not exist yet (its parent is 0755, like /). Removes the users, groups and files made."""
    base = Path(tempfile.mkdtemp(prefix="sxf-", dir="/tmp"))
    os.chmod(base, 0o755)
    group, muzzle_user = f"sxops{secrets.token_hex(3)}", f"sxmz{secrets.token_hex(3)}"
    env = {"SENTINEL_SYSTEM_DIR": str(base / "state"), "SENTINEL_ETC_DIR": str(base / "etc"),
           "SENTINEL_SOCKET": str(base / "run" / "sentinel.sock"), "SENTINEL_OPERATOR_GROUP": group,
           "SENTINEL_MUZZLE_USER": muzzle_user, "SENTINEL_EGRESS": "off"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)

    class Fresh:
        pass

    s = Fresh()
    s.env, s.base, s.etc, s.group, s.muzzle_user, s.users = env, base, base / "etc", group, muzzle_user, []
    s.socket, s.agent_socket = base / "run" / "sentinel.sock", base / "run-agent" / "agent.sock"
    yield s
    for name in s.users + [muzzle_user]:
        delete_user(name)
    _run("groupdel", group)
    shutil.rmtree(base, ignore_errors=True)


def read_as(user: str, path: Path) -> subprocess.CompletedProcess:
    """Read `path` (list it, for a directory) as `user`, with its own uid, gid and groups (setpriv)."""
    pw = pwd.getpwnam(user)
    tool = ["ls", "--", str(path)] if path.is_dir() else ["cat", "--", str(path)]
    return _run("setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups", *tool)
