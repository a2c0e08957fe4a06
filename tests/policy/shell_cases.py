"""Helpers the shell-model tests share: a scope rule, whether it applies to a Bash line, and whether a real bash
runs the command a line hides (`CMD` in the line becomes `touch m`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sentinel.policy.gate import action as actions
from sentinel.policy.gate.rules import Rule
from sentinel.policy.gate.schema import validate


def rule(trigger: str, scope: str) -> Rule:
    return Rule(validate({"trigger": trigger, "scope": [scope], "prompt": "p", "kind": "scope"}, Path("r.yaml")))


def applies(rule_: Rule, line: str, root: Path) -> bool:
    return rule_.applies(actions.bash("Bash", {"command": line}).locate(str(root)))


def runs(tmp_path: Path, line: str) -> bool:
    """bash runs the hidden command: `touch m` in an empty directory leaves `m`."""
    work = tmp_path / "bash"
    work.mkdir(exist_ok=True)
    (work / "m").unlink(missing_ok=True)
    subprocess.run(["bash", "-c", line.replace("CMD", "touch m")], cwd=work, capture_output=True, timeout=20,
                   env={"PATH": os.environ["PATH"], "HOME": str(work), "LC_ALL": "C"})
    return (work / "m").exists()
