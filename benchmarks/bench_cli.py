"""Command start-up and exit: what one `sentinel` process costs, the unit every script (and test) pays.

    /opt/sentinel/venv/bin/python benchmarks/bench_cli.py            # local mode, then system mode (as root)
    /opt/sentinel/venv/bin/python benchmarks/bench_cli.py --local    # local mode only

Each command runs 7 times in a fresh process, against the scripted model on loopback. Machines here are noisy,
so every sample round runs each command once in turn, beside a bare interpreter start (`python3 -I -c pass`:
this Python, isolated, no site), and each median is shown against that bare start (ratio) and against its
target (issue 45: 150 ms for a listing or deciding command, 300 ms for `run` to its first model request):

    sentinel runs --json          the lightest command that opens the state database
    sentinel approvals|status     the operator's listings
    sentinel show ID              one run, its decisions
    sentinel approve|deny ID      no such approval: the decision path up to its lookup
    sentinel run TASK             one model call, through Muzzle, to `done`; and to its first model request: the
                                  time the request reached the scripted model server, taken there
    sentinel resume ID            a run still waiting for approval: pauses again, no model call

`run` and `resume` are measured twice: cold (SENTINEL_WARM=0: a fresh interpreter imports everything) and warm
(a child of the user's warm server, sentinel/cli/warm.py; the server is started by one cold `run` before the
samples, in a runtime directory of the benchmark's own, and stopped after).

`run` is measured beside its floor with the official openai client: a fresh Python importing openai and
sending one streamed request to the same server (no Sentinel at all), and `import openai` alone.

System mode (root only): a throwaway supervisor (state, /etc and socket dirs of its own, a Muzzle user it
makes; SENTINEL_* as tests/supervisor/sx_helpers.py sets them), one agent made by `sentinel setup`, one of its
runs waiting for approval; the six listing and deciding commands then go to the supervisor over its socket.
The agent's user, the Muzzle user and the operator group are deleted afterwards.

Quiet-machine figures follow from the ratio: a bare start there is 10-20 ms.
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import yaml

from sentinel.models.fake_server import ScriptedServer

SAMPLES = int(os.environ.get("BENCH_SAMPLES", "7"))
PAUSES = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> counter.txt"}}]}
LISTING_MS, RUN_MS = 150, 300
PY = sys.executable
BARE = [getattr(sys, "_base_executable", sys.executable), "-I", "-c", "pass"]
RUN = "sentinel run TASK"
FLOOR = ("import openai\nclient = openai.OpenAI(base_url={url!r}, api_key='unused', max_retries=0)\n"
         "for _ in client.chat.completions.create(model='m', messages=[{{'role': 'user', 'content': 'hi'}}], "
         "stream=True): pass\n")


class Timed(ScriptedServer):
    """The scripted model, noting when each request arrives (this process's clock, as the samples')."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.arrivals: list[float] = []
        super().__init__(*args, **kwargs)

    def record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.arrivals.append(time.perf_counter())
        super().record(body, headers)


Command = tuple[str, list[str], int, "int | None"]  # (name, argv, exit code, target ms)
WARM = " (warm)"  # a command name ending so runs with the warm start on (sentinel/cli/warm.py); others are cold


def listings(sentinel: list[str], run_id: str) -> list[Command]:
    """The six listing and deciding commands, timed in both modes against the same target."""
    return [
        ("sentinel runs --json", [*sentinel, "runs", "--json"], 0, LISTING_MS),
        ("sentinel approvals", [*sentinel, "approvals"], 0, LISTING_MS),
        ("sentinel status", [*sentinel, "status"], 0, LISTING_MS),
        ("sentinel show ID", [*sentinel, "show", run_id], 0, LISTING_MS),
        ("sentinel approve ID (no such)", [*sentinel, "approve", "a-none"], 2, LISTING_MS),
        ("sentinel deny ID (no such)", [*sentinel, "deny", "a-none"], 2, LISTING_MS),
    ]


def once(argv: list[str], env: dict[str, str], cwd: Path | None, code: int) -> float:
    began = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == code, (argv, proc.returncode, proc.stderr)
    return time.perf_counter() - began


def measure(commands: list[Command], env: dict[str, str], cwd: Path | None,
            model: Timed | None = None, floor: list[str] | None = None,
            warm_env: dict[str, str] | None = None) -> None:
    """Every command once per round, beside the bare start (and the openai floor): medians against both."""
    bare: list[float] = []
    took: dict[str, list[float]] = {name: [] for name, *_ in commands}
    first: dict[str, list[float]] = {f"  {name[len('sentinel '):]} to its first model request": []
                                     for name, *_ in commands if name.startswith(RUN)}
    first.update({"  floor: python, import openai, one streamed request": [],
                  "  floor: python -c 'import openai'": []})
    for _ in range(SAMPLES):
        bare.append(once(BARE, env, cwd, 0))
        for name, argv, code, _target in commands:
            seen = len(model.arrivals) if model else 0
            began = time.perf_counter()
            took[name].append(once(argv, warm_env or env if name.endswith(WARM) else env, cwd, code))
            if name.startswith(RUN) and model is not None:
                first[f"  {name[len('sentinel '):]} to its first model request"].append(model.arrivals[seen] - began)
        if floor and model is not None:
            seen, began = len(model.arrivals), time.perf_counter()
            once(floor, env, cwd, 0)
            first["  floor: python, import openai, one streamed request"].append(model.arrivals[seen] - began)
            first["  floor: python -c 'import openai'"].append(once([PY, "-c", "import openai"], env, cwd, 0))
    base = statistics.median(bare)
    print(f"median of {SAMPLES}, one process each, measured alternately; bare start `python3 -I -c pass` "
          f"{base * 1000:.0f} ms; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, _argv, _code, target in commands:
        _row(name, statistics.median(took[name]), base, target)
        if name.startswith(RUN) and model is not None:
            own = f"  {name[len('sentinel '):]} to its first model request"
            _row(own, statistics.median(first[own]), base, RUN_MS)
            if name.endswith(WARM):
                for label, samples in first.items():
                    if label.startswith("  floor") and samples:
                        _row(label, statistics.median(samples), base, None)


def _row(name: str, median: float, base: float, target: int | None) -> None:
    against = f"  target {target} ms: {'met' if median * 1000 <= target else 'MISSED'}" if target else ""
    print(f"  {name:<52} {median * 1000:6.0f} ms  ({median / base:5.1f}x bare){against}")


def local_mode() -> None:
    with tempfile.TemporaryDirectory() as tmp, Timed(["All done."]) as done, ScriptedServer([PAUSES]) as pauses:
        home = Path(tmp)
        (home / "workspace").mkdir()
        (home / "config.yaml").write_text(yaml.safe_dump({
            "leash": {"tools": "plain"}, "default_model": "done/m", "context": {"curator_model": "off"},
            "providers": {"done": {"base_url": done.base_url}, "pauses": {"base_url": pauses.base_url}}}))
        env = {**os.environ, "SENTINEL_HOME": str(home), "SENTINEL_MODE": "local", "SENTINEL_WARM": "0"}
        # the warm start's own: no PYTHON* variable (each makes a command start cold), a runtime directory of its own
        warm_env = {**{k: v for k, v in env.items() if not k.startswith("PYTHON")}, "SENTINEL_WARM": "1",
                    "XDG_RUNTIME_DIR": str(home / "runtime")}
        (home / "runtime").mkdir(mode=0o700)
        cwd = home / "workspace"
        sentinel = [PY, "-m", "sentinel"]
        paused = subprocess.run([*sentinel, "run", "count", "--model", "pauses/m", "--json"], env=env, cwd=cwd,
                                capture_output=True, text=True)
        run_id = json.loads(paused.stdout)["id"]
        commands = [*listings(sentinel, run_id),
            (RUN + " (cold)", [*sentinel, "run", "say done"], 4, None),  # an answer: done_unverified
            (RUN + WARM, [*sentinel, "run", "say done"], 4, None),
            ("sentinel resume ID (cold, still paused)", [*sentinel, "resume", run_id], 3, None),
            ("sentinel resume ID" + WARM, [*sentinel, "resume", run_id], 3, None),
        ]
        server = _warm_server(warm_env, cwd)
        try:
            print("local mode (SENTINEL_MODE=local, SENTINEL_HOME a fresh directory; cold: SENTINEL_WARM=0; warm: "
                  "the warm server started by one cold `run` before the samples):")
            measure(commands, env, cwd, done, [PY, "-c", FLOOR.format(url=done.base_url)], warm_env)
        finally:
            os.kill(server, signal.SIGTERM)


def _warm_server(env: dict[str, str], cwd: Path) -> int:
    """Start the warm server with one cold `run`, and wait until it answers: its pid."""
    from sentinel.cli import warm

    subprocess.run([PY, "-m", "sentinel", "run", "say done"], env=env, cwd=cwd, capture_output=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for path in Path(env["XDG_RUNTIME_DIR"]).glob("sentinel/warm-*.sock"):
            answer = warm.status(str(path))
            if answer is not None:
                return int(answer["pid"])
        time.sleep(0.05)
    raise SystemExit("bench_cli: the warm server did not start")


@contextlib.contextmanager
def throwaway_system() -> Iterator[tuple[dict[str, str], Path]]:
    """A system of its own, as tests/supervisor/sx_helpers.py's `system` fixture makes it; removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="bench-sx-", dir="/tmp"))
    os.chmod(base, 0o755)
    for sub in ("etc", "run"):
        (base / sub).mkdir(mode=0o755)
    suffix = secrets.token_hex(3)
    env = {**os.environ, "SENTINEL_SYSTEM_DIR": str(base / "sys"), "SENTINEL_ETC_DIR": str(base / "etc"),
           "SENTINEL_SOCKET": str(base / "run" / "sentinel.sock"), "SENTINEL_OPERATOR_GROUP": f"bxops{suffix}",
           "SENTINEL_MUZZLE_USER": f"bxmz{suffix}", "SENTINEL_EGRESS": "off"}
    env.pop("SENTINEL_HOME", None)
    env.pop("SENTINEL_MODE", None)
    users = [env["SENTINEL_MUZZLE_USER"]]
    try:
        yield env, base
    finally:
        for name in users + [f"bench_{suffix}"]:
            subprocess.run(["userdel", "-r", name], capture_output=True)
        with contextlib.suppress(KeyError):
            grp.getgrnam(env["SENTINEL_OPERATOR_GROUP"])
            subprocess.run(["groupdel", env["SENTINEL_OPERATOR_GROUP"]], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def _answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(path)
            return True
        except OSError:
            return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def system_mode() -> None:
    with throwaway_system() as (env, base), ScriptedServer([PAUSES]) as pauses:
        suffix = env["SENTINEL_MUZZLE_USER"][4:]
        (base / "etc" / "config.yaml").write_text(yaml.safe_dump({
            "muzzle": {"port": _free_port(), "state_dir": str(base / "muzzle")},
            "providers": {"fake": {"base_url": pauses.base_url}}, "default_model": "fake/m",
            "leash": {"tools": "plain"}, "context": {"curator_model": "off"}}))
        os.chmod(base / "etc" / "config.yaml", 0o644)
        sentinel = [PY, "-m", "sentinel"]
        setup = subprocess.run([*sentinel, "setup", "--name", f"Bench {suffix}"], env=env, capture_output=True,
                               text=True)
        assert setup.returncode == 0, setup.stderr
        supervisor = subprocess.Popen([*sentinel, "supervisor"], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while not _answers(env["SENTINEL_SOCKET"]):
                assert supervisor.poll() is None and time.monotonic() < deadline, "the supervisor did not start"
                time.sleep(0.05)
            paused = subprocess.run([*sentinel, "run", "count", "--agent", f"bench_{suffix}", "--json"], env=env,
                                    capture_output=True, text=True, timeout=120)
            assert paused.returncode == 3, paused.stderr
            run_id = json.loads(paused.stdout)["id"]
            commands = listings(sentinel, run_id)
            print("system mode (root, an operator, against a running supervisor over its socket):")
            measure(commands, env, None)
        finally:
            supervisor.terminate()
            supervisor.wait(30)


def main() -> None:
    local_mode()
    if "--local" in sys.argv[1:]:
        return
    if os.geteuid() != 0:
        print("system mode: skipped (needs root: a supervisor, its Muzzle user and an agent's user)")
        return
    system_mode()


if __name__ == "__main__":
    main()
