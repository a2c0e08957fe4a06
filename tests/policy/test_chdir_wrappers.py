"""A command run in another directory by a wrapper or a global option (`env -C`, `sudo -D`, `unshare -w`, `git
-C`) writes there: its paths land from that directory; one whose directory the line does not spell or a tool
places elsewhere (`chroot`, `nsenter --wd`, `bwrap`, `systemd-run`, `sudo -i`, `su -`) is unplaced, like find
-execdir. The built-in rule on the gate's own files holds both; ordinary lines keep their reading."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sentinel.policy import shell
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.own import own_rule
from sentinel.policy.gate.rules import Rule
from sentinel.policy.gate.schema import validate
from sentinel.policy.writes import written


@pytest.fixture
def root(tmp_path, home):
    made = tmp_path / "w"
    (made / ".claude" / "sentinel" / "rules").mkdir(parents=True)
    (made / ".claude" / "settings.json").write_text("{}\n")
    (made / "sub").mkdir()
    (made / "src" / "core" / "billing").mkdir(parents=True)
    return made


def held(root: Path, line: str, cwd: str | None = None) -> bool:
    return Rule(own_rule()).applies(actions.bash("Bash", {"command": line}).locate(str(root), cwd))


NAMED = [  # the directory is spelled: the write lands there
    ("env -C .claude rm -f settings.json", ".claude/settings.json"),
    ("env --chdir=.claude/sentinel rm -rf rules", ".claude/sentinel/rules"),
    ("env --chdir .claude rm -f settings.json", ".claude/settings.json"),
    ("env -iC .claude rm -f settings.json", ".claude/settings.json"),
    ("unshare -w .claude rm -f settings.json", ".claude/settings.json"),
    ("sudo -D .claude rm -f settings.json", ".claude/settings.json"),
    ("sudo --chdir=.claude rm -f settings.json", ".claude/settings.json"),
    ("git -C .claude rm -q settings.json", ".claude/settings.json"),
    ("git -C .claude checkout -- settings.json", ".claude/settings.json"),
    ("git -C .claude -C sentinel rm -r rules", ".claude/sentinel/rules"),
    ("env -C .claude env -C sentinel rm -rf rules", ".claude/sentinel/rules"),
    ("env -C .claude bash -c 'echo {} > settings.json'", ".claude/settings.json"),
    ("env -C .claude find . -name settings.json -delete", ".claude"),
    ("env -C sub rm -f ../.claude/settings.json", ".claude/settings.json"),
]


@pytest.mark.parametrize("line,lands", NAMED)
def test_a_command_run_in_a_named_directory_writes_there(root, line, lands):
    assert lands in written(line, str(root)).paths
    assert held(root, line)
    assert Rule(validate({"trigger": "file_write", "scope": [f"{lands}/**", lands], "prompt": "p", "kind": "scope"},
                         Path("r.yaml"))).applies(actions.bash("Bash", {"command": line}).locate(str(root)))


@pytest.mark.parametrize("line", [
    "env -C $d rm -f settings.json", "env -C \"$(echo .claude)\" rm -f settings.json", "git -C $d rm settings.json",
    "git --git-dir=.claude/x --work-tree=.claude rm settings.json", "chroot . rm -f .claude/settings.json",
    "nsenter --wd=.claude rm -f settings.json", "nsenter -w rm -f settings.json",
    "bwrap --bind . / --chdir /.claude rm -f settings.json", "systemd-run --working-directory=/x rm -f settings.json",
    "systemd-run rm -f settings.json", "sudo -i rm -f settings.json", "sudo -R . rm -f settings.json",
    "su - root -c 'rm -f settings.json'", "runuser -l root -c 'rm -f settings.json'",
    "pkexec rm -f settings.json", "run0 -D /x rm -f settings.json", "proot -w /x rm -f settings.json",
    "chpst -C /x rm -f settings.json", "unshare -R . rm -f .claude/settings.json",
])
def test_a_command_run_where_the_line_does_not_say_is_unplaced(root, line):
    writes = written(line, str(root))
    assert not writes.known and not writes.spelled, writes
    assert held(root, line)


@pytest.mark.skipif(shutil.which("env") is None or shutil.which("git") is None, reason="needs env and git")
def test_the_real_tools_write_in_that_directory(tmp_path):
    work = tmp_path / "r"
    (work / ".claude").mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    (work / ".claude" / "settings.json").write_text("{}")
    subprocess.run(["bash", "-c", "env -C .claude rm -f settings.json"], cwd=work, env=env, timeout=20)
    assert not (work / ".claude" / "settings.json").exists()
    (work / ".claude" / "settings.json").write_text("{}")
    subprocess.run(["bash", "-c", "git init -q . && git add -A && git -c user.name=a -c user.email=a@b commit -qm i"
                    " && git -C .claude rm -q settings.json"], cwd=work, env=env, timeout=20, capture_output=True)
    assert not (work / ".claude" / "settings.json").exists()


@pytest.mark.parametrize("line,paths", [
    ("git -C sub status", set()), ("git -C sub log --oneline", set()), ("git -C sub diff > out.txt", {"out.txt"}),
    ("env -C sub ls > listing", {"listing"}), ("env -C sub touch x", {"sub/x"}), ("git -C sub add x", {"sub/.git"}),
    ("git -C sub commit -m 'x'", {"sub/.git"}), ("sudo -D sub make", set()), ("systemd-run --scope true", set()),
])
def test_ordinary_lines_keep_their_reading(root, line, paths):
    parsed = shell.parse(line)
    assert parsed.sure, parsed.why
    writes = written(line, str(root))
    assert writes.paths == paths, writes
    assert writes.spelled
    assert not held(root, line)
