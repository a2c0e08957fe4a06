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
import random
import re
from dataclasses import dataclass, field, replace
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
    family: str = ""  # what kind of task (create, edit, ...): the split keeps each family in both halves


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


FAMILIES = {'create': 'create', 'edit': 'edit', 'rename': 'move', 'sum': 'compute', 'fix-bug': 'fix-test', 'run-save': 'run-save', 'csv-json': 'convert', 'extract': 'extract', 'cleanup': 'delete-keep', 'question': 'question', 'archive': 'multi-step', 'append': 'append', 'json-edit': 'edit', 'script': 'create', 'sort': 'convert', 'recall': 'memory', 'delegate': 'delegate', 'ask-writer': 'delegate'}


# -- more of each family: other phrasings over other data, so a fix for one wording is not a pass ----------------


def _file_is(name: str, want: str) -> Check:
    @checked
    def check(ws: Path, answer: str) -> str | None:
        got = _needs(ws, name)
        return None if got.strip() == want.strip() else f"{name} is {got.strip()[:60]!r}, not {want.strip()[:60]!r}"
    return check


def _number_is(name: str, want: float) -> Check:
    """The file holds just `want` (80, 80.0 and 80.00 alike)."""
    @checked
    def check(ws: Path, answer: str) -> str | None:
        got = _needs(ws, name).strip()
        try:
            return None if abs(float(got) - want) < 1e-9 else f"{name} says {got[:40]!r}, not {want:g}"
        except ValueError:
            return f"{name} is not just a number: {got[:40]!r}"
    return check


def _lines_are(name: str, want: list[str]) -> Check:
    @checked
    def check(ws: Path, answer: str) -> str | None:
        got = [ln.strip() for ln in _needs(ws, name).splitlines() if ln.strip()]
        return None if got == want else f"{name} has {got[:4]}…, not {want[:4]}…"
    return check


def _bullets(name: str, count: int) -> Check:
    @checked
    def check(ws: Path, answer: str) -> str | None:
        found = [ln for ln in _needs(ws, name).splitlines() if re.match(r"\s*[-*+]\s+\S", ln)]
        return None if len(found) >= count else f"{name} has {len(found)} bullet lines, not {count}"
    return check


def _says(*words: str) -> Check:
    def check(ws: Path, answer: str) -> str | None:
        missing = [w for w in words if w.lower() not in answer.lower()]
        return None if not missing else f"the answer does not say {', '.join(missing)}: {answer.strip()[:60]!r}"
    return check


def _moved(pairs: dict[str, str], text: dict[str, str], keep_source: bool = False) -> Check:
    @checked
    def check(ws: Path, answer: str) -> str | None:
        for src, dst in pairs.items():
            if _read(ws, dst) != text[src]:
                return f"{dst} does not hold {src}'s text"
            if (ws / src).exists() != keep_source:
                return f"{src} {'is gone' if keep_source else 'is still there'}"
        return None
    return check


def _deleted(gone: list[str], kept: dict[str, str]) -> Check:
    @checked
    def check(ws: Path, answer: str) -> str | None:
        left = [n for n in gone if (ws / n).exists()]
        lost = [n for n, t in kept.items() if _read(ws, n) != t]
        return (f"still there: {', '.join(left)}" if left else f"lost or changed: {', '.join(lost)}" if lost
                else None)
    return check


def _runs(script: str, want: str, *, args: tuple[str, ...] = ()) -> Check:
    @checked
    def check(ws: Path, answer: str) -> str | None:
        _needs(ws, script)
        proc = subprocess.run([sys.executable, script, *args], cwd=ws, capture_output=True, text=True, timeout=30)
        return None if proc.returncode == 0 and want in proc.stdout else f"python3 {script} does not print {want!r}"
    return check


def _json_is(name: str, want: object) -> Check:
    @checked
    def check(ws: Path, answer: str) -> str | None:
        return None if _json(ws, name) == want else f"{name} is not {json.dumps(want)[:60]}"
    return check


def _all(*checks: Check) -> Check:
    def check(ws: Path, answer: str) -> str | None:
        return next((why for c in checks if (why := c(ws, answer)) is not None), None)
    return check


WORDS = "apple\nbanana\ncherry\ndate\nelder\nfig\ngrape\n"
SCORES = "name,score\nana,70\nben,85\ncid,90\ndee,75\n"
NUMBERS = "12\n7\n93\n41\n5\n"
ESSAY = "My favourite colour is blue. The colour of the sea changes; colour is light.\n"
APP_CONF = "# app\nport=3000\nmode=dev\n"
RETRY_YAML = "retries: 3\ntimeout: 10\n"
ACCESS = ('1.2.3.4 "GET / HTTP/1.1" 200\n5.6.7.8 "GET /missing HTTP/1.1" 404\n9.9.9.9 "GET /a HTTP/1.1" 200\n'
          '1.2.3.4 "GET /old HTTP/1.1" 404\n')
CONTACTS = "Ada <ada@example.org>, phone 555-0101\nLinus: linus@kernel.example\nno email here\n"
INVENTORY = [{"item": "bolt", "qty": 40}, {"item": "nut", "qty": 55}]
ENV = "HOST=db.local\nPORT=5432\nUSER=app\n"
TEXT_PY = "def shout(s):\n    return s.lower() + '!'\n"
TEST_TEXT = "from text import shout\n\nassert shout('hi') == 'HI!', shout('hi')\nprint('ok')\n"
UTIL = "def double(n):\n    return n + n + 1\n"
CHECK_UTIL = "from util import double\n\nassert double(4) == 8, double(4)\nprint('ok')\n"
GREET = "echo hello from greet\necho second line\n"
STATS = "xs = [4, 8, 15]\nprint('n', len(xs))\nprint('sum', sum(xs))\n"
STATUS = "build: ok\ntests: ok\n"
TODO = "- buy milk\n- call mum\n"
BACKUP = {"a.txt": "alpha\n", "b.txt": "beta\n", "c.md": "# c\n"}
PEOPLE_NAMES = "ada\nlinus\ngrace\n"

MORE: list[Task] = [
    Task("create-todo", ("Make a file todo.md that lists four household chores as bullet points.",),
         _bullets("todo.md", 4), family="create"),
    Task("create-json", ("Create config.json holding a JSON object with name set to demo and version set to 1.",),
         _json_is("config.json", {"name": "demo", "version": 1}), family="create"),
    Task("create-script", ("I need a script add.py that prints the sum of 2 and 3.",), _runs("add.py", "5"),
         family="create"),
    Task("edit-conf", ("app.conf says port=3000; it should say port=4000. Keep the rest.",),
         _file_is("app.conf", APP_CONF.replace("3000", "4000")), {"app.conf": APP_CONF}, family="edit"),
    Task("edit-all", ("Replace the word colour with color everywhere in essay.txt.",),
         _file_is("essay.txt", ESSAY.replace("colour", "color")), {"essay.txt": ESSAY}, family="edit"),
    Task("edit-yaml", ("Set retries to 5 in settings.yaml.",), _file_is("settings.yaml", RETRY_YAML.replace("3", "5", 1)),
         {"settings.yaml": RETRY_YAML}, family="edit"),
    Task("move-into", ("Put report.txt in a new folder called done.",),
         _moved({"report.txt": "done/report.txt"}, {"report.txt": "final numbers\n"}),
         {"report.txt": "final numbers\n"}, family="move"),
    Task("rename-case", ("The file PHOTO.TXT should be called photo.txt.",),
         _moved({"PHOTO.TXT": "photo.txt"}, {"PHOTO.TXT": "pixels\n"}), {"PHOTO.TXT": "pixels\n"}, family="move"),
    Task("copy", ("Make a copy of template.txt named letter.txt.",),
         _moved({"template.txt": "letter.txt"}, {"template.txt": "Dear X,\n"}, keep_source=True),
         {"template.txt": "Dear X,\n"}, family="move"),
    Task("delete-bak", ("Remove the .bak files and leave everything else alone.",),
         _deleted(["a.bak", "b.bak"], {"a.txt": "a\n", "notes.md": "n\n"}),
         {"a.bak": "x\n", "b.bak": "y\n", "a.txt": "a\n", "notes.md": "n\n"}, family="delete-keep"),
    Task("delete-one", ("Delete old.log but keep current.log.",), _deleted(["old.log"], {"current.log": "now\n"}),
         {"old.log": "then\n", "current.log": "now\n"}, family="delete-keep"),
    Task("delete-pyc", ("Get rid of every *.pyc file; keep all the others.",),
         _deleted(["m.pyc", "n.pyc"], {"m.py": "x = 1\n", "README": "read me\n"}),
         {"m.pyc": "\x00\n", "n.pyc": "\x00\n", "m.py": "x = 1\n", "README": "read me\n"}, family="delete-keep"),
    Task("count-lines", ("How many lines does words.txt have? Write just the number to count.txt.",),
         _number_is("count.txt", 7), {"words.txt": WORDS}, family="compute"),
    Task("average", ("Work out the average score in scores.csv and save only that number in avg.txt.",),
         _number_is("avg.txt", 80), {"scores.csv": SCORES}, family="compute"),
    Task("maximum", ("Write the largest number of numbers.txt to max.txt.",), _number_is("max.txt", 93),
         {"numbers.txt": NUMBERS}, family="compute"),
    Task("run-shell", ("Execute greet.sh with bash and store what it prints in greet.txt.",),
         _file_is("greet.txt", "hello from greet\nsecond line"), {"greet.sh": GREET}, family="run-save"),
    Task("run-stats", ("Run python3 stats.py and put its output into stats.txt.",),
         _file_is("stats.txt", "n 3\nsum 27"), {"stats.py": STATS}, family="run-save"),
    Task("json-csv", ("Turn inventory.json into inventory.csv with the header item,qty and one row per item.",),
         _lines_are("inventory.csv", ["item,qty", "bolt,40", "nut,55"]), {"inventory.json": json.dumps(INVENTORY)},
         family="convert"),
    Task("env-json", ("Convert the KEY=value lines of app.env into app.json, one JSON object.",),
         _json_is("app.json", {"HOST": "db.local", "PORT": "5432", "USER": "app"}), {"app.env": ENV},
         family="convert"),
    Task("extract-404", ("Save the lines of access.log whose status is 404 in notfound.txt.",),
         _lines_are("notfound.txt", [ln for ln in ACCESS.splitlines() if ln.endswith("404")]), {"access.log": ACCESS},
         family="extract"),
    Task("extract-emails", ("List every email address in contacts.txt in emails.txt, one per line.",),
         _lines_are("emails.txt", ["ada@example.org", "linus@kernel.example"]), {"contacts.txt": CONTACTS},
         family="extract"),
    Task("ask-workers", ("How many workers does config.ini configure?",), _says("4"), {"config.ini": CONFIG},
         family="question"),
    Task("ask-author", ("Who is the author in setup.cfg?",), _says("Ada"), {"setup.cfg": SETUP_CFG},
         family="question"),
    Task("ask-biggest", ("Which item in sales.csv has the largest amount?",), _says("desk"), {"sales.csv": SALES},
         family="question"),
    Task("fix-shout", ("test_text.py fails: fix text.py so it passes, and leave the test alone.",),
         _all(_runs("test_text.py", "ok"), _file_is("test_text.py", TEST_TEXT)),
         {"text.py": TEXT_PY, "test_text.py": TEST_TEXT}, family="fix-test"),
    Task("fix-double", ("Make python3 check_util.py print ok by correcting util.py.",),
         _all(_runs("check_util.py", "ok"), _file_is("check_util.py", CHECK_UTIL)),
         {"util.py": UTIL, "check_util.py": CHECK_UTIL}, family="fix-test"),
    Task("append-status", ("Add a last line 'deploy: ok' to status.txt.",),
         _lines_are("status.txt", ["build: ok", "tests: ok", "deploy: ok"]), {"status.txt": STATUS}, family="append"),
    Task("append-todo", ("At the end of todo.txt add the item - water plants.",),
         _lines_are("todo.txt", ["- buy milk", "- call mum", "- water plants"]), {"todo.txt": TODO}, family="append"),
    Task("backup", ("Create a folder backup, copy every .txt file into it, then write how many you copied to "
                    "backup/count.txt.",),
         _all(_moved({"a.txt": "backup/a.txt", "b.txt": "backup/b.txt"}, BACKUP, keep_source=True),
              _number_is("backup/count.txt", 2)), BACKUP, family="multi-step"),
    Task("upper-count", ("Read names.txt, write the names in capitals to upper.txt, and the number of names to "
                         "n.txt.",),
         _all(_lines_are("upper.txt", ["ADA", "LINUS", "GRACE"]), _number_is("n.txt", 3)),
         {"names.txt": PEOPLE_NAMES}, family="multi-step"),
]

TASKS[:] = [replace(t, family=FAMILIES[t.name]) for t in TASKS] + MORE
SPLIT_SEED = 41  # fixed once (issue 41): never re-drawn, never tuned


def halves(tasks: list[Task] | None = None) -> tuple[list[Task], list[Task]]:
    """(tuning, held_out): within each family, the tasks in a fixed shuffle, the first half (rounded up) for
    tuning. Code is never changed while looking at the held-out half's results."""
    rng = random.Random(SPLIT_SEED)
    tuning: list[Task] = []
    held: list[Task] = []
    every = TASKS if tasks is None else tasks
    for family in sorted({t.family for t in every}):
        members = sorted((t for t in every if t.family == family), key=lambda t: t.name)
        rng.shuffle(members)
        cut = (len(members) + 1) // 2
        tuning += members[:cut]
        held += members[cut:]
    return tuning, held
