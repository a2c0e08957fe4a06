"""The type checker and the linter, run as part of the suite so CI fails on a type error or a real lint bug.

mypy is strict on the whole package (`[tool.mypy] files` in pyproject.toml); ruff runs the bug-finding rules
`[tool.ruff.lint]` selects over the whole tree.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.timeout(300)  # a cold cache on a busy machine: the whole package is checked
def test_mypy_strict_passes_on_the_whole_package():
    done = _run("mypy", "--cache-dir", "/tmp/sentinel-mypy-cache")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_finds_no_bugs():
    done = _run("ruff", "check", "--no-cache", "sentinel", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr
