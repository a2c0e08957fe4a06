"""Benchmark one `sentinel hook claude-code pre-tool-use` process end to end, beside a bare interpreter.

    python benchmarks/bench_hook.py [--runs N]

(a) no rule in scope (eight rules exist, none matches README.md), run by the command
    `sentinel hook install` writes (`python -I -S .../launch.py`): target <= 1.3x `python -I -c pass`
    of the same interpreter, measured in the same run; the `sentinel` console script beside it
    (editable install's path finder, `site`) for comparison
(e) the same with a bash rule (`git push --force*`) and `ls -la && git status`: out of scope without
    importing the shell parser: target <= 1.3x `python -I -c pass`
(f) `npm test` in a repository whose only rule is that bash rule: what it writes is unknown, and the built-in
    rule on the gate's own files (sentinel/policy/gate/own.py) meets every bash call; its pre-check lets a plain
    line that names none of its paths through without the shell parser (~80 ms when parsed); target <= 1.3x
(b) eight rules in scope, each judged by a scripted Ollama-native judge on loopback that
    answers in 100 ms (max_parallel 8, ollama_concurrency 8): target < 250 ms
(c) an `ask` rule in scope (kind: scope, no judge), local mode with a one-tap webhook target on
    loopback: the hook's start -> the webhook has the notification (the detached deliverer starts)
(d) a decision recorded in the store (`sentinel approve`'s resolve) -> the hook took it (the approval
    is consumed) and -> the hook answered (its process exited): target < 1 s

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


ASK_RULE = "kind: scope\ntrigger: bash\nseverity: ask\nscope: ['git push*']\n"


class Receiver:
    """A loopback webhook that notes when each notification arrived."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.times: list[float] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.times.append(time.perf_counter())
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *a: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, count: int, timeout: float = 30) -> float:
        deadline = time.monotonic() + timeout
        while len(self.times) < count:
            if time.monotonic() > deadline:
                raise SystemExit("bench: the webhook got no notification")
            time.sleep(0.002)
        return self.times[count - 1]


def bench_ask(runs: int, env: dict[str, str]) -> tuple[float, float, float, bool]:
    """(ask -> notification, decision -> taken, decision -> answer) medians in ms, and whether each answer allowed."""
    import sqlite3

    receiver = Receiver()
    notified, taken, answered, allowed = [], [], [], True
    with tempfile.TemporaryDirectory() as tmp:
        home, root = Path(tmp) / "home", Path(tmp) / "repo"
        home.mkdir()
        (home / "config.yaml").write_text(f"notify:\n  - type: webhook\n    url: {receiver.url}\n    on: [approval]\n"
                                          "    one_tap: true\n")
        (root / ".claude" / "sentinel" / "rules").mkdir(parents=True)
        (root / ".claude" / "sentinel" / "config.yaml").write_text("{}\n")
        (root / ".claude" / "sentinel" / "rules" / "push.yaml").write_text(ASK_RULE)
        ask_env = {**env, "SENTINEL_HOME": str(home), "SENTINEL_MODE": "local"}
        body = json.dumps({"session_id": "bench", "cwd": str(root), "hook_event_name": "PreToolUse",
                           "tool_name": "Bash", "tool_input": {"command": "git push origin main"}})
        from sentinel.engine.store import Store

        for n in range(1, runs + 1):
            began = time.perf_counter()
            proc = subprocess.Popen(hook_argv() + ["--ask-within", "60"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ask_env)
            proc.stdin.write(body)
            proc.stdin.close()
            notified.append((receiver.wait(n) - began) * 1000)
            with Store.open(home / "state" / "sentinel.db") as store:
                (pending,) = store.pending_approvals()
                decided = time.perf_counter()
                store.resolve(pending.id, True, "bench")
            db = sqlite3.connect(home / "state" / "sentinel.db")
            while db.execute("SELECT status FROM approvals WHERE id=?", (pending.id,)).fetchone()[0] != "consumed":
                time.sleep(0.001)
            taken.append((time.perf_counter() - decided) * 1000)
            db.close()
            out = proc.stdout.read()
            proc.wait()
            answered.append((time.perf_counter() - decided) * 1000)
            allowed = allowed and proc.returncode == 0 and '"allow"' in out
            proc.stderr.close()
            proc.stdout.close()
        deadline = time.monotonic() + 20  # the home's detached deliverer exits once idle
        from sentinel import paths

        while time.monotonic() < deadline:
            fd = paths.try_lock(home / "state" / "notify.lock")
            if fd is not None:
                os.close(fd)
                break
            time.sleep(0.05)
    receiver.server.shutdown()
    med = statistics.median
    return med(notified), med(taken), med(answered), allowed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--no-asks", dest="asks", action="store_false", help="Skip (c) and (d).")
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
        plain = root / "plain"  # a second repository: the bash rule alone (the billing rules would judge `npm test`)
        (plain / ".claude" / "sentinel" / "rules").mkdir(parents=True)
        (plain / ".claude" / "sentinel" / "rules" / "force-push.yaml").write_text(
            (root / ".claude" / "sentinel" / "rules" / "force-push.yaml").read_text())
        subprocess.run(hook_argv(), input=bash_payload(plain, "ls"), capture_output=True, text=True, env=env)
        f, proc_f = median_ms(hook_argv(), bash_payload(plain, "npm test"), args.runs, env)
        calls_before = len(judge.requests)
        b, proc_b = median_ms(hook_argv(), hit, max(5, args.runs // 2), env)
        rows += [("(a) installed hook command, no rule in scope", a),
                 ("(e) hook, bash rule out of scope (`ls -la && git status`)", c),
                 ("(f) hook, `npm test` (only the built-in own-files rule meets it)", f),
                 ("(b) hook, 8 rules in scope, judge 100 ms", b)]
    asks = bench_ask(max(3, args.runs // 4), env) if args.asks else None
    if asks:
        rows += [("(c) ask -> the webhook has the notification", asks[0]),
                 ("(d) decision -> the hook took it (approval consumed)", asks[1]),
                 ("(d) decision -> the hook answered (process exited)", asks[2])]
    for label, ms in rows:
        print(f"{label:62s} {ms:8.1f} ms")
    ok_a = a <= 1.3 * bare and proc_a.returncode == 0 and not proc_a.stdout
    ok_c = c <= 1.3 * bare and proc_c.returncode == 0 and not proc_c.stdout
    ok_b = b < 250 and "deny" in proc_b.stdout and calls_before == 0
    print(f"(a) {a / bare:.2f}x `python -I -c pass` (target <= 1.3x): {'PASS' if ok_a else 'FAIL'}")
    print(f"(e) {c / bare:.2f}x `python -I -c pass` (target <= 1.3x): {'PASS' if ok_c else 'FAIL'}")
    ok_f = f <= 1.3 * bare and proc_f.returncode == 0 and not proc_f.stdout
    print(f"(f) {f / bare:.2f}x `python -I -c pass` (target <= 1.3x): {'PASS' if ok_f else 'FAIL'}")
    print(f"(b) {b:.0f} ms for 8 overlapping judge calls (target < 250 ms): {'PASS' if ok_b else 'FAIL'}")
    ok_d = not asks or (asks[2] < 1000 and asks[3])
    if asks:
        print(f"(d) {asks[2]:.0f} ms from a decision to the allow answer (target < 1000 ms): {'PASS' if ok_d else 'FAIL'}")
    return 0 if ok_a and ok_b and ok_c and ok_d and ok_f else 1


if __name__ == "__main__":
    sys.exit(main())
