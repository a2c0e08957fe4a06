"""The action policy's read-only rule trusts the same write model the rule gate uses (sentinel.policy.writes): a
command is read-only for the policy only when that model says it writes nothing, so an option that writes
(`file -C`, `tree -o`) or changes the system (`date -s`, `date MMDDhhmm`) is never auto-approved by its name.
And a line whose command a brace list or an expansion may make cannot ride past a deny rule under `auto`."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from sentinel.errors import ConfigError
from sentinel.policy import action_policy as action
from sentinel.policy import shell, writes

WRITERS = ["file -C -m x", "file -Cm x", "file --compile -m x", "tree -o out.txt", "tree -oout.txt",
           "tree --output=o", "tree -R -H . -o x", "date -s 2030-01-01", "date --set=now", "date --se now",
           "date -us now", "date 0101000030", "date -u 010100002030", "ls *; date -s now"]
READERS = ["ls -la", "date", "date +%F", "date -u +%s", "date -d yesterday +%F", "date -r a.txt", "file -b x.png",
           "file --mime-type x", "tree -L 2", "tree -a -I node_modules", "cat a.txt", "wc -l a.txt", "uname -a",
           "id -u"]


@pytest.fixture
def policy():
    return action.load()


@pytest.mark.parametrize("command", WRITERS)
def test_a_read_only_name_with_a_writing_option_is_not_auto(policy, command):
    assert policy.decide_bash(command).outcome == "needs_approval"


@pytest.mark.parametrize("command", READERS)
def test_read_only_uses_stay_auto(policy, command):
    assert policy.decide_bash(command).outcome == "auto"


@pytest.mark.parametrize("command", WRITERS + READERS)
def test_the_policy_and_the_write_model_agree(policy, command):
    """One declaration: the rule covers a command exactly when the write model says it writes nothing."""
    rule = next(r for r in policy.bash.rules if r.id == "read-only-commands")
    assert rule.writes_nothing
    for found in shell.parse(command).commands:
        words = found.words[:found.nwords]
        dynamic = [found.open_at is not None and i >= found.open_at for i in range(len(words))]
        if rule._hits(found.text, found.words, found.open_at):  # one of the rule's names
            assert rule.covers(found) == (writes.operands(words, dynamic) == ([], ""))


@pytest.mark.parametrize("line,made", [("file -C -m m", "m.mgc"), ("tree -o listing.txt", "listing.txt")])
def test_the_writers_do_write(tmp_path, line, made):
    """What makes them writers: run for real, each leaves a file behind."""
    if shutil.which(line.split()[0]) is None:
        pytest.skip(f"needs {line.split()[0]}")
    (tmp_path / "m").write_text("0 string PNG png\n")
    subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True)
    assert (tmp_path / made).exists()


def test_writes_nothing_narrows_auto_rules_only():
    with pytest.raises(ConfigError, match="writes_nothing"):
        action.load(("config.yaml policy", {"bash": {"rules": [
            {"id": "x", "decision": "deny", "prefix": ["ls"], "writes_nothing": True}]}}))


AUTO_WITH_DENY = ("config.yaml policy", {"bash": {"default": "auto", "rules": [
    {"id": "no-push", "decision": "deny", "prefix": ["git push"]}]}})


@pytest.mark.parametrize("command", ['{sudo,sh,-c,"id; echo pwned"}', "{sudo,id}", "git {push,status} origin main",
                                    'git {-c,"user.name=a b"} push origin main', "git $sub origin main",
                                    "git push{,} origin main"])
def test_a_command_a_brace_list_or_expansion_may_make_is_not_auto(command):
    policy = action.load(AUTO_WITH_DENY)
    assert policy.decide_bash(command).outcome in ("needs_approval", "deny"), policy.decide_bash(command)


@pytest.mark.parametrize("command", ["git status", "echo {a,b}", "ls {src,docs}", "git log --format={a,b}",
                                     "echo $HOME"])
def test_lines_that_cannot_spell_the_denied_command_stay_auto(command):
    assert action.load(AUTO_WITH_DENY).decide_bash(command).outcome == "auto"
