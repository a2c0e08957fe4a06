"""Small realistic tasks on the default model: Sentinel against mini-swe-agent on the same GGUF, in the same run.

    /opt/sentinel/venv/bin/python benchmarks/bench_tasks.py [--half tuning|held-out] [--tasks NAME,...] [--only sentinel|peer] [--parallel] [--json]

48 tasks in 14 families, each family with several phrasings over different data; `tasks.halves()` splits them
once, by the fixed seed `tasks.SPLIT_SEED`, into a tuning half and a held-out half (each family in both). Tune on
`--half tuning`; report both halves; never change code while looking at the held-out half's results.

Each task (benchmarks/tasks.py: create, edit in place, rename, sum a column, fix a bug so a test passes, run a
script and save its output, CSV to JSON, extract lines, delete some files and keep others, answer a question
about a file, remember then recall in a second run, delegate to a writer, ...) starts in a fresh workspace
(and, for Sentinel, a fresh SENTINEL_HOME), and is checked by what it left behind: the files, or the answer.

Sentinel runs `sentinel run TASK --json` on `local/qwen2.5-coder-1.5b`, as a user does after the README
set-up. A run that pauses for approval is approved (`sentinel approve ID`) and the approvals are counted: the
"approvals" column is how many times a person would have been asked. A false success is a run that ended
`done` while its check fails; a run that ended `done_unverified` (answered, but the harness could not check it)
is no false success and is counted apart, with how many of those were wrong. One model host serves every task (the home is emptied between tasks but for
it), so the model loads once, as it does for a user's second run.

The peer is mini-swe-agent (pinned; `bash benchmarks/peer_setup.sh` makes its venv at /opt/peers/mini-swe-agent)
in yolo mode (it asks no one; its `commands` column counts what it ran), with its text-based configuration
(`mini_textbased.yaml`: one fenced bash command a reply; the 1.5B model makes no native tool calls through
llama-cpp-python's server), against the same GGUF file served by llama-cpp-python's OpenAI-compatible server
with the same context, threads and temperature as Sentinel's model host. Its false success is a run that
`Submitted` while its check fails; its answer is its submission plus its last reply and the last command's
output. Both get the same step limit and the same wall-clock limit per run. Without the peer's venv the bench
says so in one line and runs Sentinel's column only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tasks import TASKS, Task, halves  # noqa: E402

MODEL = "qwen2.5-coder-1.5b"
MAX_STEPS = 20
WALL_S = 240  # per run (--wall-s): a run still going after this has failed
MAX_APPROVALS = 12  # per task: a run that keeps asking is stopped there
PEER_VENV = Path(os.environ.get("PEER_VENV", "/opt/peers/mini-swe-agent"))
SENTINEL = [sys.executable, "-m", "sentinel"]


@dataclass
class Outcome:
    task: str
    passed: bool
    status: str  # done/failed/... for Sentinel; Submitted/LimitsExceeded/... for the peer
    seconds: float
    approvals: int = 0  # Sentinel: approvals the run asked for; the peer: commands it ran unasked
    why: str = ""  # what the check found wrong
    tools: list[str] = field(default_factory=list)
    answer: str = ""

    @property
    def false_success(self) -> bool:
        return self.status in ("done", "Submitted") and not self.passed


def seed(task: Task, ws: Path) -> None:
    """Empty the workspace and lay out the task's files. Every task of a column uses the same workspace path, as
    a user's runs in one project do: the model server keeps the prompt prefix it evaluated last (for Sentinel the
    system prompt names the workspace, before the tool schemas), and a path that changed each task would make
    Sentinel evaluate its whole prompt again each time, which no user in one project pays."""
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    for name, text in task.files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)


# -- Sentinel -----------------------------------------------------------------------------------------------

class SentinelColumn:
    def __init__(self, root: Path, wall_s: float):
        # One home path for every task, emptied between tasks but for its model host: the host is found by its
        # socket path, so the model loads once, as it does for a user's second run.
        self.home = root / "sentinel-home"
        self.wall_s = wall_s
        self.config = {"default_model": f"local/{MODEL}",
                       "limits": {"max_steps": MAX_STEPS, "max_wall_s": wall_s, "model_timeout_s": wall_s}}

    def close(self) -> None:
        from sentinel.models.hosts import stop_all

        stop_all(self.home / "state")

    def fresh_home(self) -> Path:
        for path in [*self.home.glob("*"), *self.home.glob("state/*")]:
            if path.name in ("state", "hosts"):
                continue
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        (self.home / "state").mkdir(parents=True, exist_ok=True)
        (self.home / "config.yaml").write_text(yaml.safe_dump(self.config))
        return self.home

    def run(self, task: Task, root: Path) -> Outcome:
        home, ws = self.fresh_home(), self.home.parent / "sentinel-ws"
        env = {**os.environ, "SENTINEL_HOME": str(home), "SENTINEL_MODE": "local"}
        seed(task, ws)
        for argv in task.agents:
            self.cli(["agent", "create", *argv], env, ws)
        began = time.monotonic()
        approvals, ids, status, answer = 0, [], "failed", ""
        for prompt in task.prompts:
            argv = ["run", prompt, "--json", *(["--agent", task.agent] if task.agent else [])]
            proc = self.cli(argv, env, ws)
            run_id = _json(proc.stdout).get("id")
            while proc.returncode == 3 and approvals < MAX_APPROVALS:
                pending = _json(self.cli(["approvals", "--json"], env, ws).stdout) or []
                if not pending:
                    break
                approvals += 1
                proc = self.cli(["approve", pending[0]["id"], "--json"], env, ws)
            if not run_id:
                status, answer = "error", (proc.stderr or proc.stdout).strip()[-200:]
                break
            ids.append(run_id)
            shown = _json(self.cli(["show", run_id, "--json"], env, ws).stdout)
            status, answer = shown.get("status", "?"), shown.get("output") or ""
        seconds = time.monotonic() - began
        self.settle()
        why = task.check(ws, answer)
        tools = self.tools(ids, env, ws)
        if (home / "runs").is_dir():  # the journals, for --keep
            shutil.copytree(home / "runs", root / "runs")
        shutil.copytree(ws, root / "ws")
        return Outcome(task.name, why is None, status, seconds, approvals, why or "", tools, answer)

    def settle(self) -> None:
        """Wait (uncounted: no command waits for it) for the curator's detached model call, so it neither runs
        during the peer's task nor writes into the home the next task empties."""
        deadline = time.monotonic() + self.wall_s
        while time.monotonic() < deadline and _curators(self.home):
            time.sleep(0.5)

    def tools(self, run_ids: list[str], env: dict[str, str], ws: Path) -> list[str]:
        """Every tool the task's runs (and their child runs) called, in order."""
        names: list[str] = []
        for run_id in run_ids:
            shown = _json(self.cli(["show", run_id, "--json"], env, ws).stdout)
            names += [d["tool"] for d in shown.get("decisions") or []]
            names += self.tools([c["id"] for c in shown.get("children") or []], env, ws)
        return names

    def cli(self, argv: list[str], env: dict[str, str], ws: Path) -> subprocess.CompletedProcess[str]:
        try:  # the run stops itself at its limits; this is only a backstop
            return subprocess.run([*SENTINEL, *argv], env=env, cwd=ws, capture_output=True, text=True,
                                  timeout=self.wall_s * 2 + 60)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 1, "", "timed out")


# -- the peer: mini-swe-agent on llama-cpp-python's server ----------------------------------------------------

class PeerColumn:
    def __init__(self, root: Path, gguf: Path, threads: int, context: int, wall_s: float):
        self.root, self.wall_s = root, wall_s
        self.argv = [str(PEER_VENV / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(gguf),
                     "--model_alias", MODEL, "--n_ctx", str(context), "--n_threads", str(threads)]
        self.start()

    def start(self) -> None:
        port = _free_port()
        self.base_url = f"http://127.0.0.1:{port}/v1"
        log = (self.root / "peer-server.log").open("ab")
        self.server = subprocess.Popen([*self.argv, "--host", "127.0.0.1", "--port", str(port)], stdout=log,
                                       stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        self._wait_ready(self.root / "peer-server.log")

    def _wait_ready(self, log: Path) -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.server.poll() is not None:
                raise SystemExit(f"llama_cpp.server exited: {log.read_text()[-500:]}")
            try:
                urllib.request.urlopen(f"{self.base_url}/models", timeout=2).read()
                return
            except OSError:
                time.sleep(1)
        raise SystemExit("llama_cpp.server did not answer within 300 s")

    def close(self) -> None:
        if self.server.poll() is None:
            os.killpg(self.server.pid, signal.SIGTERM)
            try:
                self.server.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.server.pid, signal.SIGKILL)
                self.server.wait()

    def run(self, task: Task, root: Path) -> Outcome:
        ws = self.root / "peer-ws"
        seed(task, ws)
        root.mkdir(parents=True)
        env = {**os.environ, "MSWEA_CONFIGURED": "true", "MSWEA_SILENT_STARTUP": "1",
               "MSWEA_COST_TRACKING": "ignore_errors", "MSWEA_GLOBAL_CONFIG_DIR": str(root / "mini"),
               "OPENAI_API_KEY": "none"}
        env.pop("PYTHONPATH", None)
        began = time.monotonic()
        status, answer, commands = "error", "", 0
        for i, prompt in enumerate(task.prompts):
            traj = root / f"traj-{i}.json"
            argv = [str(PEER_VENV / "bin" / "mini"), "-y", "--exit-immediately", "-t", prompt, "-o", str(traj),
                    "-m", f"openai/{MODEL}", "--model-class", "litellm_textbased", "-l", "0",
                    "-c", "mini_textbased.yaml", "-c", f"agent.step_limit={MAX_STEPS}",
                    "-c", f"model.model_kwargs.api_base={self.base_url}", "-c", "model.model_kwargs.temperature=0",
                    "-c", f"environment.cwd={ws}"]
            try:
                subprocess.run(argv, env=env, cwd=ws, capture_output=True, text=True, timeout=self.wall_s,
                               stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                self.close()  # the server would go on generating the abandoned reply: the next task waits for it
                self.start()
                commands += _trajectory(traj)[2]
                status = "TimeExceeded"
                break
            status, answer, ran = _trajectory(traj)
            commands += ran
        seconds = time.monotonic() - began
        why = task.check(ws, answer)
        shutil.copytree(ws, root / "ws")  # for --keep
        return Outcome(task.name, why is None, status, seconds, commands, why or "", ["bash"] * commands, answer)


def _trajectory(path: Path) -> tuple[str, str, int]:
    """The peer's exit status, its answer (submission, last reply, last output) and how many commands it ran."""
    data = _json(path.read_text()) if path.is_file() else {}
    info = data.get("info") or {}
    messages = data.get("messages") or []
    said = [m for m in messages if m.get("role") == "assistant"]
    heard = [m for m in messages if m.get("role") == "user"][1:]
    tail = [str(m.get("content") or "") for m in (said[-1:] + heard[-1:])]
    commands = sum(1 for m in said if "```mswea_bash_command" in str(m.get("content") or ""))
    return str(info.get("exit_status") or "error"), "\n".join([str(info.get("submission") or ""), *tail]), commands


# -- the run ----------------------------------------------------------------------------------------------------

def _json(text: str) -> dict:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, (dict, list)) else {}


def _curators(home: Path) -> list[int]:
    """Processes of `python -m sentinel.worker.curate --home HOME` still running."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"sentinel.worker.curate" in argv and str(home).encode() in argv:
            found.append(int(proc.name))
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def summary(rows: list[Outcome]) -> dict:
    return {"passed": sum(r.passed for r in rows), "total": len(rows),
            "median_s": round(statistics.median(r.seconds for r in rows), 1) if rows else 0.0,
            "approvals": sum(r.approvals for r in rows),
            "false_successes": [r.task for r in rows if r.false_success],
            # answered but not checked by the harness: never counted as a false success, reported beside it
            "done_unverified": sum(r.status == "done_unverified" for r in rows),
            "done_unverified_wrong": [r.task for r in rows if r.status == "done_unverified" and not r.passed]}


def report(tasks: list[Task], columns: dict[str, list[Outcome]]) -> None:
    names = list(columns)
    print(f"{'task':10s} " + " ".join(f"{n:>36s}" for n in names) + "   expected tool: used?")
    for i, task in enumerate(tasks):
        cells = []
        for n in names:
            r = columns[n][i]
            mark = "pass" if r.passed else ("FALSE-DONE" if r.false_success else
                                            "unverif" if r.status == "done_unverified" else "fail")
            cells.append(f"{mark:>10s} {r.status[:12]:>12s} {r.seconds:6.1f}s {r.approvals:3d}")
        expected = ""
        if task.expects_tool and "sentinel" in columns:
            expected = f"   {task.expects_tool}: {'yes' if task.expects_tool in columns['sentinel'][i].tools else 'no'}"
        print(f"{task.name:10s} " + " ".join(f"{c:>36s}" for c in cells) + expected)
    for n in names:
        s = summary(columns[n])
        ask = "approvals" if n == "sentinel" else "commands run unasked (yolo)"
        print(f"{n}: {s['passed']}/{s['total']} passed, median {s['median_s']} s, {s['approvals']} {ask}, "
              f"false successes: {', '.join(s['false_successes']) or 'none'}, done_unverified: "
              f"{s['done_unverified']} ({len(s['done_unverified_wrong'])} of them wrong)")
        for r in columns[n]:
            if not r.passed:
                print(f"  {n} {r.task}: {r.why}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", help="comma-separated task names (default: all)")
    parser.add_argument("--only", choices=("sentinel", "peer"))
    parser.add_argument("--half", choices=("tuning", "held-out"),
                        help="one half of the fixed split (tasks.halves, seed tasks.SPLIT_SEED); default: every task")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--wall-s", type=float, default=WALL_S, help=f"seconds a run may take (default {WALL_S})")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces (their path is printed)")
    parser.add_argument("--parallel", action="store_true",
                        help="run the two columns at once, each model on one thread (needs 2 free CPUs)")
    args = parser.parse_args(argv)
    known = {t.name: t for t in TASKS}
    if args.half:
        tuning, held_out = halves()
        known = {t.name: t for t in (tuning if args.half == "tuning" else held_out)}
    wanted = args.tasks.split(",") if args.tasks else list(known)
    if unknown := [n for n in wanted if n not in known]:
        parser.error(f"--tasks: unknown task {', '.join(unknown)} (known: {', '.join(known)})")
    tasks = [known[n] for n in wanted]

    from sentinel.models.local import default_threads
    from sentinel.models.settings import LocalSettings
    from sentinel.models.weights import path_of

    gguf = path_of(MODEL)  # assembles the default model on first use, as Sentinel's host does
    settings = LocalSettings()
    names = [n for n in ("sentinel", "peer") if args.only in (None, n)]
    if "peer" in names and not (PEER_VENV / "bin" / "mini").exists():
        print(f"note: no peer venv at {PEER_VENV} (bash benchmarks/peer_setup.sh makes it): Sentinel's column only")
        names.remove("peer")
    if not names:
        return 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: still stop the model host and server
    root = Path(tempfile.mkdtemp(prefix="bench-tasks-"))
    columns: dict[str, list[Outcome]] = {n: [] for n in names}
    runners: dict = {}
    try:
        if "sentinel" in names:
            runners["sentinel"] = SentinelColumn(root, args.wall_s)
        if "peer" in names:
            runners["peer"] = PeerColumn(root, gguf, settings.threads or default_threads(), settings.context_tokens,
                                         args.wall_s)
        def column(n: str, i: int, task: Task) -> None:
            out = runners[n].run(task, root / f"{i:02d}-{task.name}-{n}")
            columns[n].append(out)
            print(f"[{n}] {task.name}: {'pass' if out.passed else 'fail'} ({out.status}, {out.seconds:.0f} s, "
                  f"{out.approvals} approvals/commands) {out.why}", file=sys.stderr, flush=True)

        if args.parallel:  # each column's model on its own CPU, both at once: the same conditions, half the time
            # daemon threads: a stopped bench (SIGTERM, Ctrl-C) leaves through `finally` without waiting for them
            threads = [threading.Thread(target=lambda n=n: [column(n, i, t) for i, t in enumerate(tasks)],
                                        daemon=True) for n in names]
            for thread in threads:
                thread.start()
            while any(thread.is_alive() for thread in threads):
                time.sleep(0.5)  # not join(): a signal handler runs in the main thread only between waits
        else:
            for i, task in enumerate(tasks):  # interleaved: machine noise falls on both columns alike
                for n in names:
                    column(n, i, task)
    finally:
        for runner in runners.values():
            runner.close()
        if args.keep:
            print(f"workspaces kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps({n: {"rows": [asdict(r) | {"false_success": r.false_success} for r in rows],
                              **summary(rows)} for n, rows in columns.items()}, indent=2))
    else:
        report(tasks, columns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
