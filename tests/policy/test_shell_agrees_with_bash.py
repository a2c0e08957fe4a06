"""The parse agrees with bash: each line is decided first (sentinel.policy.writes, the rule gate's scope), then run
by a real bash in a temporary directory, and every file bash changed must be one the decision named, unless the
decision said it cannot know. Three attack classes, each with its neighbours: here-document delimiters bash
unquotes and bashlex did not, brace expansions with quoted or nested elements, a line that moves or copies an
existing symlink and writes through it."""

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

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

PWNED = "echo pwned > billing/a.txt"


def _state(root: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every entry under root: (mode, mtime, size, link target); a directory by its mode only (a new child
    changes its mtime, not what it is)."""
    found = {}
    for path in root.rglob("*"):
        st = path.lstat()
        plain_dir = path.is_dir() and not path.is_symlink()
        found[str(path.relative_to(root))] = (st.st_mode, 0 if plain_dir else st.st_mtime_ns,
                                              0 if plain_dir else st.st_size,
                                              os.readlink(path) if path.is_symlink() else "")
    return found


def run(root: Path, line: str) -> set[str]:
    """What bash changes under root when it runs the line there."""
    before = _state(root)
    subprocess.run(["bash", "-c", line], cwd=root, capture_output=True, timeout=20,
                   env={"PATH": os.environ["PATH"], "HOME": str(root), "LC_ALL": "C"})
    after = _state(root)
    return {p for p in set(before) | set(after) if before.get(p) != after.get(p) and not p.startswith(".git")}


def agrees(root: Path, line: str) -> tuple[object, set[str]]:
    """Decides the line as the gate does before it runs, runs it, and checks bash changed nothing else."""
    writes = written(line, str(root))
    changed = run(root, line)
    if writes.known:
        missed = {c for c in changed if not any(c == p or c.startswith(p.rstrip("/") + "/") for p in writes.paths)}
        assert not missed, f"bash wrote {sorted(missed)}; the decision named only {sorted(writes.paths)}"
    return writes, changed


@pytest.fixture
def root(tmp_path):
    made = tmp_path / "w"
    (made / "billing").mkdir(parents=True)
    (made / "a.txt").write_text("a\n")
    return made


def rule(trigger, scope):
    return Rule(validate({"trigger": trigger, "scope": [scope], "prompt": "p"}, Path("r.yaml")))


def bash(command, root):
    return actions.bash("Bash", {"command": command}).locate(str(root))


# -- 1. here-documents end where bash ends them ---------------------------------------------------------------

HEREDOC_BYPASSES = [  # bash ends each body at the unquoted delimiter: the line after it runs
    f"cat <<'true' >/dev/null\ntrue\n{PWNED}\n'true'\n",
    f'cat <<"E"OF >/dev/null\nEOF\n{PWNED}\n"E"OF\n',
    f"cat <<\\EOF >/dev/null\nEOF\n{PWNED}\n\\EOF\n",
    f"cat <<E\\OF >/dev/null\nEOF\n{PWNED}\nE\\OF\n",
    f"cat <<E''OF >/dev/null\nEOF\n{PWNED}\nE''OF\n",
    f"cat <<-'EOF' >/dev/null\n\tEOF\n{PWNED}\n'EOF'\n",
    f"cat << 'EOF' >/dev/null\nEOF\n{PWNED}\n'EOF'\n",
    f"cat <<'A' <<\"B\" >/dev/null\nA\nB\n{PWNED}\n'B'\n",
]


@pytest.mark.parametrize("line", HEREDOC_BYPASSES)
def test_a_quoted_delimiter_ends_the_body_where_bash_ends_it(root, line):
    writes, changed = agrees(root, line)
    assert "billing/a.txt" in changed  # the effect is real
    assert "billing/a.txt" in writes.paths and shell.parse(line).sure
    assert rule("file_write", "billing/**").applies(bash(line, root))


def test_the_everyday_quoted_here_document_is_a_sure_write_of_its_file(root):
    line = "cat <<'EOF' > f.py\nprint('$(not run)', `nor this`)\nEOF\n"
    writes, changed = agrees(root, line)
    assert shell.parse(line).sure and writes.known
    assert writes.paths == {"f.py"} and changed == {"f.py"}
    assert "$(not run)" in (root / "f.py").read_text()
    own = Rule(own_rule())
    assert not own.applies(bash(line, root))
    assert own.applies(bash("cat <<'EOF' > .claude/settings.local.json\n{}\nEOF\n", root))


HEREDOC_NEIGHBOURS = [  # each decided as bash runs it (or unsure): never fewer writes than bash makes
    "cat <<EOF > out.txt\nplain $HOME text\nEOF\n",
    "cat <<-\"EOF\" > out.txt\n\tbody\n\tEOF\necho after > after.txt\n",
    "cat <<'EOF' > out.txt; echo pwned > billing/b.txt\nbody\nEOF\n",
    "cat <<'EOF' && echo x > ok.txt\nEOF\n" + PWNED + "\n",
    "cat <<<'x' > out.txt",
    "echo '<<EOF' > out.txt\nEOF\n",
    "# cat <<'E'\necho x > out.txt\nE\n",
    "cat <<'E' >/dev/null\nE \n" + PWNED + "\nE\n",  # a trailing blank: not the delimiter line
    "x=$(cat <<'E'\na ) b \" c\nE\n); " + PWNED,
    "echo \"$(cat <<'E'\nE) ; echo pwned > billing/c.txt ; (x\nE\n)\" > out.txt; " + PWNED,
    "git init -q . && git commit -q --allow-empty -m \"$(cat <<'EOF'\nFix `it`: $(quoted)\nEOF\n)\" && " + PWNED,
    "bash -c 'cat <<E >/dev/null\nE\n" + PWNED + "\nE\n'",
]


@pytest.mark.parametrize("line", HEREDOC_NEIGHBOURS)
def test_here_document_neighbours_keep_bashs_reading(root, line):
    agrees(root, line)


UNSURE_HEREDOCS = [  # bash may end these elsewhere than a line comparison says: the parse is not sure
    "cat <<EOF >/dev/null\nEO\\\nF\n" + PWNED + "\nEOF\n",  # bash joins an unquoted body's continued line
    "cat <<$'EOF' >/dev/null\nEOF\n" + PWNED + "\n$'EOF'\n",  # bash 5.2 reads $'…' in a delimiter
    "x=$(cat <<'E'\nE )\n" + PWNED + "\nE\n)",  # in $(…) bash also ends the body at `E )`
    "x=$(cat <<'E'\nEE)\n" + PWNED + "\nE\n)",
    "x=$(cat <<'E'\nbody\nE\n" + PWNED + "\n)",  # bashlex reads nothing after a here-document in $(…)
    "{ cat <<E\nE\n" + PWNED + "\nE\n}",  # bashlex puts this body elsewhere (it was a sure miss before)
    "for i in 1; do cat <<E\nE\n" + PWNED + "\nE\ndone",
    "cat <\\\n<EOF >/dev/null\nEOF\n" + PWNED + "\n",
    "cat <<EOF > out.txt\n$(" + PWNED + ")\nEOF\n",  # an unquoted body's substitutions run
    "cat <<EOF >/dev/null\nbody",  # no delimiter line
]


@pytest.mark.parametrize("line", UNSURE_HEREDOCS)
def test_a_here_document_bash_may_end_otherwise_is_unsure(root, line):
    assert not shell.parse(line).sure
    writes, _ = agrees(root, line)
    assert not writes.known
    assert rule("file_write", "billing/**").applies(bash(line, root))


DELIMITERS = ["'EOF'", '"EOF"', '"E"OF', "\\EOF", "E\\OF", "E''OF", "EOF", "E'O'F"]
BODIES = ["EOF\n{w}\n{raw}\n", "{raw}\n{w}\nEOF\n", "x\nEOF\n{w}\n"]
CONTEXTS = ["cat <<{raw} >/dev/null\n{body}", "cat <<-{raw} >/dev/null\n\t{body}",
            "cat <<{raw}; echo x > b.txt\n{body}", "x=$(cat <<{raw}\n{body})",
            "echo \"$(cat <<{raw}\n{body})\" > out.txt"]


@pytest.mark.parametrize("raw", DELIMITERS)
def test_every_delimiter_body_and_place_agrees_with_bash(tmp_path, raw):
    for i, (context, body) in enumerate((c, b) for c in CONTEXTS for b in BODIES):
        root = tmp_path / str(i)
        (root / "billing").mkdir(parents=True)
        agrees(root, context.format(raw=raw, body=body.format(raw=raw, w=PWNED)))


# -- 2. a brace expansion is an expansion, whatever its elements hold -------------------------------------------

@pytest.mark.parametrize("word,dynamic", [
    ('{billing/a.txt,"x y"}', True), ("{.claude/sentinel,x\\ y}", True), ("{billing/a.txt,{x}}", True),
    ('{-c,"user.name=a b"}', True), ('{sudo,sh,-c,"id; echo pwned"}', True), ("{{a,b}}", True),
    ("a{1..3}", True), ("--{force,}", True), ('{a,"b"}', True),
    ("{}", False), ("{x}", False), ("{{x}}", False), ("'{a,b}'", False), ('"{a,b}"', False), ("{a\\,b}", False),
    ('{a","b}', False), ('{a,"b}"', False), ("x}{a,b", False), ("a.b", False)])
def test_a_brace_list_is_dynamic_as_bash_expands_it(word, dynamic):
    assert shell.is_dynamic(word) is dynamic
    printed = subprocess.run(["bash", "-c", f"printf '%s\\n' {word}"], capture_output=True, text=True).stdout
    assert (printed.splitlines() != [shell.unquote(word)]) is dynamic  # bash expands exactly these


@pytest.mark.parametrize("line,target", [
    ('echo pwned | tee {billing/a.txt,"x y"}', "billing/a.txt"),
    ("echo pwned | tee {billing/a.txt,{x}}", "billing/a.txt"),
    ("rm -rf {billing,x\\ y}", "billing"),
    ('cp a.txt {billing/a.txt,"x y"}', "billing/a.txt"),
])
def test_a_write_through_a_brace_list_is_unknown_and_in_scope(root, line, target):
    writes, changed = agrees(root, line)
    assert any(c == target or c.startswith(target + "/") for c in changed) or not (root / target).exists()
    assert not writes.known and not writes.spelled
    assert rule("file_write", "billing/**").applies(bash(line, root))


def test_the_gates_own_files_behind_a_brace_list_are_held(root):
    own = Rule(own_rule())
    for line in ("rm -rf {.claude/sentinel,x\\ y}", 'echo x | tee {.claude/settings.json,"x y"}'):
        assert own.applies(bash(line, root)), line


@pytest.mark.parametrize("line", ['git {-c,"user.name=a b"} push origin main', "git {push,status} origin main",
                                  "git push{,} origin main"])
def test_a_bash_rule_sees_a_command_a_brace_list_may_make(root, line):
    assert rule("bash", "git push*").applies(bash(line, root)), shell.parse(line).commands


def test_a_command_name_from_a_brace_list_is_unknown():
    parsed = shell.parse('{sudo,sh,-c,"id; echo pwned"}')
    assert not parsed.sure and "command name" in parsed.why
    assert parsed.commands[0].open_at == 0 and parsed.commands[0].known == ""


def test_when_and_unless_never_exempt_a_brace_list(root):
    r = Rule(validate({"trigger": "bash", "scope": ["git*"], "when": ["push"], "unless": ["status"], "prompt": "p"},
                      Path("r.yaml")))
    assert r.applies(bash('git {status,"push x"}', root))
    assert not r.applies(bash("git status", root))


@pytest.mark.parametrize("line", ["find . -name a.txt -exec cat {} \\;", "echo {x} {}", "grep -c '{print $1,$2}' a.txt",
                                  "echo '{a,b}' > out.txt"])
def test_braces_bash_leaves_alone_stay_literal(root, line):
    parsed = shell.parse(line)
    assert parsed.sure and all(c.open_at is None for c in parsed.commands if c.words[0] != "cat"), parsed.commands
    writes, _ = agrees(root, line)
    assert writes.known


# -- 3. a symlink moved or copied in the line counts as one the line makes ---------------------------------------

LINK = "mkdir d && ln -s billing d/t"  # an earlier call: dangling in d/, it leads to billing/ once moved up
CARRIERS = ["mv d/t t && echo pwned > t/a.txt", "cp -P d/t t && echo pwned > t/a.txt",
            "cp -a d/t t && echo pwned > t/a.txt", "cp -d d/t t; echo pwned > t/a.txt",
            "cp --no-dereference d/t t && echo pwned > t/a.txt", "mv -t . d/t && echo pwned > t/a.txt",
            "ln d/t t && echo pwned > t/a.txt", "link d/t t && echo pwned > t/a.txt",
            "cp -R d e && echo pwned > e/t/a.txt", "cp -r d/ e && echo pwned > e/t/a.txt",
            "mv d e && echo pwned > e/t/a.txt", "git mv d/t t && echo pwned > t/a.txt"]


@pytest.mark.parametrize("line", CARRIERS)
def test_moving_or_copying_a_symlink_then_writing_is_unknown(root, line):
    subprocess.run(["bash", "-c", f"{LINK} && mkdir e0 && git init -q . && git add -A"], cwd=root, check=True,
                   capture_output=True)
    if line.startswith(("cp -R d e", "cp -r d/ e", "mv d e")):  # a relative link inside a directory: one level down
        (root / "d" / "t").unlink()
        (root / "d" / "t").symlink_to("../billing")
    writes, changed = agrees(root, line)
    assert "billing/a.txt" in changed  # bash writes through the carried link
    assert not writes.known and "symbolic link" in writes.why
    assert rule("file_write", "billing/**").applies(bash(line, root))


@pytest.mark.parametrize("line", ["mv a.txt b.txt && echo x > c.txt", "cp a.txt b.txt && echo x > c.txt",
                                  "cp d/t x.txt 2>/dev/null; echo x > c.txt", "cp -L -R d e && echo x > c.txt",
                                  "ln -L d/t x 2>/dev/null; echo x > c.txt", "mv plain moved && echo x > moved/c.txt",
                                  "cp -a plain copied && echo x > copied/sub/c.txt"])
def test_moving_plain_files_or_following_links_stays_sure(root, line):
    subprocess.run(["bash", "-c", f"{LINK} && mkdir -p plain/sub && echo f > plain/sub/f"], cwd=root, check=True)
    writes, _ = agrees(root, line)
    assert writes.known, writes


def test_a_directory_too_large_to_look_through_counts_as_holding_a_link(root, monkeypatch):
    from sentinel.policy import writes as model

    (root / "plain" / "sub").mkdir(parents=True)
    (root / "plain" / "sub" / "f").write_text("f\n")
    assert written("mv plain moved && echo x > c.txt", str(root)).known
    monkeypatch.setattr(model, "MAX_WALK", 1)
    assert "symbolic link" in written("mv plain moved && echo x > c.txt", str(root)).why
