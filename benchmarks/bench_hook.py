"""Benchmark one `sentinel hook claude-code pre-tool-use` process end to end, beside a bare interpreter.

    python benchmarks/bench_hook.py [--runs N]

(a) no rule in scope (eight rules exist, none matches README.md), run by the command
    `sentinel hook install` writes (`python -I -S .../launch.py`): target <= 1.3x `python -I -c pass`
    of the same interpreter, measured in the same run; the `sentinel` console script beside it
    (editable install's path finder, `site`) for comparison
(c) the same with a bash rule (`git push --force*`) and `ls -la && git status`: out of scope without
    importing the shell parser: target <= 1.3x as (a)
(b) eight rules in scope, each judged by a scripted Ollama-native judge on loopback that
    answers in 100 ms (max_parallel 8, ollama_concurrency 8): target < 250 ms

Medians of N runs each, with a warm rules cache (the first call after an edit of the
rules pays for YAML + validation once). Prints one table; exit 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RULE = """\
id: {id}
trigger: file_write
severity: block
scope: ["src/core/billing/**"]
prompt: |
  FILE: {{{{file_path}}}}
  CONTENT: {{{{content_snippet}}}}
  RULE #{n}: billing code must not change without a ticket.
"""


def make_repo(root: Path, judge_url: str) -> None:
    rules = root / ".claude" / "sentinel" / "rules"
    rules.mkdir(parents=True)
    (root / ".claude" / "sentinel" / "config.yaml").write_text(
        f"backends:\n  ollama:\n    url: {judge_url}\nmax_parallel: 8\nollama_concurrency: 8\ntimeout_ms: 3000\n")
    for n in range(8):
        (rules / f"billing-{n}.yaml").write_text(RULE.format(id=f"billing-{n}", n=n))
    (rules / "force-push.yaml").write_text('id: force-push\ntrigger: bash\nscope: ["git push --force*"]\n'
                                           'prompt: "CMD {{command}}"\n')


def payload(root: Path, rel: str) -> str:
    return json.dumps({"session_id": "bench", "cwd": str(root), "hook_event_name": "PreToolUse",
                       "tool_name": "Write", "tool_input": {"file_path": str(root / rel), "content": "x = 1\n"}})


def bash_payload(root: Path, command: str) -> str:
    return json.dumps({"session_id": "bench", "cwd": str(root), "hook_event_name": "PreToolUse",
                       "tool_name": "Bash", "tool_input": {"command": command}})


def median_ms(argv: list[str], stdin: str | None, runs: int, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    times, proc = [], None
    for _ in range(runs):
        began = time.perf_counter()
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env)
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times), proc


def hook_argv() -> list[str]:
    """The command `sentinel hook install` writes into the agents' configs."""
    from sentinel.hooks.install import hook_command

    return hook_command().split() + ["hook", "claude-code", "pre-tool-use"]


def script_argv() -> list[str]:
    script = Path(sys.executable).with_name("sentinel")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "sentinel"]
    return base + ["hook", "claude-code", "pre-tool-use"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args(argv)
    from sentinel.policy.gate.fakejudge import FakeJudge

    verdict = {"violation": True, "confidence": 0.9, "reason": "billing change without a ticket"}
    env = {k: v for k, v in os.environ.items() if k != "SENTINEL_GATE_JUDGE"}
    with FakeJudge(lambda body: verdict, delay_ms=100) as judge, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root, judge.url)
        idle, hit = payload(root, "README.md"), payload(root, "src/core/billing/invoice.ts")
        subprocess.run(hook_argv(), input=idle, capture_output=True, text=True, env=env)  # warm the rules cache
        rows = []
        if Path("/usr/bin/python3").exists():
            rows.append(("/usr/bin/python3 -c pass", median_ms(["/usr/bin/python3", "-c", "pass"], None, args.runs, env)[0]))
        rows.append((f"{sys.executable} -c pass", median_ms([sys.executable, "-c", "pass"], None, args.runs, env)[0]))
        bare = median_ms([sys.executable, "-I", "-c", "pass"], None, args.runs, env)[0]
        rows.append((f"{sys.executable} -I -c pass (target base)", bare))
        rows.append(("(a') console script, no rule in scope", median_ms(script_argv(), idle, args.runs, env)[0]))
        a, proc_a = median_ms(hook_argv(), idle, args.runs, env)
        c, proc_c = median_ms(hook_argv(), bash_payload(root, "ls -la && git status"), args.runs, env)
        calls_before = len(judge.requests)
        b, proc_b = median_ms(hook_argv(), hit, max(5, args.runs // 2), env)
        rows += [("(a) installed hook command, no rule in scope", a),
                 ("(c) hook, bash rule out of scope (`ls -la && git status`)", c),
                 ("(b) hook, 8 rules in scope, judge 100 ms", b)]
    for label, ms in rows:
        print(f"{label:62s} {ms:8.1f} ms")
    ok_a = a <= 1.3 * bare and proc_a.returncode == 0 and not proc_a.stdout
    ok_c = c <= 1.3 * bare and proc_c.returncode == 0 and not proc_c.stdout
    ok_b = b < 250 and "deny" in proc_b.stdout and calls_before == 0
    print(f"(a) {a / bare:.2f}x `python -I -c pass` (target <= 1.3x): {'PASS' if ok_a else 'FAIL'}")
    print(f"(c) {c / bare:.2f}x `python -I -c pass` (target <= 1.3x): {'PASS' if ok_c else 'FAIL'}")
    print(f"(b) {b:.0f} ms for 8 overlapping judge calls (target < 250 ms): {'PASS' if ok_b else 'FAIL'}")
    return 0 if ok_a and ok_b and ok_c else 1


if __name__ == "__main__":
    sys.exit(main())
