"""The action policy: per-tool outcomes, command rules, strictest wins, examples checked at load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sentinel.errors import ConfigError
from sentinel.policy import action_policy as action
from sentinel.policy.decide import CallContext, decide


def ctx(tool, **args):
    return CallContext(run_id="r", agent="a", tool=tool, arguments=args, workspace=Path("/ws"))


def layers(policy=None, granted=None):
    return [action.GrantsLayer(), action.PolicyLayer(policy or action.load())]


@pytest.mark.parametrize("command,outcome", [
    ("ls -la", "auto"), ("cat README.md", "auto"), ("grep -n x y", "auto"),
    ("ls > out.txt", "needs_approval"), ("cat $(echo /etc/passwd)", "needs_approval"), ("ls; rm -rf x", "needs_approval"),
    ("rm -rf build", "needs_approval"), ("python3 x.py", "needs_approval"),
    ("sudo ls", "deny"), ("ls && sudo rm -rf /", "deny"), ("su root", "deny"),
])
def test_default_bash_rules(command, outcome):
    assert decide(ctx("bash", command=command), layers()).outcome == outcome


def test_reads_and_workspace_writes_are_auto_writes_outside_are_denied():
    assert decide(ctx("read_file", path="a.txt"), layers()).outcome == "auto"
    assert decide(ctx("write_file", path="sub/a.txt", content=""), layers()).outcome == "auto"
    d = decide(ctx("write_file", path="../etc/x", content=""), layers())
    assert d.outcome == "deny" and "outside the workspace" in d.reason
    assert decide(ctx("edit_file", path="/etc/passwd", old_string="a", new_string="b"), layers()).outcome == "deny"


def test_ungranted_tool_is_denied():
    c = CallContext(run_id="r", agent="a", tool="bash", arguments={"command": "ls"}, granted=frozenset({"read_file"}))
    d = decide(c, layers())
    assert d.outcome == "deny" and "not granted" in d.reason


def test_strictest_matching_rule_wins():
    policy = action.load(("cfg", {"bash": {"rules": [
        {"id": "git", "decision": "auto", "prefix": ["git"], "match": ["git status"], "not_match": ["gitk"]},
        {"id": "no-force", "decision": "deny", "pattern": r"--force", "match": ["git push --force"],
         "not_match": ["git push"]}]}}))
    assert decide(ctx("bash", command="git status"), layers(policy)).outcome == "auto"
    d = decide(ctx("bash", command="git push --force"), layers(policy))
    assert d.outcome == "deny" and d.layers[-1].rule_id == "no-force"


def test_overrides_from_config_replace_tool_outcomes():
    policy = action.load(("config.yaml policy", {"tools": {"bash": "deny", "write_file": "needs_approval"}}))
    assert policy.tools["write_file"] == "needs_approval" and policy.tools["read_file"] == "auto"


@pytest.mark.parametrize("short", ["auto", "deny"])
def test_tools_bash_is_the_short_form_of_the_bash_default(short):
    """`policy: tools: {bash: auto}` decides a command no rule matches as auto, as `bash: {default: auto}` does;
    the command rules still come first, and a `bash.default` in the same override wins."""
    policy = action.load(("config.yaml policy", {"tools": {"bash": short}}))
    assert policy.bash.default == short
    assert decide(ctx("bash", command="make build"), layers(policy)).outcome == short
    assert decide(ctx("bash", command="sudo make install"), layers(policy)).outcome == "deny"  # a rule still decides
    both = action.load(("config.yaml policy", {"tools": {"bash": short}, "bash": {"default": "needs_approval"}}))
    assert both.bash.default == "needs_approval"


def test_rule_contradicting_its_examples_fails_to_load():
    bad = {"bash": {"rules": [{"id": "ls", "decision": "auto", "prefix": ["ls"], "match": ["ls"],
                               "not_match": ["ls -la"]}]}}
    with pytest.raises(ConfigError, match=r"bash.rules\[\d+\] \(ls\): example 'ls -la' in `not_match` matches"):
        action.load(("config.yaml policy", bad))


def test_a_mapping_under_tools_bash_is_one_clear_error():
    """`tools: {bash: {default: auto}}` mixes the short form with bash's own settings: one error naming the field
    as the operator wrote it, not two (the short form is only ever a single outcome)."""
    with pytest.raises(ConfigError) as caught:
        action.load(("config.yaml policy", {"tools": {"bash": {"default": "auto"}}}))
    message = str(caught.value)
    assert message.startswith("config.yaml policy: tools.bash: Input should be 'auto'"), message
    assert "more)" not in message and "policy: policy" not in message


def test_invalid_policy_names_the_field(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"tools": {"bash": "sometimes"}}))
    with pytest.raises(ConfigError, match=r"p.yaml: policy: tools.bash"):
        action.load(base=path)


def test_shipped_policy_examples_all_hold():
    policy = action.load()
    assert {r.id for r in policy.bash.rules} >= {"read-only-commands", "no-privilege-escalation"}


# -- command rules match a real parse, not the line's first words (issue 40) ---------------------------------------

RIDING = action.ActionPolicy.model_validate({"bash": {"rules": [
    {"id": "ls-ok", "decision": "auto", "prefix": ["ls"]},
    {"id": "git-read", "decision": "auto", "pattern": r"^git (status|log)\b"},
    {"id": "no-rm", "decision": "deny", "prefix": ["rm"]}]}})


@pytest.mark.parametrize("command", ["ls && curl -s x | sh", "ls; rm -rf x", "ls $(curl -s x)", "ls & python3 -c 1",
                                     "ls | sh", "git status; curl x", "git status && $cmd", "ls\ncurl x"])
def test_an_auto_rule_covers_every_command_or_none(command):
    assert RIDING.decide_bash(command).outcome != "auto"


@pytest.mark.parametrize("command", ["ls -la", "ls 'my dir'", "git status", "ls && git status", "git log | ls"])
def test_auto_rules_still_allow_what_they_cover(command):
    assert RIDING.decide_bash(command).outcome == "auto"


@pytest.mark.parametrize("command", ["bash -c 'rm -rf x'", "ls && (rm -rf x)", "env A=1 rm -rf x", "/bin/rm x",
                                     "sudo -u me rm x", "echo x | xargs rm"])
def test_deny_rules_see_commands_behind_wrappers_and_groups(command):
    assert RIDING.decide_bash(command).outcome == "deny"


def test_the_default_privilege_rule_sees_a_shell_string():
    assert decide(ctx("bash", command="bash -c 'sudo id'"), layers()).outcome == "deny"


# -- the examples' check is stamped, never a decision (issue 45: bashlex is not a run's start cost) -------------------

GOOD = {"bash": {"rules": [{"id": "ls", "decision": "auto", "prefix": ["ls"], "match": ["ls -la"],
                            "not_match": ["ls; rm x"]}]}}


def _checks(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = action.check_examples
    monkeypatch.setattr(action, "check_examples", lambda policy, source: (seen.append(source), real(policy, source)))
    return seen


def test_a_policy_whose_examples_held_is_not_parsed_again_until_it_changes(monkeypatch, sentinel_home):
    (sentinel_home / "state").mkdir(exist_ok=True)
    seen = _checks(monkeypatch)
    action.load(("config.yaml policy", GOOD))
    action.load(("config.yaml policy", GOOD))
    assert seen == ["config.yaml policy"]  # the second load found the stamp
    edited = {"bash": {"rules": [{**GOOD["bash"]["rules"][0], "match": ["ls -l"]}]}}
    action.load(("config.yaml policy", edited))
    assert len(seen) == 2
    policy = action.load(("config.yaml policy", GOOD))  # the stamp holds one policy: the first is checked again
    assert len(seen) == 3
    assert policy.decide_bash("ls; rm -rf /").outcome != "auto"  # what a rule decides is never stamped


def test_a_contradicting_example_fails_every_load_and_is_never_stamped(sentinel_home):
    (sentinel_home / "state").mkdir(exist_ok=True)
    bad = {"bash": {"rules": [{"id": "ls", "decision": "auto", "prefix": ["ls"], "not_match": ["ls -la"]}]}}
    for _ in range(2):
        with pytest.raises(ConfigError, match="in `not_match` matches"):
            action.load(("config.yaml policy", bad))


def test_no_stamp_in_a_state_directory_of_another_user(monkeypatch, sentinel_home):
    import os

    state = sentinel_home / "state"
    state.mkdir(exist_ok=True)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(state).st_uid + 1)
    seen = _checks(monkeypatch)
    action.load(("config.yaml policy", GOOD))
    action.load(("config.yaml policy", GOOD))
    assert len(seen) == 2 and not (state / "policy-examples.valid").exists()


# -- the wrappers a deny rule sees through (issue 40's class: a command run by another command) --------------------

WRAPPED = ["taskset -c 0 rm -rf x", "taskset 0x1 rm x", "chrt -f 10 rm x", "chrt -T 5 -P 9 1 rm x",
           "numactl -N 0 rm x", "numactl --interleave=all rm x", "prlimit --nofile=64 rm x", "cpulimit -l 50 -- rm x",
           "cgexec -g cpu:grp rm x", "unbuffer rm x", "setpriv --reuid 1000 --clear-groups rm x", "unshare -r rm x",
           "unshare --map-user 0 -R / rm x", "nsenter -t 1 -m rm x", "runuser -u bob -- rm x",
           "runuser -l bob -c 'rm x'", "pkexec --user bob rm x", "run0 -u bob rm x", "systemd-run --user -p A=b rm x",
           "chpst -u bob rm x", "fakeroot -- rm x", "proot -r / -w /tmp rm x", "firejail --net=none rm x",
           "bwrap --bind / / --dev /dev rm x", "bwrap --ro-bind /usr /usr --setenv A b rm x", "dbus-run-session -- rm x",
           "ssh-agent -t 60 rm x", "torsocks rm x", "proxychains4 -f p.conf rm x", "parallel -j 2 rm ::: x",
           "ltrace -o log rm x", "valgrind --tool=none rm x", "catchsegv rm x", "sg grp -c 'rm x'", "sg grp rm x",
           "script -c 'rm x' /dev/null", "script -qc 'rm x' /dev/null", "script --command='rm x'", "at now <<< 'rm x'",
           "nice -n 5 taskset -c 0 env A=1 rm x"]


@pytest.mark.parametrize("command", WRAPPED)
def test_deny_rules_see_commands_run_by_the_usual_wrappers(command):
    assert RIDING.decide_bash(command).outcome == "deny"


@pytest.mark.parametrize("command", ["taskset -c 0 rm -rf x", "setpriv --reuid 1000 rm x", "sg grp 'rm x'"])
def test_a_deny_rule_holds_behind_a_wrapper_when_everything_else_is_auto(command):
    everything = action.ActionPolicy.model_validate({"bash": {"default": "auto", "rules": [
        {"id": "no-rm", "decision": "deny", "prefix": ["rm"]}]}})
    assert everything.decide_bash(command).outcome == "deny"
    assert everything.decide_bash(command.replace("rm", "ls")).outcome == "auto"


@pytest.mark.parametrize("command", ["at now", "batch", "script", "sg grp", "runuser -l bob", "at now <<< \"$x\"",
                                     "script -c \"$x\""])
def test_a_wrapper_running_its_input_or_an_expansion_is_never_auto(command):
    everything = action.ActionPolicy.model_validate({"bash": {"rules": [
        {"id": "all", "decision": "auto", "prefix": ["at", "batch", "script", "sg", "runuser"]}]}})
    assert everything.decide_bash(command).outcome != "auto"


# -- a line the parse cannot read never runs past a deny rule by an auto default -------------------------------------

UNSURE = action.ActionPolicy.model_validate({"bash": {"default": "auto", "rules": [
    {"id": "no-rm", "decision": "deny", "prefix": ["rm"]},
    {"id": "no-sudo", "decision": "deny", "pattern": r"(^|[;&|(`]|\$\()\s*(sudo|su|doas|pkexec)(\s|$)"}]}})


@pytest.mark.parametrize("command", ["eval 'rm -rf x'", "[[ -f x ]] && rm x", "case a in a) rm x;; esac",
                                     "time rm x", "eval 'sudo id'", "x=$((1)); eval \"r\"'m' x"])
def test_an_unsure_line_that_spells_a_deny_rule_asks_a_person_under_an_auto_default(command):
    decided = UNSURE.decide_bash(command)
    assert decided.outcome == "needs_approval" and "could apply" in decided.reason, decided


@pytest.mark.parametrize("command", ["echo $((1+2))", "[[ -f x ]] && cat x", "eval 'ls'", "source ./rm-helpers.sh",
                                     "ls && git status"])
def test_an_unsure_line_that_never_spells_a_deny_rule_keeps_the_auto_default(command):
    assert UNSURE.decide_bash(command).outcome == "auto"
