"""A wrapper's options read as the tool reads them: an option that takes a word (`strace -b execve`, `fakeroot -b
3`, `ltrace -D 1`, `proot -i 0:0`) never leaves that word as the wrapped command, `runuser`/`su` read as
util-linux's getopt (`-lc STRING`, `-cSTRING`, `--session-command=`), an option not verified here (`numactl -t`)
unsure; and find's `-exec` ends where GNU find ends it (`+` only right after `{}`). Where the tool is installed,
the real one runs first."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from sentinel.policy import shell
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.own import own_rule
from sentinel.policy.gate.rules import Rule
from sentinel.policy.writes import written
from shell_cases import rule, applies

FORCE = "git push --force*"




@pytest.fixture
def root(tmp_path):
    made = tmp_path / "w"
    (made / "src" / "billing").mkdir(parents=True)
    (made / "src" / "billing" / "pay.py").write_text("x = 1\n")
    (made / ".claude").mkdir()
    (made / ".claude" / "settings.json").write_text("{}")
    return made


ARITY = [  # CMD is the wrapped command
    "strace -f -b execve CMD", "strace -b execve -o /dev/null CMD", "fakeroot -b 3 CMD", "fakeroot -b3 CMD",
    "fakeroot --fd-base 3 CMD", "fakeroot -f /bin/true CMD", "ltrace -D 1 CMD", "proot -i 0:0 CMD",
]


@pytest.mark.parametrize("line", ARITY)
def test_an_option_argument_is_never_the_wrapped_command(root, line):
    push = line.replace("CMD", "git push --force")
    assert "git push --force" in [c.text for c in shell.parse(push).commands] or not shell.parse(push).sure
    assert applies(rule("bash", FORCE), push, root)
    assert Rule(own_rule()).applies(actions.bash("Bash", {"command": line.replace(
        "CMD", "rm -f .claude/settings.json")}).locate(str(root)))


@pytest.mark.skipif(shutil.which("strace") is None or shutil.which("fakeroot") is None, reason="needs the tools")
@pytest.mark.parametrize("line", ["strace -f -b execve -o /dev/null CMD", "fakeroot -b 3 CMD"])
def test_the_real_tools_take_the_argument(tmp_path, line):
    work = tmp_path / "t"
    work.mkdir()
    subprocess.run(["bash", "-c", line.replace("CMD", "touch m")], cwd=work, capture_output=True, timeout=60)
    assert (work / "m").exists()


@pytest.mark.parametrize("line", ["numactl -t CMD", "numactl --strict CMD", "numactl -T CMD"])
def test_an_option_not_verified_here_is_unsure(root, line):
    assert not shell.parse(line.replace("CMD", "git push --force")).sure


RUNUSER = ["runuser -lc 'CMD' root", "runuser -c'CMD' root", "runuser --session-command='CMD' root",
           "runuser --session-command 'CMD' root", "runuser root -c 'CMD'", "runuser -fc 'CMD' root",
           "su -lc 'CMD' root", "su -c'CMD'", "su root -- -c 'CMD'", "su - root -c 'CMD'", "runuser -u root -- CMD",
           "su --comm='CMD' root"]


@pytest.mark.parametrize("line", RUNUSER)
def test_runuser_and_su_strings_are_read_as_their_getopt_reads_them(root, line):
    push = line.replace("CMD", "git push --force")
    assert applies(rule("bash", FORCE), push, root)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("runuser") is None, reason="runuser needs root")
@pytest.mark.parametrize("line", ["runuser -lc 'CMD' root", "runuser -c'CMD' root",
                                  "runuser --session-command='CMD' root"])
def test_runuser_runs_those_strings(tmp_path, line):
    marker = tmp_path / "m"
    subprocess.run(["bash", "-c", line.replace("CMD", f"touch {marker}")], capture_output=True, timeout=60)
    assert marker.exists()


@pytest.mark.parametrize("line", ["runuser -s /usr/bin/fish -c 'git push --force' root", "su root",
                                  "echo 'git push --force' | runuser -u root"])
def test_a_shell_runuser_starts_that_the_parse_cannot_read_is_unsure(line):
    assert not shell.parse(line).sure


# -- find -exec ends where GNU find ends it ---------------------------------------------------------------------

FIND = ["find . -maxdepth 0 -exec rm + -f src/billing/pay.py \\;", "find . -maxdepth 0 -exec rm -f + src/billing/pay.py \\;",
        "find . -maxdepth 0 -execdir rm -f + src/billing/pay.py \\;",
        "find . -maxdepth 0 -ok rm -f {} + src/billing/pay.py \\; < /dev/null"]


@pytest.mark.skipif(shutil.which("find") is None, reason="needs find")
def test_find_ends_exec_at_a_plus_only_after_braces(tmp_path):
    work = tmp_path / "f"
    (work / "src" / "billing").mkdir(parents=True)
    (work / "src" / "billing" / "pay.py").write_text("x")
    subprocess.run(["bash", "-c", FIND[1]], cwd=work, capture_output=True, timeout=20)
    assert not (work / "src" / "billing" / "pay.py").exists()


@pytest.mark.parametrize("line", FIND)
def test_a_plus_that_does_not_follow_braces_does_not_end_the_command(root, line):
    assert "src/billing/pay.py" in [c.words[-1] for c in shell.parse(line).commands if c.words[0] == "rm"]
    assert applies(rule("file_write", "src/billing/**"), line, root)
    own = line.replace("src/billing/pay.py", ".claude/settings.json")
    assert Rule(own_rule()).applies(actions.bash("Bash", {"command": own}).locate(str(root)))


@pytest.mark.parametrize("line,command", [
    ("find . -name '*.py' -exec grep -l foo {} +", "grep -l foo {}"),
    ("find . -type f -exec wc -l {} \\;", "wc -l {}"),
    ("find . -exec echo {} + -exec rm -f x \\;", "rm -f x"),
])
def test_ordinary_find_exec_keeps_its_reading(root, line, command):
    parsed = shell.parse(line)
    assert parsed.sure and command in [c.text for c in parsed.commands]
    if "grep" in line:
        assert written(line, str(root)).paths == set()
