"""What bash runs from text the parse kept as a leaf: a `${…}` parameter expansion holding a command substitution
(bashlex keeps `${…}` whole), `${x@P}`, and literal text bash evaluates as an array subscript (`test -v`, `[ -v`,
`printf -v`, `read`, `declare`, arithmetic of a variable holding it), whose `$(…)` runs. Each attack is run by a
real bash first (the effect is real), then decided: the parse is unsure, so every rule applies. Neighbours keep
their reading."""

from __future__ import annotations

import shutil

import pytest

from sentinel.policy import shell
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.own import own_rule
from sentinel.policy.gate.rules import Rule
from sentinel.policy.writes import written
from shell_cases import rule, applies, runs

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

# CMD is the command bash runs from inside the leaf
PARAMETER_LEAVES = [
    "echo ${x:-$(CMD)}", ': "${x:=$(CMD)}"', 'echo "${x:-`CMD`}"', "y=${x:-$(CMD)}", "echo ${x[$(CMD)]}",
    'echo "${x:-"$(CMD)"}"', "x='$(CMD)'; echo ${x@P}",
]
SUBSCRIPTS = [
    "test -v 'a[$(CMD)]'", "[ -v 'a[$(CMD)]' ]", "printf -v 'a[$(CMD)]' x", "read -r 'a[$(CMD)]' <<< 1",
    "declare 'a[$(CMD)]=1'", "declare -n r='a[$(CMD)]'; echo $r", "test -v $'a[\\x24(CMD)]'",
    "read -r x <<< 'a[$(CMD)]'; test -v \"$x\"", 'x="a[\\$(CMD)]"; test -v "$x"',
    "read -r x <<'E'\na[$(CMD)]\nE\ntest -v \"$x\"",
]
# arithmetic contexts: the parse is unsure of these or shows the command (bashlex reads `$(` in the assignment)
ARITHMETIC = [
    "x='a[$(CMD)]'; echo $((x))", "let 'a[$(CMD)]=1'", "[[ 1 -eq 'a[$(CMD)]' ]]", "x='a[$(CMD)]'; (( x ))",
    "x='a[$(CMD)]'; y=abc; echo ${y:x}", "declare -i n; n='a[$(CMD)]'",
]





@pytest.fixture
def root(tmp_path):
    made = tmp_path / "w"
    (made / "src" / "billing").mkdir(parents=True)
    (made / ".claude").mkdir()
    return made


@pytest.mark.parametrize("line", PARAMETER_LEAVES + SUBSCRIPTS)
def test_a_command_bash_runs_from_a_leaf_makes_the_parse_unsure(tmp_path, root, line):
    assert runs(tmp_path, line)  # the effect is real
    push = line.replace("CMD", "git push --force")
    assert not shell.parse(push).sure
    assert applies(rule("bash", "git push --force*"), push, root)
    assert applies(rule("file_write", "src/billing/**"), line.replace("CMD", "rm -rf src/billing"), root)
    assert Rule(own_rule()).applies(actions.bash("Bash", {"command": line.replace("CMD", "rm -rf .claude")})
                                    .locate(str(root)))


@pytest.mark.parametrize("line", ARITHMETIC)
def test_arithmetic_of_a_subscript_is_in_scope(tmp_path, root, line):
    assert runs(tmp_path, line)
    push = line.replace("CMD", "git push --force")
    assert applies(rule("bash", "git push --force*"), push, root)
    assert applies(rule("file_write", "src/billing/**"), line.replace("CMD", "rm -rf src/billing"), root)


@pytest.mark.parametrize("line,commands", [
    ("echo ${HOME}", ["echo ${HOME}"]), ('echo "${HOME:-/tmp}/x"', ["echo ${HOME:-/tmp}/x"]),
    ('echo "[INFO] $(date)"', ["echo [INFO] $(date)", "date"]), ("echo '[x] $(y)'", ["echo [x] $(y)"]),
    ("test -f x", ["test -f x"]), ("[ -d src ] && ls src", ["[ -d src ]", "ls src"]),
    ("declare -a a; a[1]=2; echo ${a[1]}", None), ("grep '[0-9]$' f", ["grep [0-9]$ f"]),
])
def test_plain_expansions_and_brackets_keep_their_reading(root, line, commands):
    parsed = shell.parse(line)
    if commands is not None:
        assert parsed.sure, parsed.why
        assert [c.text for c in parsed.commands] == commands
    if line.startswith(("test", "echo ${", "[ -d")):
        assert written(line, str(root)).paths == set() and written(line, str(root)).known
