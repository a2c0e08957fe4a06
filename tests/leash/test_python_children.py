"""Every Python process Sentinel starts imports Sentinel from the install, never from its working directory.

`python -m X` puts the working directory first on sys.path; a `sentinel/` package a tool wrote into its workspace
would then be imported instead of the install by the next Sentinel process started from there (the Leash launcher,
as root, outside every layer). Each argv that starts this interpreter carries -I (isolated: no working directory,
no PYTHON* variables, no user site) or -P with a PYTHONPATH it sets itself (sentinel/hooks/background.py).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "sentinel"
SAFE = {"-I", "-P"}


def _launches() -> list[tuple[str, int, list[str]]]:
    """(file, line, the flags before -m/-c/the script) of every list literal that starts with sys.executable."""
    found = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.List) or not node.elts:
                continue
            head = node.elts[0]
            if not (isinstance(head, ast.Attribute) and head.attr == "executable"
                    and isinstance(head.value, ast.Name) and head.value.id == "sys"):
                continue
            flags = []
            for elt in node.elts[1:]:
                if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str) and elt.value.startswith("-")):
                    break
                flags.append(elt.value)
                if elt.value in ("-m", "-c"):
                    break
            found.append((str(path.relative_to(ROOT.parent)), node.lineno, flags))
    return found


def test_every_python_child_is_isolated_from_its_working_directory():
    launches = _launches()
    assert len(launches) >= 8  # the launcher, workers, undo, Muzzle, watchers, setup, hosts, authored tools, ...
    loose = [f"{f}:{line} {flags}" for f, line, flags in launches if not SAFE & set(flags)]
    assert not loose, "python started without -I or -P:\n" + "\n".join(loose)


def test_the_hook_command_isolates_python_in_every_shape():
    text = (ROOT / "hooks" / "install.py").read_text()
    shapes = re.findall(r"\{sys\.executable\}([^\"']*)", text)
    assert shapes and all(re.match(r"\s+-I\b", s) for s in shapes), shapes


PLANT = """mkdir -p sentinel/leash && : > sentinel/__init__.py && : > sentinel/leash/__init__.py &&
cat > sentinel/leash/launcher.py <<'PY'
import os
open(os.path.join(os.getcwd(), "ESCAPED"), "w").write(str(os.geteuid()))
raise SystemExit(1)
PY
"""


@pytest.mark.root
def test_a_package_a_tool_wrote_is_not_the_next_launchers(tmp_path):
    """A tool writes sentinel/leash/launcher.py into its workspace; root then runs a Leash command from there:
    the launcher that starts is the installed one (the planted one would run as root, unconfined)."""
    ws, home = tmp_path / "proj", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    env = {**os.environ, "SENTINEL_HOME": str(home), "SENTINEL_MODE": "local"}
    sentinel = str(Path(sys.executable).with_name("sentinel"))
    planted = subprocess.run([sentinel, "leash", "exec", "--workspace", str(ws), "--", "sh", "-c", PLANT],
                             cwd="/", env=env, capture_output=True, text=True, timeout=120)
    assert planted.returncode == 0, planted.stderr
    assert (ws / "sentinel" / "leash" / "launcher.py").is_file()
    proc = subprocess.run([sentinel, "leash", "exec", "--workspace", str(ws), "--", "echo", "ran"],
                          cwd=ws, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ran" in proc.stdout, proc.stderr
    assert not (ws / "ESCAPED").exists(), "the planted launcher ran as root"
