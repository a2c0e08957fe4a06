"""The tasks of benchmarks/bench_tasks.py: small things a user asks an agent, each with the files it starts
from and a check of what the agent left behind (the files, or its answer for a question).

A check returns None when the task was done, else one line saying what is wrong. `prompts` holds one task
per run: a task with two runs (remember, then recall) shares its workspace and home between them.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

Check = Callable[[Path, str], "str | None"]


@dataclass(frozen=True)
class Task:
    name: str
    prompts: tuple[str, ...]
    check: Check
    files: dict[str, str] = field(default_factory=dict)
    agent: str | None = None  # Sentinel runs it as this profile (made by `agents`)
    agents: tuple[tuple[str, ...], ...] = ()  # `sentinel agent create ...` argument lists, run before the task
    expects_tool: str | None = None  # the tool a run should choose on its own (reported, not checked)


def _read(ws: Path, name: str) -> str | None:
    path = ws / name
    return path.read_text(errors="replace") if path.is_file() else None


def _needs(ws: Path, name: str) -> str:
    text = _read(ws, name)
    if text is None:
        raise Missing(f"{name} does not exist")
    return text


def _json(ws: Path, name: str) -> object:
    try:
        return json.loads(_needs(ws, name))
    except ValueError:
        raise Missing(f"{name} is not valid JSON") from None


class Missing(Exception):
    pass


def checked(fn: Check) -> Check:
    def check(ws: Path, answer: str) -> str | None:
        try:
            return fn(ws, answer)
        except Missing as exc:
            return str(exc)
    return check


# -- checks --------------------------------------------------------------------------------------------------

@checked
def notes(ws: Path, answer: str) -> str | None:
    bullets = [ln for ln in _needs(ws, "notes.md").splitlines() if ln.lstrip().startswith(("-", "*", "+"))]
    return None if len(bullets) >= 3 else f"notes.md has {len(bullets)} bullet points, not 3"


CONFIG = "[server]\nhost = 0.0.0.0\nport = 8080\nworkers = 4\n"


@checked
def port(ws: Path, answer: str) -> str | None:
    lines = [ln.replace(" ", "") for ln in _needs(ws, "config.ini").splitlines() if ln.strip()]
    if "port=9090" not in lines:
        return "config.ini has no line port = 9090"
    if "port=8080" in lines or not {"[server]", "host=0.0.0.0", "workers=4"} <= set(lines):
        return "config.ini lost or kept the wrong lines"
    return None


DRAFT = "Quarterly plan: ship the importer, then the exporter.\n"


@checked
def renamed(ws: Path, answer: str) -> str | None:
    if (ws / "draft.txt").exists():
        return "draft.txt is still there"
    return None if _needs(ws, "final.txt").strip() == DRAFT.strip() else "final.txt does not hold draft.txt's text"


SALES = "item,amount\nkeyboard,45\nmouse,25\nmonitor,180\ncable,12\ndesk,240\n"


@checked
def total(ws: Path, answer: str) -> str | None:
    text = _needs(ws, "total.txt").strip()
    return None if text.replace(".0", "") == "502" else f"total.txt says {text[:40]!r}, not 502"


CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST_CALC = ("from calc import add, mul\n\nassert add(2, 3) == 5, add(2, 3)\nassert mul(2, 3) == 6\n"
             "print('ok')\n")


@checked
def fixed(ws: Path, answer: str) -> str | None:
    if _needs(ws, "test_calc.py") != TEST_CALC:
        return "test_calc.py was changed"
    proc = subprocess.run([sys.executable, "test_calc.py"], cwd=ws, capture_output=True, text=True, timeout=30)
    return None if proc.returncode == 0 else "python3 test_calc.py still fails"


REPORT = "for n in (3, 5, 8):\n    print(f'{n} squared is {n * n}')\nprint('end of report')\n"


@checked
def report(ws: Path, answer: str) -> str | None:
    want = "3 squared is 9\n5 squared is 25\n8 squared is 64\nend of report"
    return None if _needs(ws, "report.txt").strip() == want else "report.txt is not the script's output"


PEOPLE = "name,age\nAda,36\nLinus,28\nGrace,45\n"


@checked
def people(ws: Path, answer: str) -> str | None:
    data = _json(ws, "people.json")
    want = [dict(r) for r in csv.DictReader(io.StringIO(PEOPLE))]
    got = [{k: str(v) for k, v in r.items()} for r in data] if isinstance(data, list) and \
        all(isinstance(r, dict) for r in data) else None
    return None if got == want else "people.json is not the list of the three people with name and age"


LOG = ("2026-01-02 10:00:01 INFO started\n2026-01-02 10:00:05 ERROR disk full on /var\n"
       "2026-01-02 10:01:00 INFO retry\n2026-01-02 10:01:09 ERROR upload failed: timeout\n"
       "2026-01-02 10:02:00 WARN slow response\n2026-01-02 10:03:30 ERROR upload failed: timeout\n")


@checked
def errors(ws: Path, answer: str) -> str | None:
    want = [ln for ln in LOG.splitlines() if "ERROR" in ln]
    got = [ln for ln in _needs(ws, "errors.txt").splitlines() if ln.strip()]
    return None if got == want else f"errors.txt has {len(got)} lines, not the {len(want)} ERROR lines"


KEEP = {"keep.txt": "keep me\n", "notes.md": "# notes\n", "data.csv": "a,b\n1,2\n"}
TEMPS = {"build.tmp": "x\n", "cache.tmp": "y\n", "old.tmp": "z\n"}


@checked
def cleaned(ws: Path, answer: str) -> str | None:
    left = [n for n in TEMPS if (ws / n).exists()]
    lost = [n for n, text in KEEP.items() if _read(ws, n) != text]
    if left:
        return f"still there: {', '.join(left)}"
    return f"lost or changed: {', '.join(lost)}" if lost else None


SETUP_CFG = "[metadata]\nname = lumen\nversion = 2.7.1\nauthor = Ada\n\n[options]\npython_requires = >=3.9\n"


def version(ws: Path, answer: str) -> str | None:
    return None if "2.7.1" in answer else f"the answer does not say 2.7.1: {answer.strip()[:60]!r}"


def staging(ws: Path, answer: str) -> str | None:
    # a made-up name: a fact the machine cannot tell (a weekday once passed by `date +%A` on the right day)
    return None if "heron-7" in answer.lower() else f"the answer does not say heron-7: {answer.strip()[:60]!r}"


@checked
def greeting(ws: Path, answer: str) -> str | None:
    return None if _needs(ws, "hello.txt").strip() else "hello.txt is empty"


@checked
def archived(ws: Path, answer: str) -> str | None:
    moved = [n for n in ("old1.log", "old2.log") if _read(ws, f"archive/{n}") == f"{n}\n"]
    stayed = [n for n in ("old1.log", "old2.log") if (ws / n).exists()]
    if len(moved) < 2 or stayed:
        return "archive/ does not hold old1.log and old2.log, or they are still in the workspace"
    return None if _read(ws, "current.log") == "current\n" else "current.log was moved or changed"


ENV_SH = "export EDITOR=vim\nexport LANG=C.UTF-8\n"


@checked
def appended(ws: Path, answer: str) -> str | None:
    lines = _needs(ws, "env.sh").rstrip("\n").splitlines()
    if lines[:2] != ENV_SH.splitlines():
        return "env.sh lost its first lines"
    return None if lines[-1].strip() == "export PATH=$HOME/bin:$PATH" else "the last line is not the PATH export"


SETTINGS = '{\n  "debug": true,\n  "port": 8000,\n  "name": "shop"\n}\n'


@checked
def settings(ws: Path, answer: str) -> str | None:
    data = _json(ws, "settings.json")
    return None if data == {"debug": False, "port": 8000, "name": "shop"} else "settings.json is not debug=false"


@checked
def hello_script(ws: Path, answer: str) -> str | None:
    _needs(ws, "hello.py")
    proc = subprocess.run([sys.executable, "hello.py"], cwd=ws, capture_output=True, text=True, timeout=30)
    return None if proc.stdout.strip() == "Hello, World!" else "python3 hello.py does not print Hello, World!"


NAMES = "mallory\nalice\ntrent\nbob\ncarol\n"


@checked
def sorted_names(ws: Path, answer: str) -> str | None:
    got = _needs(ws, "sorted.txt").split()
    return None if got == sorted(NAMES.split()) else "sorted.txt is not the names in alphabetical order"


WRITER = ("writer", "--tools", "read_file,write_file", "--description", "Writes and edits text files")
ORCHESTRATOR = ("orchestrator", "--tools", "delegate,read_file,write_file")  # as in the README

TASKS: list[Task] = [
    Task("create", ("Create notes.md with three bullet points about Linux.",), notes),
    Task("edit", ("In config.ini change the port from 8080 to 9090. Leave the other lines as they are.",), port,
         {"config.ini": CONFIG}),
    Task("rename", ("Rename draft.txt to final.txt.",), renamed, {"draft.txt": DRAFT}),
    Task("sum", ("Add up the amount column of sales.csv and write the total (just the number) to total.txt.",),
         total, {"sales.csv": SALES}),
    Task("fix-bug", ("python3 test_calc.py fails. Fix the bug in calc.py so that the test passes; do not change "
                     "test_calc.py.",), fixed, {"calc.py": CALC, "test_calc.py": TEST_CALC}),
    Task("run-save", ("Run the script report.py and save its output to report.txt.",), report,
         {"report.py": REPORT}),
    Task("csv-json", ("Convert people.csv to people.json: a JSON list with one object per row, with the keys name "
                      "and age.",), people, {"people.csv": PEOPLE}),
    Task("extract", ("Write every line of app.log that contains ERROR to errors.txt.",), errors, {"app.log": LOG}),
    Task("cleanup", ("Delete every .tmp file in the workspace. Keep all the other files.",), cleaned,
         {**KEEP, **TEMPS}),
    Task("question", ("Which version is set in setup.cfg?",), version, {"setup.cfg": SETUP_CFG}),
    Task("archive", ("Create a directory named archive and move old1.log and old2.log into it.",), archived,
         {"old1.log": "old1.log\n", "old2.log": "old2.log\n", "current.log": "current\n"}),
    Task("append", ("Add the line export PATH=$HOME/bin:$PATH at the end of env.sh.",), appended,
         {"env.sh": ENV_SH}),
    Task("json-edit", ("In settings.json set debug to false.",), settings, {"settings.json": SETTINGS}),
    Task("script", ("Write a Python script hello.py that prints Hello, World!",), hello_script),
    Task("sort", ("Sort the lines of names.txt alphabetically and write the result to sorted.txt.",), sorted_names,
         {"names.txt": NAMES}),
    Task("recall", ("Remember this for later: our staging server is called heron-7.",
                    "What is our staging server called?"), staging, expects_tool="recall"),
    Task("delegate", ("Put a short greeting in hello.txt.",), greeting, agent="orchestrator",
         agents=(WRITER, ORCHESTRATOR), expects_tool="delegate"),
    Task("ask-writer", ("Ask the writer to put a short greeting in hello.txt.",), greeting, agent="orchestrator",
         agents=(WRITER, ORCHESTRATOR), expects_tool="delegate"),  # the README's example
]
