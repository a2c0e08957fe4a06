"""Path rules see what a bash command writes: redirections, known writers' write positions, `cd`, symlinks;
an unknown writer is in scope of every file_write rule, a known read-only line of none."""

from __future__ import annotations

import os

import pytest

from sentinel.policy.gate import action as actions
from sentinel.policy.gate.rules import Rule
from sentinel.policy.gate.schema import validate
from sentinel.policy.writes import writes_nothing, written

BILLING = "src/core/billing/**"

ATTACKS = [
    "echo x > src/core/billing/pay.py", "echo x >> src/core/billing/pay.py", "echo x >| src/core/billing/pay.py",
    "echo x &> src/core/billing/pay.py", "ls | tee -a src/core/billing/pay.py", "cp /tmp/x src/core/billing/",
    "cp -t src/core/billing /tmp/x", "mv /tmp/x src/core/billing/pay.py", "mv src/core/billing/pay.py /tmp",
    "install -m 644 /tmp/x src/core/billing/pay.py", "ln -sf /etc/passwd src/core/billing/pay.py",
    "sed -i s/a/b/ src/core/billing/pay.py", "sed -i.bak -e s/a/b/ src/core/billing/pay.py",
    "dd if=/dev/zero of=src/core/billing/pay.py", "truncate -s 0 src/core/billing/pay.py",
    "rm -f src/core/billing/pay.py", "rm -rf src/core", "rm -rf .", "rmdir src/core/billing",
    "unlink src/core/billing/pay.py", "touch src/core/billing/pay.py", "chmod 000 src/core/billing/pay.py",
    "git checkout -- src/core/billing/pay.py", "git restore -- src/core/billing", "git rm src/core/billing/pay.py",
    "sort -o src/core/billing/pay.py x", "find src -name '*.py' -delete",
    # shapes: subshells, groups, compound redirections, bash -c, wrappers, pipelines, background, cd, symlinks
    "(echo x > src/core/billing/pay.py)", "{ echo x; } > src/core/billing/pay.py",
    "for i in 1; do echo $i; done > src/core/billing/pay.py", "bash -c 'echo x > src/core/billing/pay.py'",
    "sudo tee src/core/billing/pay.py < /tmp/x", "true & cp /tmp/x src/core/billing/pay.py",
    "cd src/core && echo x > billing/pay.py", "cd src && (cd core && touch billing/pay.py)",
    "echo x > b/pay.py", "echo x > link.py", "cp /tmp/x b", "echo $(touch src/core/billing/pay.py)",
]
UNKNOWN = [
    "patch -p1 < fix.diff", "git apply fix.diff", "git checkout main", "git stash pop", "python3 -c 'open(1)'",
    "python3 tool.py", "node x.js", "perl -pi -e s/a/b/ src/core/billing/pay.py", "bash deploy.sh", "./run.sh",
    "echo x > $f", "echo x > src/core/billing/*.py", "rm src/core/billing/*", "cp x ~/y", "ls | xargs rm",
    "find . -exec rm {} +", "cd $X && echo x > pay.py", "cd && echo x > pay.py", "eval 'echo x > y'",
    "sed 's/a/b/w out' f", "awk '{print > \"x\"}' f", "env -C src/core touch billing/pay.py", "make",
    "git -C src/core checkout -- billing/pay.py",
]
OUTSIDE = [  # writes, but not under the rule's paths; or read-only
    "echo x > README.md", "touch docs/guide.md", "cp src/core/billing/pay.py /tmp/pay.py", "echo x > d/guide.md",
    "cd docs && echo x > guide.md", "ls 2>/dev/null", "echo hi >&2", "rm -rf src/core/other",
    "cat src/core/billing/pay.py", "sed -n 1,5p src/core/billing/pay.py", "grep -r TODO src/core/billing",
    "find src/core/billing -name '*.py'", "git status", "git log -3", "git diff src/core/billing",
    "ls -la src/core/billing && wc -l src/core/billing/pay.py", "echo $HOME", "head -n 3 x | tail -1",
]


def rule(trigger, scope, exclude=()):
    from pathlib import Path

    return Rule(validate({"trigger": trigger, "scope": list(scope), "exclude": list(exclude), "prompt": "p"},
                         Path("r.yaml")))


@pytest.fixture
def root(tmp_path):
    (tmp_path / "src/core/billing").mkdir(parents=True)
    (tmp_path / "src/core/other").mkdir()
    (tmp_path / "docs").mkdir()
    os.symlink("src/core/billing", tmp_path / "b")
    os.symlink("docs", tmp_path / "d")
    os.symlink("src/core/billing/new.py", tmp_path / "link.py")  # dangling: the write creates its target
    return tmp_path


def bash(command, root, cwd=None):
    return actions.bash("Bash", {"command": command}).locate(str(root), cwd)


@pytest.mark.parametrize("command", ATTACKS)
def test_a_bash_write_under_the_rule_is_in_scope(root, command):
    act = bash(command, root)
    assert act.writes().known, act.writes()
    assert rule("file_write", [BILLING]).applies(act), act.writes()


@pytest.mark.parametrize("command", UNKNOWN)
def test_an_unknown_writer_is_in_scope_of_every_path_rule(root, command):
    act = bash(command, root)
    assert not act.writes().known
    assert rule("file_write", [BILLING]).applies(act)
    assert rule("file_write", ["docs/**"], ["**"]).applies(act)  # excludes cannot clear what is unknown
    assert not rule("mcp", ["**"]).applies(act)


@pytest.mark.parametrize("command", OUTSIDE)
def test_writes_elsewhere_and_read_only_commands_stay_out(root, command):
    assert not rule("file_write", [BILLING]).applies(bash(command, root)), written(command, str(root))


def test_excluded_written_path_is_out_and_any_rules_see_known_writes(root):
    assert not rule("file_write", [BILLING], ["**/*.md"]).applies(bash("echo x > src/core/billing/a.md", root))
    assert rule("file_write", [BILLING], ["**/*.md"]).applies(bash("echo x > src/core/billing/a.md > "
                                                                    "src/core/billing/a.py", root))
    assert rule("any", [BILLING]).applies(bash("cp /tmp/x src/core/billing/x", root))
    assert not rule("any", [BILLING]).applies(bash("python3 tool.py", root))  # `any` matches known writes only


def test_the_command_cwd_is_the_base(root):
    assert rule("file_write", [BILLING]).applies(bash("echo x > pay.py", root, str(root / "src/core/billing")))
    assert not rule("file_write", [BILLING]).applies(bash("echo x > pay.py", root, str(root / "docs")))


def test_written_paths_land_through_symlinks(root):
    assert written("echo x > b/pay.py", str(root)).paths == {"src/core/billing/pay.py"}
    assert written("echo x > link.py", str(root)).paths == {"src/core/billing/new.py"}
    assert written("echo x > /etc/x", str(root)).paths == {"/etc/x"}


def test_judge_reads_the_written_paths(root):
    values = actions.template_vars(bash("echo x > b/pay.py", root), 100)
    assert values["file_path"] == "src/core/billing/pay.py" and values["content_snippet"] == "echo x > b/pay.py"
    assert actions.template_vars(bash("make", root), 100)["file_path"].startswith("(unknown: `make`")


@pytest.mark.parametrize("command,cheap", [
    ("ls -la && git status", True), ("cat a | grep b; wc -l c", True), ("git log -3", True),
    ("ls > x", False), ("sudo ls", False), ("ls | xargs rm", False), ("cd d && ls", False), ("rm x", False),
    ("git checkout x", False), ("echo 'x' ", False), ("find . -delete", False), ("sed -i s/a/b/ x", False),
])
def test_cheap_check_never_clears_a_writer(command, cheap):
    assert writes_nothing(command) is cheap


def test_a_bash_rules_command_patterns_are_never_read_as_paths_it_writes(root):
    """`git push` writes .git; a bash rule scoped `git push *-f*[ :]release/*` was taken for a path rule over
    `release/*`, with .git "a directory above" it, so every force-push of a feature branch reached the judge
    (issue 42: the shipped no-force-push blocked `git push --force origin feature/my-branch`)."""
    force = rule("bash", ["git push *{--force,-f}*[ :]release/*", "git push *{--force,-f}*[ :]{main,master}"])
    for command in ("git push --force origin feature/my-branch", "git push -f origin fix/a", "git push origin main"):
        act = bash(command, root)
        assert act.writes().known and act.writes().paths  # it does write (.git): the patterns must not see that
        assert not force.applies(act), command
    assert force.applies(bash("git push --force origin release/2.1", root))
    assert force.applies(bash("git push -f origin main", root))
    assert rule("any", ["release/**"]).applies(bash("touch release/notes", root))  # `any` still sees writes


HARD_LINKS = ["ln src/core/billing/pay.py notes.txt", "ln -f src/core/billing/pay.py docs/x",
              "link src/core/billing/pay.py notes.txt", "cp -l src/core/billing/pay.py notes.txt",
              "cp --link src/core/billing/pay.py notes.txt", "cp -al src/core billing-copy",
              "ln -t docs src/core/billing/pay.py", "ln b/pay.py notes.txt", "sudo ln src/core/billing/pay.py n"]


@pytest.mark.parametrize("command", HARD_LINKS)
def test_making_a_hard_link_writes_its_source(root, command):
    """A hard link is a second name that writes through: `ln billing/pay.py notes.txt`, then any write to
    notes.txt, changed pay.py while every rule over billing saw notes.txt. Making the link is a write of the
    source too."""
    (root / "src/core/billing/pay.py").write_text("PAY = 1\n")
    act = bash(command, root)
    assert act.writes().known and rule("file_write", [BILLING]).applies(act), act.writes()
    assert rule("any", [BILLING]).applies(act)


def test_a_symbolic_link_does_not_write_its_target(root):
    assert not rule("file_write", [BILLING]).applies(bash("ln -s src/core/billing/pay.py notes.txt", root))
    assert not rule("file_write", [BILLING]).applies(bash("ln -sf src/core/billing/pay.py notes.txt", root))


def test_a_write_through_a_hard_link_is_a_write_of_every_name(root):
    """The link already there (the operator's tree, or an earlier command): a bash write or a file tool's write to
    the other name is in the scope of the rules over the file, and the judge reads both names."""
    pay = root / "src/core/billing/pay.py"
    pay.write_text("PAY = 1\n")
    os.link(pay, root / "notes.txt")
    for command in ("echo x > notes.txt", "sed -i s/1/0/ notes.txt", "cd docs && echo x >> ../notes.txt"):
        act = bash(command, root)
        assert act.writes().known and "src/core/billing/pay.py" in act.writes().paths, command
        assert rule("file_write", [BILLING]).applies(act), command
    write = actions.file_write("Write", {"file_path": str(root / "notes.txt"), "content": "PAY = 0\n"})
    write.locate(str(root))
    assert write.target == "notes.txt" and write.aliases == ("src/core/billing/pay.py",)
    assert rule("file_write", [BILLING]).applies(write)
    shown = actions.template_vars(write, 100)["file_path"]
    assert shown.startswith("notes.txt (a hard link: the same file as src/core/billing/pay.py")
    assert not rule("file_write", [BILLING]).applies(bash("echo x > docs/other.md", root))


def test_a_hard_link_to_a_name_outside_the_root_is_in_every_rules_scope(root, tmp_path_factory):
    """A name Sentinel cannot find (outside the root it walks): the write may land anywhere."""
    outside = tmp_path_factory.mktemp("elsewhere") / "secret.txt"
    outside.write_text("s\n")
    os.link(outside, root / "innocent.txt")
    act = bash("echo x > innocent.txt", root)
    assert not act.writes().known and "hard link" in act.writes().why, act.writes()
    assert rule("file_write", ["docs/**"]).applies(act)
    write = actions.file_write("Write", {"file_path": "innocent.txt", "content": "x"}).locate(str(root))
    assert write.unbounded and rule("file_write", ["docs/**"]).applies(write)
    assert "were not all found" in actions.template_vars(write, 100)["file_path"]


def test_a_path_through_proc_or_dev_fd_lands_anywhere(root):
    """`/proc/self/cwd/...` names the shell's directory when the shell opens it, but the decider's when it is
    resolved here (the worker starts in `/` in system mode): a write through it, or through a link to it, was
    taken for a write outside the root and passed every rule over the workspace's paths."""
    os.symlink("/proc/self/cwd", root / "here")
    os.symlink("/dev/fd", root / "fds")
    for command in ("echo x > /proc/self/cwd/src/core/billing/pay.py", "echo x > here/src/core/billing/pay.py",
                    "cp /tmp/x /proc/$$/cwd/src/core/billing/pay.py", "echo x > /dev/fd/3", "echo x > fds/3",
                    "echo x > ../../../../../../proc/self/root" + str(root) + "/src/core/billing/pay.py",
                    "sed -i s/a/b/ /proc/thread-self/cwd/x"):
        act = bash(command, root)
        assert rule("file_write", [BILLING]).applies(act), (command, act.writes())
    write = actions.file_write("Write", {"file_path": "/proc/self/cwd/src/core/billing/pay.py", "content": "x"})
    assert write.locate(str(root)).unbounded and rule("file_write", [BILLING]).applies(write)
    for command in ("echo x > /dev/null", "echo x >&2", "echo x > /dev/stderr", "ls > /dev/stdout 2>/dev/null"):
        assert not rule("file_write", [BILLING]).applies(bash(command, root)), command


def test_a_directory_named_proc_in_the_repository_is_an_ordinary_path(root, monkeypatch):
    (root / "proc").mkdir()
    monkeypatch.chdir(root)
    for base in (str(root), "."):
        act = actions.bash("Bash", {"command": "echo x > proc/notes.md"}).locate(base)
        assert act.writes().known and act.writes().paths == {"proc/notes.md"}, (base, act.writes())
        write = actions.file_write("Write", {"file_path": "proc/notes.md", "content": "x"}).locate(base)
        assert not write.unbounded and not rule("file_write", [BILLING]).applies(write)
