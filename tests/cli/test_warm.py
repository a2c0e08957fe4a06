"""The warm start (sentinel/cli/warm.py, sentinel/cli/warm_server.py): `sentinel run` and `resume` forked from this
user's warm server behave as the cold command does, and nobody else is served by it.

Every test here starts real `sentinel` processes (fresh interpreters, not the suite's zygote) with the warm start
on, in a runtime directory of its own, and stops every server they started.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from sentinel.cli import warm
from sentinel.models.fake_server import ScriptedServer

SLOW = {"content": "too late", "delay_ms": 30_000}
SLEEPS = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo $$ > pid.txt; sleep 120"}}]}  # a model still thinking when the caller is stopped
WRITES = {"tool_calls": [{"name": "write_file", "arguments": {"path": "made.txt", "content": "hi\n"}}]}
PAUSES = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]}


class Warm:
    """`sentinel` commands with the warm start on, and the servers they start."""

    def __init__(self, home: Path, runtime: Path, models: dict[str, ScriptedServer]):
        self.home, self.runtime, self.models = home, runtime, models
        (home / "workspace").mkdir(exist_ok=True)
        (home / "config.yaml").write_text(yaml.safe_dump({
            "leash": {"tools": "plain"}, "default_model": "done/m", "context": {"curator_model": "off"},
            "providers": {name: {"base_url": model.base_url} for name, model in models.items()}}))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        self.env.update({"SENTINEL_HOME": str(home), "SENTINEL_MODE": "local", "SENTINEL_WARM": "1",
                         "XDG_RUNTIME_DIR": str(runtime), "SENTINEL_WARM_IDLE": "120"})

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "sentinel", *args]

    def run(self, *args: str, env: dict[str, str] | None = None, prefix: tuple[str, ...] = (),
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*prefix, *self.argv(*args)], env={**self.env, **(env or {})},
                              cwd=cwd or self.home / "workspace", capture_output=True, text=True, timeout=120)

    def sockets(self) -> list[Path]:
        folder = self.runtime / "sentinel"
        return sorted(folder.glob("warm-*.sock")) if folder.is_dir() else []

    def server(self) -> dict[str, int]:
        """The one server's status, once it listens (a cold run starts it detached)."""
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            for path in self.sockets():
                answer = warm.status(str(path))
                if answer is not None:
                    return answer
            time.sleep(0.05)
        raise AssertionError(f"no warm server answered; logs: {[p.read_text() for p in self.runtime.rglob('*.log')]}")

    def started(self) -> dict[str, int]:
        """A server, started by one cold run."""
        first = self.run("run", "say done")
        assert first.returncode == 4, first.stderr
        return self.server()

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in self.runtime.rglob("*.log"))

    def stop(self) -> None:
        for path in self.sockets():
            answer = warm.status(str(path))
            if answer is not None:
                _end(answer["pid"])
        for pid in _servers_under(self.runtime):
            _end(pid)


def _servers_under(runtime: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"sentinel.cli.warm_server" in cmdline and str(runtime).encode() in cmdline:
                found.append(int(entry.name))
    return found


def _end(pid: int, signum: int = signal.SIGTERM) -> None:
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        signal.pidfd_send_signal(pidfd, signum)
        assert select.select([pidfd], [], [], 60)[0], f"warm server {pid} did not end"
    except ProcessLookupError:
        pass
    finally:
        os.close(pidfd)


@pytest.fixture
def models():
    with ScriptedServer(["All done."]) as done, ScriptedServer([PAUSES]) as pauses, \
            ScriptedServer([WRITES, "Wrote it."]) as writes, ScriptedServer([SLOW]) as slow, \
            ScriptedServer([SLEEPS, "Slept."]) as sleeps:
        yield {"done": done, "pauses": pauses, "writes": writes, "slow": slow, "sleeps": sleeps}


def _warm(sentinel_home: Path, models: dict[str, ScriptedServer], factory, exclusive: bool):
    """A Warm, under the suite's warm lock: shared by every test here, exclusive for the one that changes a file of
    the package (which makes every running server stale, so it runs while no other warm test does)."""
    import fcntl

    with open(factory.getbasetemp().parent / "warm-tests.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        runtime = Path(tempfile.mkdtemp(prefix="warm-", dir="/tmp"))  # short: a socket's path is at most 107 bytes
        made = Warm(sentinel_home, runtime, models)
        try:
            yield made
        finally:
            made.stop()
            shutil.rmtree(runtime)


@pytest.fixture
def warm_cli(sentinel_home, models, tmp_path_factory):
    yield from _warm(sentinel_home, models, tmp_path_factory, exclusive=False)


@pytest.fixture
def warm_cli_alone(sentinel_home, models, tmp_path_factory):
    yield from _warm(sentinel_home, models, tmp_path_factory, exclusive=True)


def test_a_runtime_directory_deeper_than_a_socket_address_still_serves(warm_cli, tmp_path):
    deep = tmp_path / ("d" * 60) / "runtime"
    deep.mkdir(parents=True, mode=0o700)
    warm_cli.runtime = deep
    warm_cli.env["XDG_RUNTIME_DIR"] = str(deep)
    before = warm_cli.started()["served"]
    assert len(str(warm_cli.sockets()[0])) > 108
    assert warm_cli.run("run", "say done").returncode == 4
    assert warm_cli.server()["served"] == before + 1, warm_cli.logs()


def test_a_warm_run_is_the_cold_command_in_the_callers_place(warm_cli, tmp_path):
    cold = warm_cli.run("run", "say done", env={"SENTINEL_WARM": "0"})
    assert not warm_cli.sockets() and not _servers_under(warm_cli.runtime)  # off: nothing asked, nothing started
    before = warm_cli.started()["served"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    hot = warm_cli.run("run", "make it", "--model", "writes/m", "--json", cwd=elsewhere)
    assert warm_cli.server()["served"] == before + 1, warm_cli.logs()
    assert hot.returncode in (0, 4), hot.stderr
    assert (elsewhere / "made.txt").read_text() == "hi\n"  # its working directory: the caller's
    row = json.loads(hot.stdout)
    runs = json.loads(warm_cli.run("runs", "--json").stdout)  # its environment: the caller's SENTINEL_HOME
    assert row["id"] in {r["id"] for r in runs}
    again = warm_cli.run("run", "say done")
    assert (again.returncode, again.stdout) == (cold.returncode, cold.stdout) == (4, "All done.\n")
    assert again.stderr.replace(again.stderr.split()[1], "ID") == cold.stderr.replace(cold.stderr.split()[1], "ID")


def test_a_paused_run_exits_3_and_its_resume_is_warm_too(warm_cli):
    before = warm_cli.started()["served"]
    paused = warm_cli.run("run", "clean up", "--model", "pauses/m", "--json")
    assert paused.returncode == 3, paused.stderr
    run_id = json.loads(paused.stdout)["id"]
    resumed = warm_cli.run("resume", run_id)
    assert resumed.returncode == 3 and "waiting for approval" in resumed.stderr
    assert warm_cli.server()["served"] == before + 2


def _thinking(warm_cli: Warm, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A run waiting on its model, once the model has the request."""
    slow = warm_cli.models["slow"]
    seen = len(slow.requests)
    proc = subprocess.Popen(warm_cli.argv("run", "think", "--model", "slow/m", "--json"), env={**warm_cli.env,
                            **(env or {})}, cwd=warm_cli.home / "workspace", stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while len(slow.requests) == seen:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(proc.communicate())
        time.sleep(0.05)
    return proc


def _interrupted(warm_cli: Warm, env: dict[str, str]) -> tuple[int, str]:
    """A run stopped with SIGINT while its model thinks: its exit code and the status it is left in."""
    proc = _thinking(warm_cli, env)
    try:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    runs = json.loads(warm_cli.run("runs", "--json").stdout)
    return proc.returncode, runs[0]["status"]


def test_ctrl_c_stops_a_warm_run_as_it_stops_a_cold_one(warm_cli):
    cold = _interrupted(warm_cli, {"SENTINEL_WARM": "0"})
    before = warm_cli.started()["served"]
    hot = _interrupted(warm_cli, {})
    assert warm_cli.server()["served"] == before + 1, warm_cli.logs()
    assert hot == cold and cold[0] != 0


def test_a_caller_killed_takes_its_warm_child_with_it(warm_cli):
    warm_cli.started()
    proc = _thinking(warm_cli)
    assert warm_cli.server()["running"] == 1
    proc.kill()
    proc.communicate()
    deadline = time.monotonic() + 60
    while warm_cli.server()["running"]:
        assert time.monotonic() < deadline, "the warm child outlived its caller"
        time.sleep(0.05)


# -- who is not served: each runs cold, and the server's count does not move -------------------------------


@pytest.mark.parametrize("prefix", [("setpriv", "--no-new-privs"), ("prlimit", "--nofile=200:200"),
                                    ("nice", "-n", "5")], ids=["sandboxed", "other-limits", "other-nice"])
def test_a_caller_in_another_process_context_runs_cold(warm_cli, prefix):
    before = warm_cli.started()["served"]
    proc = warm_cli.run("run", "say done", prefix=prefix)
    assert (proc.returncode, proc.stdout) == (4, "All done.\n"), proc.stderr
    assert warm_cli.server()["served"] == before


@pytest.mark.root
def test_a_caller_with_other_groups_runs_cold(warm_cli):
    if os.geteuid() != 0:
        pytest.skip("root only")
    before = warm_cli.started()["served"]
    proc = warm_cli.run("run", "say done", prefix=("setpriv", "--groups", "4242", "--"))
    assert (proc.returncode, proc.stdout) == (4, "All done.\n"), proc.stderr
    assert warm_cli.server()["served"] == before


def test_a_python_variable_runs_cold_and_starts_nothing(warm_cli):
    proc = warm_cli.run("run", "say done", env={"PYTHONPATH": str(warm_cli.home)})
    assert proc.returncode == 4
    assert not warm_cli.sockets() and not _servers_under(warm_cli.runtime)


@pytest.mark.parametrize("mode", [0o755, 0o770])
def test_a_socket_directory_open_to_others_is_not_used(warm_cli, mode):
    folder = warm_cli.runtime / "sentinel"
    folder.mkdir(mode=0o700)
    os.chmod(folder, mode)
    proc = warm_cli.run("run", "say done")
    assert proc.returncode == 4
    assert not warm_cli.sockets() and not _servers_under(warm_cli.runtime)


def test_a_socket_directory_that_is_a_link_is_not_used(warm_cli, tmp_path):
    target = tmp_path / "theirs"
    target.mkdir(mode=0o700)
    (warm_cli.runtime / "sentinel").symlink_to(target)
    proc = warm_cli.run("run", "say done")
    assert proc.returncode == 4
    assert not list(target.iterdir()) and not _servers_under(warm_cli.runtime)


@pytest.mark.root
def test_a_listener_of_another_user_gets_nothing(warm_cli):
    """Someone else's socket at the name a caller would ask: the caller checks who listens before it sends."""
    if os.geteuid() != 0:
        pytest.skip("root only")
    folder = warm_cli.runtime / "sentinel"
    folder.mkdir(mode=0o700)
    code = ("import sys; from sentinel.cli import warm; "
            "print(warm.socket_path(warm.directory(), warm.context(), warm.interpreter(sys.path[1:])))")
    path = subprocess.run([sys.executable, "-c", code], env=warm_cli.env, capture_output=True, text=True,
                          check=True, cwd=warm_cli.home).stdout.strip()
    assert path.startswith(str(folder))
    # bound as root, listening as `nobody`: SO_PEERCRED names who called listen()
    listener = ("import os, socket, sys\n"
                "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1])\n"
                "os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)\n"
                "s.listen(1); print('ready', flush=True)\n"
                "c, _ = s.accept(); c.settimeout(60)\n"
                "print(repr(c.recv(1 << 20)), flush=True)\n")
    spy = subprocess.Popen([sys.executable, "-c", listener, path], cwd="/", stdout=subprocess.PIPE, text=True)
    try:
        assert spy.stdout.readline() == "ready\n"
        proc = warm_cli.run("run", "say done")
        assert (proc.returncode, proc.stdout) == (4, "All done.\n"), proc.stderr
        assert spy.stdout.readline() == "b''\n"  # connected, saw the listener was not this user, sent nothing
    finally:
        spy.kill()
        spy.wait()
        spy.stdout.close()


def test_changed_code_is_never_served_stale(warm_cli_alone):
    """A file of the package changes after the server started: the next call runs cold, the server ends, and a
    new one serves the call after."""
    first = warm_cli_alone.started()
    source = Path(warm.__file__)
    st = source.stat()
    try:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        proc = warm_cli_alone.run("run", "say done")
        assert proc.returncode == 4
        deadline = time.monotonic() + 90
        while True:
            now = warm_cli_alone.server()
            if now["pid"] != first["pid"]:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert now["served"] == 0
        assert warm_cli_alone.run("run", "say done").returncode == 4
        assert warm_cli_alone.server()["served"] == 1
    finally:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_an_idle_server_ends_by_itself(warm_cli):
    warm_cli.env["SENTINEL_WARM_IDLE"] = "1"
    pid = warm_cli.started()["pid"]
    pidfd = os.pidfd_open(pid)
    try:
        assert select.select([pidfd], [], [], 60)[0], "an idle warm server kept running"
    finally:
        os.close(pidfd)
    assert not warm_cli.sockets()


def test_the_socket_is_the_users_alone(warm_cli):
    warm_cli.started()
    [path] = warm_cli.sockets()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


LIAR = """
import json, os, socket, sys
from pathlib import Path
from sentinel import unixsock
from sentinel.cli import warm
sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
sock.connect(unixsock.address(Path(sys.argv[1])))
request = {"args": ["run", "say done"], "argv0": "sentinel", "env": dict(os.environ),
           "interp": json.loads(sys.argv[2]), "stdio": [True, True, True]}
cwd = os.open(".", os.O_PATH)
socket.send_fds(sock, [json.dumps(request).encode()], [cwd, 0, 1, 2])
print(sock.recv(4096).decode())
"""


def test_the_server_itself_refuses_a_sandboxed_caller(warm_cli):
    """A caller that skips the client's own checks (its code is its own) and asks from inside a sandbox."""
    before = warm_cli.started()["served"]
    [path] = warm_cli.sockets()
    interp = subprocess.run([sys.executable, "-c", "import json, sys; from sentinel.cli import warm; "
                             "print(json.dumps(warm.interpreter(sys.path[1:])))"], env=warm_cli.env,
                            capture_output=True, text=True, check=True, cwd=warm_cli.home).stdout
    proc = subprocess.run(["setpriv", "--no-new-privs", sys.executable, "-c", LIAR, str(path), interp],
                          env=warm_cli.env, capture_output=True, text=True, timeout=60, cwd=warm_cli.home)
    assert proc.stdout.startswith("refused: another process context"), proc.stderr
    plain = subprocess.run([sys.executable, "-c", LIAR, str(path), interp], env=warm_cli.env, capture_output=True,
                           text=True, timeout=60, cwd=warm_cli.home)
    assert plain.stdout.startswith("started"), plain.stderr  # the same request from outside a sandbox is served
    assert warm_cli.server()["served"] == before + 1, warm_cli.logs()


def test_a_caller_that_never_says_go_runs_nothing_twice(warm_cli):
    """A caller that gave up waiting (and runs the command cold itself) never has it run by the server too."""
    before = warm_cli.started()["served"]
    runs = len(json.loads(warm_cli.run("runs", "--json").stdout))
    writes = warm_cli.models["writes"]
    [path] = warm_cli.sockets()
    interp = subprocess.run([sys.executable, "-c", "import json, sys; from sentinel.cli import warm; "
                             "print(json.dumps(warm.interpreter(sys.path[1:])))"], env=warm_cli.env,
                            capture_output=True, text=True, check=True, cwd=warm_cli.home).stdout
    quitter = LIAR.replace('"say done"', '"make it", "--model", "writes/m"')
    proc = subprocess.run([sys.executable, "-c", quitter, str(path), interp], env=warm_cli.env, capture_output=True,
                          text=True, timeout=60, cwd=warm_cli.home / "workspace")
    assert proc.stdout.startswith("started"), proc.stderr
    deadline = time.monotonic() + 60
    while warm_cli.server()["running"]:  # the child, never told to go, ends
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert warm_cli.server()["served"] == before + 1, warm_cli.logs()
    assert len(json.loads(warm_cli.run("runs", "--json").stdout)) == runs and not writes.requests
    assert not (warm_cli.home / "workspace" / "made.txt").exists()


@pytest.mark.parametrize("tools", ["plain", "sandboxed"])
def test_ctrl_c_at_a_terminal_stops_a_warm_runs_command_as_a_cold_ones(warm_cli, tools):
    """A terminal's Ctrl-C goes to the caller's whole process group; a warm run's command runs in the child's
    session, not the caller's, and is stopped all the same (its exit code, and no command left running)."""
    config = yaml.safe_load((warm_cli.home / "config.yaml").read_text())
    config["leash"]["tools"] = tools
    config["policy"] = {"bash": {"default": "auto"}}
    (warm_cli.home / "config.yaml").write_text(yaml.safe_dump(config))
    workspace = warm_cli.home / "workspace"

    def stopped(env: dict[str, str]) -> tuple[int, bool]:
        marker = workspace / "pid.txt"
        marker.unlink(missing_ok=True)
        proc = subprocess.Popen(warm_cli.argv("run", "sleep", "--model", "sleeps/m"), env={**warm_cli.env, **env},
                                cwd=workspace, start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 90
            while not (marker.exists() and marker.read_text().strip()):
                assert proc.poll() is None and time.monotonic() < deadline, "the command never started"
                time.sleep(0.05)
            os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        pid = int(marker.read_text())
        deadline = time.monotonic() + 30
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return code, _running(pid)

    cold = stopped({"SENTINEL_WARM": "0"})
    before = warm_cli.started()["served"]
    hot = stopped({})
    assert warm_cli.server()["served"] == before + 1, warm_cli.logs()
    assert hot == cold == (130, False)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("text", ["soon", "-1", "0", "nan"])
def test_a_bad_idle_setting_is_named_in_one_line_and_the_default_stands(text, capsys):
    from sentinel.cli.warm_server import IDLE_SECONDS, _idle_seconds

    assert _idle_seconds(text) == IDLE_SECONDS
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"SENTINEL_WARM_IDLE={text!r}" in err
    assert _idle_seconds("2.5") == 2.5 and _idle_seconds(None) == IDLE_SECONDS
