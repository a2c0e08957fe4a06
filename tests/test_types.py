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


# -- Any: only at a boundary, and saying which ------------------------------------------------------------------------

CEILING = 130  # uses of typing.Any in sentinel/ (imports left out); lower it as boundaries get types, never raise it


def _any_uses() -> list[tuple[str, bool]]:
    """Each use of `Any` as a name in sentinel/'s code (imports left out): where, and whether a `# untyped:` comment
    on its line or the line above says why it has no type."""
    import io
    import tokenize

    found: list[tuple[str, bool]] = []
    for path in sorted((ROOT / "sentinel").rglob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        comments: dict[int, str] = {}
        uses: list[int] = []
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
            elif token.type == tokenize.NAME and token.string == "Any":
                uses.append(token.start[0])
        for n in dict.fromkeys(uses):
            if lines[n - 1].lstrip().startswith(("from typing import", "import typing")):
                continue
            said = "untyped:" in comments.get(n, "") or "untyped:" in comments.get(n - 1, "")
            found.append((f"{path.relative_to(ROOT)}:{n}", said))
    return found


def test_every_any_left_is_a_boundary_that_says_why():
    unexplained = [where for where, said in _any_uses() if not said]
    assert not unexplained, "Any without a `# untyped:` reason:\n" + "\n".join(unexplained)


def test_any_stays_under_its_ceiling():
    assert len(_any_uses()) <= CEILING
