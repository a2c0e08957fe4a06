"""Test isolation: every test gets its own SENTINEL_HOME; root-only tests skip when not root."""

from __future__ import annotations

import os
import sys

import pytest

from pgserver import pg_server, pg_url  # noqa: F401  (a real PostgreSQL server: tests/pgserver.py)

# No test's `sentinel run` asks or starts a warm server (sentinel/cli/warm.py): a server outlives the command
# that started it, and a test reaps what it starts. tests/cli/test_warm.py turns it on in its own processes.
os.environ["SENTINEL_WARM"] = "0"


@pytest.fixture(autouse=True)
def sentinel_home(tmp_path, monkeypatch):
    home = tmp_path / "sentinel-home"
    home.mkdir()
    monkeypatch.setenv("SENTINEL_HOME", str(home))
    for var in ("SENTINEL_SOCKET", "SENTINEL_DEFAULT_MODEL", "SENTINEL_DEFAULT_AGENT", "SENTINEL_SANDBOX"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(autouse=True)
def stop_model_hosts(sentinel_home):
    """Model hosts outlive the run that started them: stop the ones a test started under its home."""
    yield
    from sentinel.models.hosts import stop_all

    stop_all(sentinel_home / "state")


@pytest.fixture(autouse=True)
def stop_local_muzzle():
    """A test that runs an engine in-process starts Muzzle on a thread; stop it, so no later test forks (the
    supervisor's spawn refuses to) with a thread still running."""
    yield
    server = sys.modules.get("sentinel.muzzle.server")
    if server is not None:
        server.stop_local()


def pytest_configure(config):
    """Every process the tests start gets SIGINT and SIGQUIT as a terminal's shell gives them. A suite started
    as a background job of a non-interactive shell (`pytest ... &` in a script: POSIX has such jobs ignore
    both) passed the ignoring on to every process it started, and a Python started with SIGINT ignored never
    raises KeyboardInterrupt: the tests that stop a chat's turn with Ctrl-C or `sentinel watch run` with SIGINT
    then waited for nothing (seen beside two CPU burners, started by a script). Each xdist worker runs this
    too."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def pytest_sessionstart(session):
    """The suite starts a few thousand `sentinel` processes: compile the package's bytecode once, here, so none
    of them compiles ~100 modules again (each would, under PYTHONDONTWRITEBYTECODE or as a user who cannot
    write __pycache__): about 0.2 s off every `sentinel run`. Once, in the controlling process, not again in
    each xdist worker."""
    if hasattr(session.config, "workerinput"):
        return
    import compileall
    import importlib.util

    (package,) = importlib.util.find_spec("sentinel").submodule_search_locations
    compileall.compile_dir(package, quiet=1)


def _warm_servers() -> dict[int, int]:
    """pid -> start time (clock ticks since boot) of every warm server on this machine."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    if b"sentinel.cli.warm_server" not in f.read():
                        continue
                with open(f"/proc/{entry.name}/stat") as f:
                    found[int(entry.name)] = int(f.read().rsplit(")", 1)[1].split()[19])
            except (OSError, ValueError, IndexError):
                continue
    return found


def pytest_sessionfinish(session, exitstatus):
    """A test reaps what it starts: a warm server some test's `sentinel run` started (one whose environment the
    test built from nothing, without conftest's SENTINEL_WARM=0) is stopped here and named, so it can be fixed."""
    if hasattr(session.config, "workerinput"):
        return
    with open("/proc/self/stat") as f:
        began = int(f.read().rsplit(")", 1)[1].split()[19])
    import signal

    for pid, started in _warm_servers().items():
        if started >= began:
            print(f"\nwarning: a test left warm server {pid} running (stopped now): give the environment it built "
                  "SENTINEL_WARM=0", file=sys.stderr)
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def pytest_collection_modifyitems(config, items):
    # Tests marked `slow` first: the suite runs on several workers (pyproject's addopts), and a test of a
    # minute or more started last would leave the others idle while it finishes.
    items.sort(key=lambda item: "slow" not in item.keywords)
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (CI runs as root)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


# -- shared helpers for tests that drive real runs ------------------------------------

import json  # noqa: E402
import subprocess  # noqa: E402

import yaml  # noqa: E402


@pytest.fixture
def scripted_server():
    """Start ScriptedServer(replies) on loopback; stopped after the test."""
    from sentinel.models.fake_server import ScriptedServer

    servers = []

    def start(replies, **kwargs):
        server = ScriptedServer(replies, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def configure(sentinel_home):
    """Write $SENTINEL_HOME/config.yaml from a mapping (merged over test defaults). The curator's model call
    at a run's end is off unless a test asks for it (tests/worker/test_curator.py), so a scripted server's
    requests are the run's own."""

    def write(extra=None, server=None):
        cfg = {"leash": {"tools": "plain"}, "context": {"curator_model": "off"}}
        if server is not None:
            cfg["providers"] = {"fake": {"base_url": server.base_url, "api_key_env": "FAKE_KEY"}}
            cfg["default_model"] = "fake/m"
        cfg.update(extra or {})
        (sentinel_home / "config.yaml").write_text(yaml.safe_dump(cfg))
        return cfg

    return write


@pytest.fixture(scope="session")
def zygote(tmp_path_factory):
    """One per test worker: `sentinel` calls forked from a process that has imported the CLI (tests/zygote.py);
    None when SENTINEL_TEST_FRESH=1 asks for a fresh interpreter per call."""
    if os.environ.get("SENTINEL_TEST_FRESH") == "1":
        yield None
        return
    from zygote import Zygote

    started = Zygote.start(tmp_path_factory.mktemp("zygote"))
    yield started
    started.stop()


@pytest.fixture
def cli(sentinel_home, zygote):
    """Run `sentinel ARGS...` in a process of its own, from $SENTINEL_HOME/workspace (local mode's `run` works in
    the current directory); returns CompletedProcess with text output. The process is forked from the zygote
    (tests/zygote.py: the same command from its first line, without the interpreter's start and imports)."""
    workdir = sentinel_home / "workspace"
    workdir.mkdir(exist_ok=True)

    def run(*args, env=None, check=None, timeout=60, cwd=None):
        full_env = {**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "test-key", **(env or {})}
        if zygote is None:
            proc = subprocess.run([sys.executable, "-m", "sentinel", *args], capture_output=True, text=True,
                                  env=full_env, timeout=timeout, cwd=cwd or workdir)
        else:
            proc = zygote.run([str(a) for a in args], full_env, cwd or workdir, timeout)
        if check is not None:
            assert proc.returncode == check, f"exit {proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
        return proc

    run.json = lambda *a, **k: json.loads(run(*a, **k).stdout)
    return run


# -- the rule gate: a scripted judge on loopback and a repository with rules -------------


@pytest.fixture
def judge():
    """start(table_or_responder, **kw) -> a running FakeJudge; stopped after the test."""
    from sentinel.policy.gate.fakejudge import FakeJudge, by_substring

    started = []

    def start(table=None, **kwargs):
        responder = table if callable(table) else by_substring(table or {})
        j = FakeJudge(responder, **kwargs).start()
        started.append(j)
        return j

    yield start
    for j in started:
        j.stop()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME of its own: the coding agents' user-level settings (which the gate's own-files rule covers) live
    there."""
    made = tmp_path / "home"
    made.mkdir()
    monkeypatch.setenv("HOME", str(made))
    return made


@pytest.fixture
def repo(tmp_path):
    """make(rules, config) -> a repository root with .claude/sentinel/."""
    from sentinel.policy.gate.fakejudge import write_repo

    def make(rules, config=None, name="repo"):
        return write_repo(tmp_path / name, rules, config)

    return make
