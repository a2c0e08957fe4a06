"""Tool calls of the embedded models: valid-call % and correct-call % per model and tool-call mode.

    python benchmarks/bench_toolcalls.py [--models local/qwen2.5-coder-1.5b,local/smollm2-135m]
                                         [--modes scaffold,native,grammar] [--only N] [--json]

Each of the tasks below is a real `sentinel run` (the engine, Muzzle, the model host, the
worker's system prompt and tool schemas, the loop's recovery of plain-text calls) in a fresh
workspace with a few files, stopped after its first model call (`limits.max_steps: 1`). That
call is scored:

    valid     a call to a registered tool whose arguments fit the tool's schema
    correct   the expected tool with the expected arguments (paths normalised, commands
              compared token by token, a few equivalent spellings accepted per task)

and its latency is the model call's, as the run's journal records it (warm host: each model
and mode loads once, before its first task). The default mode is chosen from these figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FILES = {
    "notes.txt": "Meeting at noon.\nTeh plan is ready.\n",
    "README.md": "# Demo\nA small project.\n",
    "greeting.txt": "Hello, world\n",
    "old.log": "old\n",
    "config/settings.yaml": "port: 8080\ndebug: false\n",
    "src/app.py": "PORT = 8000\n# TODO: add logging\nprint('app')\n",
    "notes/ideas.md": "- smaller models\n",
}

# (task, tool, expected arguments); a value that is a list accepts any of its items
TASKS: list[tuple[str, str, dict[str, Any]]] = [
    ("Show me what is in notes.txt.", "read_file", {"path": "notes.txt"}),
    ("Read config/settings.yaml.", "read_file", {"path": "config/settings.yaml"}),
    ("What does README.md say?", "read_file", {"path": "README.md"}),
    ("Open src/app.py and show it to me.", "read_file", {"path": "src/app.py"}),
    ("Create a file hello.txt containing the word hi", "write_file", {"path": "hello.txt", "content": "hi"}),
    ("Write the text 'buy milk' into todo.txt.", "write_file", {"path": "todo.txt", "content": "buy milk"}),
    ("Create notes/plan.md with the text: Use smaller models.", "write_file",
     {"path": "notes/plan.md", "content": "Use smaller models."}),
    ("Save the number 42 to answer.txt.", "write_file", {"path": "answer.txt", "content": "42"}),
    ("In greeting.txt, replace 'Hello' with 'Goodbye'.", "edit_file",
     {"path": "greeting.txt", "old_string": "Hello", "new_string": "Goodbye"}),
    ("In src/app.py change 'PORT = 8000' to 'PORT = 9000'.", "edit_file",
     {"path": "src/app.py", "old_string": "PORT = 8000", "new_string": "PORT = 9000"}),
    ("In notes.txt, fix the typo 'Teh' so it reads 'The'.", "edit_file",
     {"path": "notes.txt", "old_string": ["Teh", "Teh plan"], "new_string": ["The", "The plan"]}),
    ("In config/settings.yaml replace 'debug: false' with 'debug: true'.", "edit_file",
     {"path": "config/settings.yaml", "old_string": "debug: false", "new_string": "debug: true"}),
    ("List the files in the workspace.", "list_dir", {"path": "."}),
    ("What files are in the src directory?", "list_dir", {"path": "src"}),
    ("List the contents of the config folder.", "list_dir", {"path": "config"}),
    ("Which files are in the notes directory?", "list_dir", {"path": "notes"}),
    ("Run the command `python3 --version`.", "bash", {"command": "python3 --version"}),
    ("Count the lines of notes.txt with wc -l.", "bash", {"command": ["wc -l notes.txt", "wc -l < notes.txt"]}),
    ("Use grep to find TODO in src/app.py.", "bash",
     {"command": ["grep TODO src/app.py", "grep -n TODO src/app.py"]}),
    ("Print the current date with the date command.", "bash", {"command": "date"}),
    ("Make a directory called build using mkdir.", "bash", {"command": ["mkdir build", "mkdir -p build"]}),
    ("Delete the file old.log with rm.", "bash", {"command": ["rm old.log", "rm -f old.log"]}),
]


def _norm(key: str, value: Any, workspace: Path) -> Any:
    if not isinstance(value, str):
        return value
    if key == "path":
        value = value.strip()
        if value.startswith(str(workspace)):
            value = value[len(str(workspace)):]
        value = value.strip("/") if value not in ("/", "") else value
        value = value[2:] if value.startswith("./") else value
        return "." if value in ("", "./", "/") else value
    if key == "command":
        try:
            return shlex.split(value.strip().rstrip(";"))
        except ValueError:
            return value.split()
    return value.strip()


def correct(args: dict[str, Any], expected: dict[str, Any], workspace: Path) -> bool:
    for key, want in expected.items():
        options = want if isinstance(want, list) else [want]
        got = _norm(key, args.get(key), workspace)
        if not any(got == _norm(key, option, workspace) for option in options):
            return False
    return True


def valid(name: str, raw: str) -> dict[str, Any] | None:
    from sentinel.tools import ToolError, parse_arguments
    from sentinel.tools.builtin import default_registry

    tool = default_registry().get(name)
    if tool is None:
        return None
    try:
        return parse_arguments(raw, tool)
    except ToolError:
        return None


def first_call(home: Path, task: str, workspace: Path) -> dict[str, Any]:
    from sentinel.local.engine import LocalEngine

    engine = LocalEngine(home)
    try:
        outcome = engine.start(task, workspace=workspace)
        run_dir = Path(engine.store.get_run(outcome.id)["run_dir"])
    finally:
        engine.close()
    events = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines() if line.strip()]
    first = next((e for e in events if e["type"] == "assistant"), None)
    if first is None:
        return {"calls": [], "content": "", "latency_ms": None, "error": outcome.error}
    return {"calls": first["message"].get("tool_calls") or [], "content": first["message"].get("content") or "",
            "latency_ms": first["latency_ms"], "recovered": first.get("recovered"), "error": None}


def bench(model: str, mode: str, tasks: list[tuple[str, str, dict[str, Any]]], root: Path) -> dict[str, Any]:
    import yaml

    from sentinel.models.hosts import stop_all

    home = root / f"{model.replace('/', '_')}-{mode}"
    home.mkdir(parents=True)
    (home / "config.yaml").write_text(yaml.safe_dump({
        "default_model": model, "limits": {"max_steps": 1}, "leash": {"tools": "plain"},
        "local": {"tool_mode": mode, "max_tokens": 160}, "safeguards": {"draft_contract": "never"}}))
    os.environ["SENTINEL_HOME"] = str(home)
    rows = []
    try:
        warm = home / "warm"
        warm.mkdir()
        first_call(home, "Say OK.", warm)  # load the model before the first timed task
        ws = home / "workspace"  # one path for every task: the system prompt names it, and its prefix is reused
        for task, tool, expected in tasks:
            shutil.rmtree(ws, ignore_errors=True)
            for rel, text in FILES.items():
                (ws / rel).parent.mkdir(parents=True, exist_ok=True)
                (ws / rel).write_text(text)
            got = first_call(home, task, ws)
            call = got["calls"][0] if got["calls"] else None
            args = valid(call["function"]["name"], call["function"]["arguments"]) if call else None
            ok = bool(call and args is not None and call["function"]["name"] == tool and correct(args, expected, ws))
            rows.append({"task": task, "expected": {"tool": tool, **expected},
                         "got": call["function"] if call else (got["content"][:120] or got["error"]),
                         "valid": args is not None, "correct": ok, "latency_ms": got["latency_ms"]})
    finally:
        stop_all(home / "state")
    latencies = [r["latency_ms"] for r in rows if r["latency_ms"] is not None]
    return {"model": model, "mode": mode, "tasks": len(rows),
            "valid_pct": round(100 * sum(r["valid"] for r in rows) / len(rows), 1),
            "correct_pct": round(100 * sum(r["correct"] for r in rows) / len(rows), 1),
            "latency_ms_p50": round(statistics.median(latencies)) if latencies else None, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="local/qwen2.5-coder-1.5b,local/smollm2-135m")
    parser.add_argument("--modes", default="scaffold,native,grammar")
    parser.add_argument("--only", type=int, default=None, help="the first N tasks only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # still stop the model hosts (finally below)
    tasks = TASKS[: args.only] if args.only else TASKS
    root = Path(tempfile.mkdtemp(prefix="bench-toolcalls-"))
    results = []
    try:
        for model in args.models.split(","):
            for mode in args.modes.split(","):
                began = time.monotonic()
                results.append(bench(model, mode, tasks, root))
                r = results[-1]
                if not args.json:
                    print(f"{model:28} {mode:9} valid {r['valid_pct']:5.1f}%  correct {r['correct_pct']:5.1f}%  "
                          f"p50 {r['latency_ms_p50']} ms  ({time.monotonic() - began:.0f} s, load average "
                          f"{os.getloadavg()[0]:.1f})", flush=True)
                    for row in r["rows"]:
                        if not row["correct"]:
                            print(f"    miss: {row['task']!r} -> {json.dumps(row['got'])[:160]}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
