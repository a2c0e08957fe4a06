"""A shell that reads its script from its input or a descriptor (`bash /dev/stdin`, `sh /dev/fd/0`, `bash -s`,
`bash <(…)`), a shell name the parse did not know (`rbash`) or one whose grammar is not bash's (`fish`), and
`env -S`, whose string is split by env's own grammar (`\\_` is a space), not bash's. Each attack runs for real
first where the tool is installed; the decision puts the line in scope of the rule."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from sentinel.policy import shell
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.own import own_rule
from sentinel.policy.gate.rules import Rule
from shell_cases import applies, rule, runs

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

FORCE = "git push --force*"


@pytest.fixture
def root(tmp_path):
    made = tmp_path / "w"
    (made / ".claude").mkdir(parents=True)
    (made / ".claude" / "settings.json").write_text("{}")
    return made


READS_INPUT = [  # what the shell runs is its input, a pipe or a descriptor
    "echo 'CMD' | bash /dev/stdin", "echo 'CMD' | sh /dev/fd/0", "bash <(echo 'CMD')", "sh <(echo 'CMD')",
    "echo 'CMD' | bash -s x", "echo 'CMD' | bash -s -- x", "bash 3<<<'CMD' /dev/fd/3",
    "echo 'CMD' | bash /proc/self/fd/0", "bash --rcfile <(echo 'CMD') -i -c true",
]
HERE_STRINGS = [  # the input is a literal here-string: parsed again, the command is seen
    "bash /dev/stdin <<< 'CMD'", "sh /dev/fd/0 <<< 'CMD'", "bash -s <<< 'CMD'", "dash /dev/stdin <<< 'CMD'",
]


@pytest.mark.parametrize("line", READS_INPUT)
def test_a_shell_reading_its_script_from_input_or_a_descriptor_is_unsure(tmp_path, root, line):
    assert runs(tmp_path, line)
    push = line.replace("CMD", "git push --force")
    assert not shell.parse(push).sure
    assert applies(rule("bash", FORCE), push, root)
    assert Rule(own_rule()).applies(actions.bash("Bash", {"command": line.replace(
        "CMD", "rm -f .claude/settings.json")}).locate(str(root)))


@pytest.mark.parametrize("line", HERE_STRINGS)
def test_a_here_string_script_is_parsed_again(tmp_path, root, line):
    assert runs(tmp_path, line)
    push = line.replace("CMD", "git push --force")
    assert "git push --force" in [c.text for c in shell.parse(push).commands]
    assert applies(rule("bash", FORCE), push, root)


@pytest.mark.parametrize("line", ["rbash -c 'CMD'", "bash -eo pipefail -c 'CMD'", "bash -o errexit -c 'CMD'",
                                  "/usr/bin/rbash -c 'CMD'", "bash -x -c 'CMD'"])
def test_shell_names_and_options_that_take_a_word(tmp_path, root, line):
    if shutil.which(line.split()[0].rsplit("/", 1)[-1]) is not None:
        assert runs(tmp_path, line)
    push = line.replace("CMD", "git push --force")
    assert "git push --force" in [c.text for c in shell.parse(push).commands]


@pytest.mark.parametrize("line", ["fish -c 'git push --force'", "tcsh -c 'git push --force'",
                                  "csh -c 'git push --force'", "echo 'git push --force' | fish",
                                  "busybox sh -c 'git push --force'", "zsh -c 'git push --force'"])
def test_other_shells_run_in_scope(root, line):
    assert applies(rule("bash", FORCE), line, root)


@pytest.mark.parametrize("line", ["bash deploy.sh", "sh ./x.sh arg", "bash -n x.sh", "bash -c 'ls -la'"])
def test_a_script_file_stays_a_program(line):
    parsed = shell.parse(line)
    assert parsed.sure, parsed.why


# -- env -S splits by its own grammar ---------------------------------------------------------------------------

ENV_SPLIT_BYPASSES = ["env -S 'git\\_push\\_--force'", "env -S 'git\\tpush --force'", "env -S 'git push --force\\c'",
                      "env -S 'git \"push\" --force'", "env -S 'git ${X} push --force'",
                      "env -S \"$(printf 'git\\vpush\\v--force')\""]


@pytest.mark.parametrize("line", ENV_SPLIT_BYPASSES)
def test_env_split_string_with_its_own_grammar_is_unsure(root, line):
    assert not shell.parse(line).sure
    assert applies(rule("bash", FORCE), line, root)


def test_env_split_escapes_are_real(tmp_path):
    work = tmp_path / "e"
    work.mkdir()
    subprocess.run(["bash", "-c", "env -S 'touch\\_m'"], cwd=work, capture_output=True, timeout=20)
    assert (work / "m").exists()  # `\_` separated the words: env ran `touch m`


@pytest.mark.parametrize("line,command", [
    ("env -S 'git push --force'", "git push --force"), ("env -S 'git' push --force", "git push --force"),
    ("env -S '-i git push --force'", "git push --force"), ("env -iS 'git push --force'", "git push --force"),
    ("env -S 'FOO=1 git push --force'", "git push --force"),
])
def test_plain_env_split_strings_are_read_as_env_reads_them(root, line, command):
    parsed = shell.parse(line)
    assert parsed.sure, parsed.why
    assert command in [c.text for c in parsed.commands]
    assert applies(rule("bash", FORCE), line, root)


def test_env_split_words_are_not_bash(root):
    """env runs `git` with the words `push;` and `rm`: no second command."""
    parsed = shell.parse("env -S 'git status; rm -rf x'")
    assert parsed.sure and "rm -rf x" not in [c.text for c in parsed.commands]


def test_env_split_is_placed_with_its_chdir(root):
    assert Rule(own_rule()).applies(actions.bash("Bash", {"command": "env -C .claude -S 'rm -f settings.json'"})
                                    .locate(str(root)))
