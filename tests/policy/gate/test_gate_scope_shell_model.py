"""The scope decision defaults to unknown: what the model of the shell does not cover is in scope of every path
rule (or makes the parse unsure), never out of it. One attack class per group (the red-team pass's A-K), each with
its neighbours: a plain command of the same shape that must keep its decision."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sentinel.policy import shell
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.rules import Rule
from sentinel.policy.gate.schema import validate
from sentinel.policy.writes import writes_nothing, written

BILLING = "src/billing/**"
FORCE = "git push --force*"

WRITES = {  # class -> commands that write src/billing/tax.py (or may): each is in scope of the BILLING rule
    "A no command word": ["> src/billing/tax.py", "x=1 > src/billing/tax.py", "cd src/billing && > tax.py",
                          ">> src/billing/tax.py", "x=$(true) > src/billing/tax.py"],
    "B cwd order": ["cd src/billing && { echo x; } > tax.py", "cd src/billing && ( echo x ) > tax.py",
                    "cd src/billing; for i in 1; do echo x; done > tax.py",
                    "ls() { echo x > tax.py; }; cd src/billing; ls", "f() { echo x > tax.py; }; cd src/billing; f",
                    "for d in 1 2; do echo x > tax.py; cd src/billing; done",
                    "while true; do touch tax.py; cd src; cd billing; done",
                    "for d in 1 2; do cd billing; cd src; done; touch tax.py"],
    "C cd semantics": ["cd -P l/.. && echo x > billing/tax.py", "set -P; cd l/.. && echo x > billing/tax.py",
                       "ln -s src/billing m && cd -P m/.. && echo x > billing/tax.py",
                       "ln -s src/billing m && echo x > m/tax.py", "CDPATH=src cd billing && echo x > tax.py",
                       "shopt -s cdable_vars; b=src/billing; cd b && echo x > tax.py"],
    "D find -execdir": ["find src/billing -name tax.py -execdir rm tax.py \\;",
                        "find src/billing -name tax.py -execdir sh -c 'echo x > tax.py' \\;",
                        "find src -name tax.py -okdir touch tax.py \\;"],
    "E placeholders": ["find src/billing -name tax.py -exec sed -i s/1/2/ {} \\;",
                       "find src/billing -name tax.py -exec git checkout -- {} \\;",
                       "find src -maxdepth 0 -exec dd if=/tmp/x of={}/billing/tax.py \\;",
                       "echo src | xargs -I X cp -t X/billing /tmp/x", "echo src | xargs -IX sort -oX/billing/t /tmp/x",
                       "echo src | xargs -i cp /tmp/x {}/billing", "echo src | xargs --replace=Q touch Q/billing/t"],
    "F getopt": ["cp -tsrc/billing /tmp/x", "cp -vtsrc/billing /tmp/x", "mv --target=src/billing /tmp/x",
                 "mv --t src/billing /tmp/x", "sort -osrc/billing/tax.py /tmp/x", "sort --out=src/billing/tax.py x",
                 "sort -rosrc/billing/tax.py x", "sed --in s/1/2/ src/billing/tax.py", "sed -ni s/1/2/ src/billing/t",
                 "dd if=/tmp/x of=/dev/null of=src/billing/tax.py", "echo x | env -iCsrc/billing tee tax.py",
                 "echo x | env --ch=src/billing tee tax.py", "env --split='touch src/billing/tax.py'",
                 "env -iS'touch src/billing/tax.py'", "cp --reflink=auto x -t src/billing",
                 "cp --bogus x src/billing/tax.py", "touch -dnow src/billing/tax.py", "ln -sfT x src/billing/tax.py",
                 "sudo -e src/billing/tax.py", "time -o src/billing/tax.py ls", "sort --compress-program=sh x"],
    "G sed scripts": ["sed -n '/T/w src/billing/tax.py' /tmp/x", "sed -n '1!w src/billing/tax.py' /tmp/x",
                      "sed -n '0~1w src/billing/tax.py' /tmp/x", "sed --expression='w src/billing/tax.py' /tmp/x",
                      "sed -e'w src/billing/tax.py' /tmp/x", "sed --e 'w src/billing/tax.py' /tmp/x",
                      "sed -n '/[/]/w src/billing/tax.py' x", "sed 's/a/b/w src/billing/tax.py' x",
                      "sed 's/a/b/e' x", "sed -n ':a;w src/billing/tax.py' x", "sed '1e touch x' x",
                      "sed -f script.sed x", "sed -n '$W src/billing/tax.py' x", "sed -n 's|x|y|gw f' x"],
    "H read-only options": ["shuf -o src/billing/tax.py -e x", "shuf -eo src/billing/tax.py x",
                            "history -w src/billing/tax.py", "git config -f src/billing/tax.py a.b c",
                            "git grep -O'cp /tmp/x src/billing/tax.py #' -e readme",
                            "git fetch --upload-pack='cp /tmp/x src/billing/tax.py' .",
                            "git diff --output=src/billing/tax.py", "git log --out=src/billing/tax.py",
                            "git diff --ext-diff", "git config core.pager 'touch src/billing/tax.py'",
                            "tree -o src/billing/tax.py", "file -C -m src/billing/tax", "rg --pre=touch x",
                            "find . -fprint src/billing/tax.py", "find . -newerXY x", "find . -bogus"],
    "I rebinding": ["hash -p /bin/cp ls; ls /tmp/x src/billing/tax.py", "PATH=/tmp/bin cat /tmp/x src/billing/t",
                    "export PATH=/tmp/bin; cat /tmp/x src/billing/tax.py", "BASH_ENV=/tmp/f bash -c true",
                    "GIT_EXTERNAL_DIFF='sh -c x' git diff", "read PATH <<< /tmp/bin; cat x y",
                    "printf -v PATH /tmp/bin; cat x y", "declare -n r=PATH; r=/tmp/bin; cat x y",
                    "env PATH=/tmp/bin cat x y", "LD_PRELOAD=/tmp/x.so ls", "cat() { cp \"$@\"; }; cat x y",
                    "enable -f /tmp/x.so ls", "PAGER='touch x' git log"],
    "J quote removal": ["echo x > 'src''/billing/tax.py'", "sed -i s/1/2/ \"src\"'/billing/tax.py'",
                        "echo x > src/\"bil\"ling/tax.py", "echo x > src/bil\\ling/tax.py",
                        "'cp' /tmp/x \"src/billing\"/tax.py"],
}
RUNS = {  # class -> lines that run (or may run) `git push --force`: each is in scope of the FORCE rule
    "E placeholders": ["echo --force | xargs -I@ git push @ origin main", "echo --force | xargs -i git push {} o m",
                       "find . -exec git push {} \\;", "parallel git push {} ::: --force",
                       "parallel git push ::: --force"],
    "F wrappers": ["timeout -vk 1 20 git push --force origin main", "sudo -nu root git push --force origin main",
                   "env -iu X git push --force origin main", "exec -la x git push --force origin main",
                   "env --split='git push --force origin main'", "env -S'git push' --force", "nice -5 git push --force",
                   "timeout --sig=KILL 9 git push --force", "sudo --user=root git push --force",
                   "env --bogus git push --force", "timeout -Z 9 git push --force"],
    "H options that run": ["git grep -O'git push --force origin main #' -e 1",
                           "git fetch --upload-pack='git push --force; git-upload-pack' .",
                           "git -c alias.x='!git push --force' x", "git rebase -x 'git push --force' main"],
    "I rebinding": ["hash -p /usr/bin/git ls; ls push --force origin main",
                    "PATH=/tmp/bin cat push --force origin main", "export PATH=/tmp/bin; cat push --force",
                    "ls() { command git \"$@\"; }; ls push --force", "GIT_SSH_COMMAND=x git push origin main"],
    "J quote removal": ["'gi''t' push --force origin main", "git push \"--for\"'ce' origin main",
                        "g\"i\"t push --forc'e'", "git push --fo\\rce"],
    "K wrapped strings": ["flock /tmp/l -c 'git push --force origin main'",
                          "flock -n /tmp/l --command 'git push --force'", "flock /tmp/l git push --force",
                          "nohup -- -x git push --force"],
}
# Ordinary commands of the same shapes: each keeps its decision (nothing under src/billing, no force push).
WRITES_OUT = ["ls -la && git status", "grep -rn foo src", "cat a | wc -l", "git diff", "git log --oneline",
              "echo x > notes.txt", "> notes.txt", "x=1 > notes.txt", "cd docs && { echo x; } > guide.md",
              "cd docs && echo x > guide.md", "cd ./docs && echo x > guide.md", "cd .. && ls",
              "for f in a b; do echo $f; done > notes.txt", "find src/billing -name '*.py' -exec grep -l x {} +",
              "find src -name '*.py' -execdir grep -l x {} \\;", "find -L src -type f -print",
              "echo a | xargs -I X echo X", "cp -tdocs /tmp/x", "cp -t docs /tmp/x", "mv --target=docs /tmp/x",
              "sort -o out.txt x", "sort --out=out.txt x", "sed -n 1,5p src/billing/tax.py",
              "sed 's/a/b/g' src/billing/tax.py", "sed -n '/^[a-z]/p' src/billing/tax.py", "sed -e 's/x/y/;q' f",
              "sed -i s/1/2/ docs/guide.md", "dd if=/tmp/x of=out.bin", "env -i FOO=1 ls", "shuf -e a b",
              "history", "history -c", "hash -r", "git config --get user.name", "git config user.name",
              "git grep -n foo", "git diff --stat src/billing", "git log -3 --format=%H", "git status --short",
              "git commit -m 'fix'", "git push origin main", "tree -L 2 src", "rg -n foo src", "set -e; ls",
              "timeout 5 ls", "sudo -u root ls", "echo 'src''/billing/tax.py'", "file src/billing/tax.py"]
RUNS_OUT = ["ls -la", "git push origin main", "timeout -k 1 20 git push origin main", "sudo -nu root git status",
            "env -iu X git push origin main", "echo main | xargs -I@ git push origin @", "flock /tmp/l -c 'ls'",
            "flock /tmp/l make", "git grep -n force", "'gi''t' push origin main", "cd app && make test",
            "git log --oneline | head -5", "GIT_AUTHOR_NAME=x git commit -m y", "export FOO=1; ls",
            "f() { ls; }; f", "hash -r; ls"]


def rule(trigger, scope):
    return Rule(validate({"trigger": trigger, "scope": [scope], "prompt": "p"}, Path("r.yaml")))


@pytest.fixture
def root(tmp_path):
    (tmp_path / "src/billing").mkdir(parents=True)
    (tmp_path / "src/billing/tax.py").write_text("TAX = 1\n")
    (tmp_path / "docs").mkdir()
    os.symlink("src/billing", tmp_path / "l")
    return tmp_path


def bash(command, root):
    return actions.bash("Bash", {"command": command}).locate(str(root))


def _cases(table):
    return [pytest.param(command, id=f"{klass}: {command}") for klass, commands in table.items()
            for command in commands]


@pytest.mark.parametrize("command", _cases(WRITES))
def test_an_attack_on_the_written_set_is_in_scope_of_the_path_rule(root, command):
    assert rule("file_write", BILLING).applies(bash(command, root)), written(command, str(root))
    assert not writes_nothing(command)


@pytest.mark.parametrize("command", _cases(RUNS))
def test_an_attack_on_what_runs_is_in_scope_of_the_bash_rule(root, command):
    assert rule("bash", FORCE).applies(bash(command, root)), shell.parse(command).commands


@pytest.mark.parametrize("command", WRITES_OUT)
def test_ordinary_writes_and_reads_keep_their_decision(root, command):
    writes = written(command, str(root))
    assert writes.known, writes
    assert not rule("file_write", BILLING).applies(bash(command, root)), writes


@pytest.mark.parametrize("command", RUNS_OUT)
def test_ordinary_commands_stay_out_of_a_bash_rule(root, command):
    assert not rule("bash", FORCE).applies(bash(command, root)), shell.parse(command).commands


def test_a_cd_is_followed_as_text_and_through_its_links(root):
    assert "src/billing/tax.py" in written("cd l/.. && echo x > billing/tax.py", str(root)).paths
    assert "billing/tax.py" in written("cd l/.. && echo x > billing/tax.py", str(root)).paths
    assert written("cd docs && echo x > guide.md", str(root)).paths == {"guide.md", "docs/guide.md"}


def test_a_cd_that_repeats_without_end_is_unknown(root):
    assert "too many" in written("while true; do cd a; done; echo x > f", str(root)).why


def test_cdpath_in_the_environment_makes_a_bare_cd_unknown(root, monkeypatch):
    monkeypatch.setenv("CDPATH", "src")
    assert not written("cd billing && echo x > tax.py", str(root)).known
    assert written("cd ./docs && echo x > guide.md", str(root)).known


@pytest.mark.parametrize("raw,word", [("'src''/billing'", "src/billing"), ("\"sr\"'c'", "src"),
                                      ("a\\ b", "a b"), ("\"a\\$b\\c\"", "a$b\\c"), ("'a\\b'", "a\\b")])
def test_quote_removal_follows_bash(raw, word):
    assert shell.unquote(raw) == word


@pytest.mark.parametrize("words,found,operands,why", [
    (["cp", "-vtDIR", "a"], [("-v", None), ("-t", "DIR")], ["a"], ""),
    (["cp", "--targ=D", "a", "--", "-b"], [("--target-directory", "D")], ["a", "-b"], ""),
    (["cp", "--t", "D", "a"], [("--target-directory", "D")], ["a"], ""),
    (["cp", "--re", "a"], [("--re", None)], ["a"], "an option not known here"),  # ambiguous prefix
    (["cp", "-Q", "a"], [("-Q", None)], ["a"], "an option not known here"),
    (["cp", "-t"], [], [], "lacks its argument"),
])
def test_the_option_reader_reads_as_getopt(words, found, operands, why):
    from sentinel.policy.writes import OPTION_SPECS

    got = shell.read_options(words, [False] * len(words), shell.Spec(*OPTION_SPECS["cp"]))
    assert [(n, v) for n, v, _ in got.found] == found
    assert [w for w, _ in got.operands] == operands
    assert why in got.why and bool(got.why) == bool(why)
