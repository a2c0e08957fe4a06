"""`sentinel hook compat`: install the five CLIs from npm into a cache, drive each through the scenario,
print the matrix client x case (held | broken | no tool) and the hook's latency as each client sees it.

Bounded (every client run has a timeout, the whole run a deadline), loopback only (the scripted model
and judge listen on 127.0.0.1; clients are told to send no other traffic), and it cleans up what it
starts: each client runs with its own HOME, and any process still carrying that HOME once the client
has exited (Cline's hub daemon) is stopped by its pid.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, NotRequired, TypedDict

from sentinel.jsontypes import JSON
from sentinel.hooks.compat import clients, scenario
from sentinel.hooks.compat.servers import ScriptedAPI
from sentinel.leash import plain

if TYPE_CHECKING:
    from sentinel.hooks.compat.decider import Decider

CLIENT_TIMEOUT_S = 180
TIMING_SHIM = """#!/bin/sh
# Sentinel compat run: times the hook as the client sees it (exec to exit), then passes through.
t0=$(date +%s%N)
{command} "$@"{extra}
rc=$?
echo "$(( ($(date +%s%N) - t0) / 1000 ))" >> {log}
exit $rc
"""


def install(agent: str, version: str | None, cache: Path) -> tuple[Path, str]:
    """npm install PACKAGE@VERSION into the cache (once); returns (its .bin directory, the version)."""
    package, pinned, exe = clients.PINNED[agent]
    wanted = version or pinned
    if wanted == "latest":
        found = plain.run(["npm", "view", package, "version"], cwd="/", env=plain.operator_env(os.environ), text=True,
                          timeout=120)
        wanted = found.stdout.strip() or pinned
    prefix = cache / f"{package.replace('/', '_').replace('@', '')}@{wanted}"
    bin_dir = prefix / "node_modules" / ".bin"
    if not (bin_dir / exe).exists():
        prefix.mkdir(parents=True, exist_ok=True)
        proc = plain.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(prefix),
                          f"{package}@{wanted}"], cwd=prefix, env=plain.operator_env(os.environ), text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"npm install {package}@{wanted} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return bin_dir, wanted


def sentinel_command() -> str:
    from sentinel.hooks.install import default_command

    return default_command()


def hook_command() -> str:
    from sentinel.hooks.install import hook_command as installed

    return installed()


def stop_leftovers(home: Path) -> list[int]:
    """Processes that still carry this run's HOME (started by the client, e.g. Cline's hub daemon)."""
    stopped = []
    marker = f"HOME={home}".encode()
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if marker not in fh.read().split(b"\0"):
                    continue
            os.kill(int(pid), signal.SIGTERM)
            stopped.append(int(pid))
        except (OSError, ProcessLookupError):
            continue
    return stopped


class CaseResult(TypedDict):
    """One client's run of one case, as `--json` prints it."""

    agent: str
    case: str
    outcome: str                        # held | broken | no tool | timeout
    told: bool | None                   # the block's reason reached the model (None: the case blocks nothing)
    seconds: float
    hook_ms: list[float]
    asked: NotRequired[dict[str, str | int | None]]   # the ask cases' person (Decider.summary)
    judge_calls: int
    notes: list[str]
    exit: int | None
    dir: str


def run_case(agent: str, bin_dir: Path, case: str, work: Path, with_sentinel: bool = True) -> CaseResult:
    from sentinel.policy.gate.fakejudge import FakeJudge, by_substring

    base = Path(tempfile.mkdtemp(prefix=f"{agent}-{case}-", dir=work))
    root, home, timing = base / "project", base / "home", base / "hook-us.txt"
    home.mkdir()
    answers: dict[str, JSON] = {k: {"violation": v["violation"], "confidence": v["confidence"], "reason": v["reason"]}
                                for k, v in scenario.VERDICTS.items()}
    with FakeJudge(by_substring(answers)) as judge, ScriptedAPI(str(root)) as api, \
            _person(case, base / "sentinel-home") as person:
        scenario.make_project(root, judge.url)
        setup = clients.SETUPS[agent](bin_dir, api.url, root, home, scenario.PROMPTS[case])
        env = {**{k: v for k, v in os.environ.items() if k not in ("SENTINEL_GATE_JUDGE",)}, "HOME": str(home),
               "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1", **setup.env,
               # the hooks ask in this case's own Sentinel home, whose notify webhook reaches `person`
               "SENTINEL_HOME": str(base / "sentinel-home"), "SENTINEL_MODE": "local"}
        env = plain.operator_env(env)  # the operator's own tool: their environment, less loader variables
        shim = base / "sentinel-timed"
        shim.write_text(TIMING_SHIM.format(command=hook_command(), log=timing, extra=shim_extra(case)))
        shim.chmod(0o755)
        notes: list[str] = []
        proc: subprocess.CompletedProcess[str] | None = None
        try:
            for argv in setup.before:
                plain.run(argv, cwd=root, env=env, text=True, timeout=120)
            if with_sentinel:  # as documented: sentinel hook install AGENT, in the project
                done = plain.run([*sentinel_command().split(), "hook", "install", agent, "--command", str(shim)],
                                 cwd=root, env=env, text=True, timeout=120)
                notes += [line for line in done.stdout.splitlines() if line.startswith("to do:")]
            began = time.monotonic()
            proc = plain.run(setup.argv, cwd=root, env=env, text=True, timeout=CLIENT_TIMEOUT_S)
            seconds = time.monotonic() - began
            seen = api.seen()
            (base / "model-saw.jsonl").write_text(seen)  # every request the client sent: what its model read
            outcome = "held" if scenario.held(case, root, seen) else "broken"
            told = scenario.told(case, seen)
            if case != "allow-shell" and not api.called:
                outcome = "no tool"  # the client never offered the tool the case needs
        except subprocess.TimeoutExpired:
            outcome, told, seconds, proc = "timeout", None, float(CLIENT_TIMEOUT_S), None
        finally:
            stop_leftovers(home)
        hook_ms = [int(x) / 1000 for x in timing.read_text().split()] if timing.exists() else []
        asked = person.summary() if person is not None else None
    result = CaseResult(agent=agent, case=case, outcome=outcome, told=told, seconds=round(seconds, 1),
                        hook_ms=hook_ms, judge_calls=len(judge.requests), notes=notes,
                        exit=proc.returncode if proc else None, dir=str(base))
    if asked is not None:
        result["asked"] = asked
    return result


def shim_extra(case: str) -> str:
    """The expiry case waits a short window, not install's minutes (the shortest --ask-within wins)."""
    return f" --ask-within {scenario.ASK_WITHIN_S}" if case == "ask-expire" else ""


class _NoPerson:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None


def _person(case: str, home: Path) -> Decider | _NoPerson:
    """The ask cases' person (decider.py): notified by webhook, deciding through the one-tap link."""
    if case not in scenario.ASKS:
        return _NoPerson()
    from sentinel.hooks.compat.decider import Decider

    decision, reason = scenario.ASKS[case]
    return Decider(home, decision, reason)


def matrix(results: list[CaseResult], agents: list[str], versions: dict[str, str]) -> str:
    head = ["case"] + [f"{a} {versions[a]}" for a in agents]
    rows = [head, ["---"] * len(head)]
    for case in scenario.CASES:
        rows.append([case] + [next((r["outcome"] for r in results if r["agent"] == a and r["case"] == case), "-")
                              for a in agents])
    lat = []
    for a in agents:
        ms = [m for r in results if r["agent"] == a for m in r["hook_ms"]]
        lat.append(f"{statistics.median(ms):.0f} ms (n={len(ms)})" if ms else "-")
    rows.append(["block reason reached the model"] + [_told(results, a) for a in agents])
    rows.append(["hook latency, median as the client sees it"] + lat)
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def _told(results: list[CaseResult], agent: str) -> str:
    blocking = [r for r in results if r["agent"] == agent and r.get("told") is not None]
    missed = [r["case"] for r in blocking if not r["told"]]
    return f"{len(blocking) - len(missed)} of {len(blocking)}" + (f" (not: {', '.join(missed)})" if missed else "")


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="sentinel hook compat", description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=",".join(clients.PINNED), help="Comma-separated clients.")
    parser.add_argument("--cases", default=",".join(scenario.CASES), help="Comma-separated cases.")
    parser.add_argument("--latest", action="store_true", help="The newest version of each client, not the pinned one.")
    parser.add_argument("--without-sentinel", action="store_true", help="Baseline: no hook installed.")
    parser.add_argument("--cache", type=Path, default=clients.cache_dir(), help="Where the CLIs are installed.")
    parser.add_argument("--json", action="store_true", help="Print one JSON document.")
    parser.add_argument("--deadline", type=float, default=3600, help="Seconds for the whole run.")
    parser.add_argument("--keep", type=Path, default=None,
                        help="Keep each case's directory (project, HOME, model-saw.jsonl: what the model read) here.")
    args = parser.parse_args(argv)
    if shutil.which("npm") is None or shutil.which("node") is None:
        print("sentinel hook compat: needs node and npm on PATH", file=sys.stderr)
        return 2
    agents = [a for a in args.agents.split(",") if a]
    unknown = [a for a in agents if a not in clients.PINNED]
    if unknown:
        print(f"--agents: unknown client {unknown[0]!r} (known: {', '.join(clients.PINNED)})", file=sys.stderr)
        return 2
    cases = [c for c in args.cases.split(",") if c in scenario.CASES]
    end = time.monotonic() + args.deadline
    results: list[CaseResult] = []
    versions: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="sentinel-compat-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for agent in agents:
            try:
                bin_dir, versions[agent] = install(agent, "latest" if args.latest else None, args.cache)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                versions[agent] = "not installed"
                print(f"{agent}: {exc}", file=sys.stderr)
                continue
            for case in cases:
                if time.monotonic() > end:
                    break
                result = run_case(agent, bin_dir, case, work, not args.without_sentinel)
                results.append(result)
                if not args.json:
                    print(f"{agent} {versions[agent]} {case}: {result['outcome']} ({result['seconds']} s)",
                          file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps({"versions": versions, "results": results}, indent=2))
    else:
        print(matrix(results, agents, versions))
        for note in sorted({n for r in results for n in r["notes"]}):
            print(note)
    return 0 if all(r["outcome"] == "held" for r in results) or args.without_sentinel else 1


if __name__ == "__main__":
    sys.exit(main())
