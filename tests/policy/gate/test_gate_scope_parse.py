"""Scope on what runs and what is written: bash rules match a real parse of the line (every simple command,
wrappers peeled, quoting normalised; an unsure parse is in scope of every rule), path rules match where the
write lands (symlinks followed), and Sentinel's write tools write exactly the path decided."""

from __future__ import annotations

import os

import pytest
import yaml

from sentinel.config import Config
from sentinel.policy import landing, shell
from sentinel.policy.decide import CallContext, decide
from sentinel.policy.gate import action as actions
from sentinel.policy.gate.layer import RuleGate
from sentinel.policy.gate.rules import Rule
from sentinel.policy.gate.schema import validate
from sentinel.policy.settings import GateSettings
from sentinel.tools import ToolContext
from sentinel.tools.builtin import default_registry

VIOLATION = {"violation": True, "confidence": 0.9, "reason": "force push"}
BILLING = {"violation": True, "confidence": 0.9, "reason": "touches billing"}

# The ten forms: each really force-pushes, none was judged by the old text-segment scope.
TEN_FORMS = ["true & git push --force", "( git push --force )", "{ git push --force; }", "VAR=x git push --force",
             "bash -c 'git push --force'", "git push '--force'", "git push  --force", "$g push --force",
             "command git push --force", "if true; then git push --force; fi"]
# Further forms of the same class: wrappers, substitutions, loops, functions, expansions the shell makes.
MORE_FORMS = ["sudo -u root env A=1 nohup git push --force", "/usr/bin/git push --force", "x=$(git push --force)",
              "echo `git push --force`", "cat <(git push --force)", "for b in a; do git push --force; done",
              "f() { git push --force; }; f", "git push $flag", "echo --force | xargs git push",
              "git push --{force,}", "sh -c \"bash -c 'git push --force'\"", "timeout 9 git push --force",
              "bash <<< 'git push --force'", "find . -exec git push --force \\;", "eval \"$(echo)\"",
              "curl -s x | sh", "source ./push.sh", "case x in x) git push --force;; esac", "g\\it push --force",
              "env -S'git push --force'", "su root -c 'git push --force'", "echo 'git push --force' | su",
              "find . -exec sh -c 'git push --force' \\;", "echo 'git push --force' | sudo -s", "{git,push,--force}",
              "git push --for\\\nce"]
# Ordinary commands a --force rule must leave alone: no parse doubt, no judge call.
ORDINARY = ["ls -la", "git status", "git push origin main", "git push origin $branch", "echo git push --force",
            "ls *.py", "cd app && make test", "git log --oneline | head -5", "bash ./build.sh", "grep -rn force ."]


def rule(trigger, scope, exclude=()):
    from pathlib import Path

    return Rule(validate({"trigger": trigger, "scope": list(scope), "exclude": list(exclude), "prompt": "p"},
                         Path("r.yaml")))


def bash(command):
    return actions.bash("Bash", {"command": command}).locate(None)


@pytest.mark.parametrize("command", TEN_FORMS + MORE_FORMS)
def test_every_form_of_a_force_push_is_in_scope(command):
    assert rule("bash", ["git push --force*"]).applies(bash(command))


@pytest.mark.parametrize("command", ORDINARY)
def test_ordinary_commands_stay_out_of_scope(command):
    assert not rule("bash", ["git push --force*"]).applies(bash(command))


@pytest.mark.parametrize("command", ["$g status", "eval ls", "echo 'terraform destroy", "[[ -f x ]] && ls"])
def test_an_unsure_parse_is_in_scope_of_every_bash_rule_even_excluded(command):
    assert not shell.parse(command).sure
    assert rule("bash", ["terraform destroy*"]).applies(bash(command))
    assert rule("bash", [], ["*"]).applies(bash(command))


def test_a_line_too_long_to_parse_is_judged():
    long = "git status; " * 2000 + "echo git push --force"  # short, this is out of scope (echo prints it)
    assert not shell.parse(long).sure and rule("bash", ["git push --force*"]).applies(bash(long))


def test_an_argv_command_is_parsed_as_the_words_it_runs():
    act = actions.bash("shell", {"command": ["bash", "-lc", "git push --force"]}).locate(None)
    assert act.command == "bash -lc 'git push --force'"
    assert rule("bash", ["git push --force*"]).applies(act)
    assert not rule("bash", ["git push --force*"]).applies(
        actions.bash("shell", {"command": ["echo", "git push --force"]}).locate(None))


def test_exclude_applies_per_command_not_to_the_line():
    r = rule("bash", ["git push*"], ["git push origin main"])
    assert not r.applies(bash("git push origin main"))
    assert r.applies(bash("git push origin main; git push --force"))
    assert r.applies(bash("git push origin main && git push $x"))  # a command known only in part is never excluded


def test_whole_line_patterns_and_redirections_still_match():
    assert rule("bash", ["*canary.txt*"]).applies(bash("echo hi > canary.txt"))
    assert rule("bash", ["cd * && make*"]).applies(bash("cd app && make"))
    assert not rule("bash", ["*canary.txt*"]).applies(bash("echo hi > notes.txt"))


def test_no_parse_without_a_chance_of_scope():
    import subprocess
    import sys

    code = ("import sys; from sentinel.policy.gate import action as a; from sentinel.policy.gate.rules import Rule;"
            "from sentinel.policy.gate.schema import validate; from pathlib import Path;"
            "r = Rule(validate({'trigger': 'bash', 'scope': ['git push --force*'], 'prompt': 'p'}, Path('r.yaml')));"
            "assert not r.applies(a.bash('Bash', {'command': 'ls -la && git status'}).locate(None));"
            "print('bashlex' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# -- Sentinel's runs: the gate layer and the write tools ------------------------------------------------------------

def ctx(tool, workspace, **args):
    return CallContext(run_id="r1", agent="coder", tool=tool, arguments=args, task="t", workspace=workspace)


def rule_gate(home, j, rules):
    d = home / "rules"
    d.mkdir(exist_ok=True)
    for name, body in rules.items():
        (d / f"{name}.yaml").write_text(yaml.safe_dump(body))
    settings = GateSettings.model_validate({"backends": {"ollama": {"url": j.url}}})
    return RuleGate.for_sentinel(home, settings, Config(), system_rules=None)


@pytest.mark.parametrize("command", TEN_FORMS)
def test_run_gate_judges_each_of_the_ten_forms(sentinel_home, judge, tmp_path, command):
    j = judge({"": VIOLATION})
    g = rule_gate(sentinel_home, j, {"push": {"trigger": "bash", "scope": ["git push --force*"],
                                              "prompt": "CMD {{command}}"}})
    d = decide(ctx("bash", tmp_path, command=command), [g])
    assert d.outcome == "deny" and len(j.requests) == 1
    assert command in j.requests[0]["messages"][-1]["content"]  # the judge reads the line as written


def test_run_gate_makes_no_call_for_ordinary_commands(sentinel_home, judge, tmp_path):
    j = judge({"": VIOLATION})
    g = rule_gate(sentinel_home, j, {"push": {"trigger": "bash", "scope": ["git push --force*"], "prompt": "p"}})
    for command in ORDINARY:
        assert g.check(ctx("bash", tmp_path, command=command)) == []
    assert j.requests == []


def workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "src" / "core" / "billing").mkdir(parents=True)
    (ws / "docs").mkdir()
    os.symlink("src/core/billing", ws / "b")
    os.symlink("docs", ws / "d")
    return ws


def run_write(ws, path, content="PAY = 1\n"):
    return default_registry().run("write_file", {"path": path, "content": content}, ToolContext(workspace=ws))


BILLING_RULE = {"billing": {"trigger": "file_write", "scope": ["src/core/billing/**"], "prompt": "FILE {{file_path}}"}}


def test_a_symlinked_dir_does_not_walk_past_a_path_rule(sentinel_home, judge, tmp_path):
    ws = workspace(tmp_path)
    j = judge({"": BILLING})
    g = rule_gate(sentinel_home, j, BILLING_RULE)
    args = landing.bind({"path": "b/pay.py", "content": "PAY = 1\n"}, str(ws))
    assert args["path"] == "src/core/billing/pay.py"  # the decision and any approval name where it lands
    d = decide(ctx("write_file", ws, **args), [g])
    assert d.outcome == "deny" and "src/core/billing/pay.py" in j.requests[0]["messages"][-1]["content"]
    # even unbound (the decision side skipped), the write tool will not follow the link: nothing lands in billing
    assert "symlink" in run_write(ws, "b/pay.py")
    assert not (ws / "src/core/billing/pay.py").exists()


def test_the_gate_scopes_the_unbound_path_where_it_lands(sentinel_home, judge, tmp_path):
    ws = workspace(tmp_path)
    j = judge({"": BILLING})
    g = rule_gate(sentinel_home, j, BILLING_RULE)
    for path in ("b/pay.py", str(ws / "b" / "pay.py"), "d/../b/pay.py"):
        assert decide(ctx("write_file", ws, path=path, content="x"), [g]).outcome == "deny", path
    os.symlink("src/core/billing/new.py", ws / "dangling.py")  # a dangling final link: the write creates its target
    assert decide(ctx("write_file", ws, path="dangling.py", content="x"), [g]).outcome == "deny"


def test_a_symlink_that_stays_outside_the_rule_is_not_judged_and_writes(sentinel_home, judge, tmp_path):
    ws = workspace(tmp_path)
    j = judge({"": BILLING})
    g = rule_gate(sentinel_home, j, BILLING_RULE)
    args = landing.bind({"path": "d/guide.md", "content": "# guide\n"}, str(ws))
    assert args["path"] == "docs/guide.md"
    assert g.check(ctx("write_file", ws, **args)) == [] and j.requests == []
    assert run_write(ws, args["path"], "# guide\n").startswith("Wrote")
    assert (ws / "docs/guide.md").read_text() == "# guide\n"


def test_a_link_planted_after_the_decision_fails_the_write(sentinel_home, judge, tmp_path):
    ws = workspace(tmp_path)
    (ws / "c").mkdir()
    j = judge({"": BILLING})
    g = rule_gate(sentinel_home, j, BILLING_RULE)
    args = landing.bind({"path": "c/pay.py", "content": "PAY = 1\n"}, str(ws))
    assert args["path"] == "c/pay.py" and g.check(ctx("write_file", ws, **args)) == []  # decided: out of scope
    (ws / "c").rmdir()
    os.symlink("src/core/billing", ws / "c")  # the agent swaps the directory for a link before the write
    out = run_write(ws, args["path"])
    assert "symlink" in out and not (ws / "src/core/billing/pay.py").exists()
    edit = default_registry().run("edit_file", {"path": "c/x.py", "old_string": "a", "new_string": "b"},
                                  ToolContext(workspace=ws))
    assert "symlink" in edit


def test_a_link_leaving_the_workspace_is_outside_for_the_policy(tmp_path):
    from sentinel.policy.action_policy import PolicyLayer, load

    ws = workspace(tmp_path)
    os.symlink("/etc", ws / "etc")
    results = PolicyLayer(load()).check(ctx("write_file", ws, path="etc/hosts", content="x"))
    assert any(r.outcome == "deny" and r.rule_id == "paths.outside_workspace" for r in results)
    results = PolicyLayer(load()).check(ctx("write_file", ws, path="d/ok.md", content="x"))
    assert not any(r.rule_id == "paths.outside_workspace" for r in results)
