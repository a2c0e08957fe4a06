"""What a person at a terminal sees while a model works (`run`, `approve`, `watch fire`): a spinner with the
seconds and the tokens streamed so far, then each call's tokens in/out; none of it with --json or when piped."""

from __future__ import annotations

import json
import os
import re

import pytest
import yaml
from screen import Screen, Terminals

SPINNER = r"model fake/m · step {step} · (\d+\.\d) s"
ANSWER = "The answer is forty-two, and it took a while to say."
SLOW = {"content": ANSWER, "delay_ms": 1500}   # 1.5 s before the first token, then a token every 0.1 s
ASK = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo approved > mark.txt"}}]}


@pytest.fixture
def terminal(sentinel_home):
    """spawn(*args) -> Screen: `sentinel ARGS` on a 40x160 pty, in local mode, from the workspace."""
    workdir = sentinel_home / "workspace"
    workdir.mkdir(exist_ok=True)
    env = {**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "test-key", "SENTINEL_MODE": "local",
           "TERM": "xterm"}
    terminals = Terminals(env, workdir, (40, 160))
    yield terminals
    terminals.close()


@pytest.fixture
def slow_model(scripted_server, configure):
    def start(script):
        server = scripted_server(script, chunk_delay_s=0.1)
        configure(server=server)
        return server

    return start


def _seconds_tick(screen: Screen, step: int) -> None:
    """The spinner is on screen from the call's start and its seconds move while the model says nothing."""
    first = float(screen.expect(SPINNER.format(step=step)).group(1))
    assert first < 1.0, f"the spinner first showed {first} s into the call"  # the first token comes at 1.5 s
    later = float(screen.expect(SPINNER.format(step=step) + r"(?!.*tokens)", timeout=10).group(1))
    while later < 1.0:
        later = float(screen.expect(SPINNER.format(step=step)).group(1))
    assert "final answer" not in screen.text  # all of that before the model's first token


def test_run_shows_a_spinner_with_seconds_and_tokens_then_tokens_in_and_out(slow_model, terminal):
    slow_model([SLOW])
    screen = terminal("run", "think it over")
    _seconds_tick(screen, step=1)
    tokens = int(screen.expect(SPINNER.format(step=1) + r" · (\d+) tokens?").group(2))
    assert tokens >= 1 and ANSWER not in screen.text  # counted while the answer still streams
    screen.expect(r"● model fake/m \d+ ms → final answer · 10 in / 5 out tokens")
    screen.expect(ANSWER)
    assert screen.wait() == 4  # answered, nothing the harness could check: done_unverified


def test_approve_shows_the_spinner_of_the_resumed_run(slow_model, terminal, cli, sentinel_home):
    slow_model([ASK, SLOW])
    approval_id = cli.json("run", "mark it", "--json", check=3)["approval_id"]
    screen = terminal("approve", approval_id)  # names one call: decided without a question (a run id asks y/N)
    _seconds_tick(screen, step=2)
    screen.expect(r"→ final answer · 10 in / 5 out tokens")
    assert screen.wait() == 4  # "mark it" names nothing the harness can check: done_unverified
    assert (sentinel_home / "workspace" / "mark.txt").read_text() == "approved\n"


def test_watch_fire_shows_its_hook_session_working(slow_model, terminal, sentinel_home):
    act = {"tool_calls": [{"name": "sentinel_act", "arguments": {"action": "notify", "message": "report is due"}}],
           "delay_ms": 1500}
    slow_model([act, "Notified."])
    watcher = {"id": "nightly", "eventName": "report.due", "strategy": {"type": "schedule", "intervalS": 3600},
               "fire": {"operatorGoal": "Tell the operator the report is due."}, "hookResponseTimeoutMs": 20000}
    (sentinel_home / "watchers").mkdir()
    (sentinel_home / "watchers" / "nightly.yaml").write_text(yaml.safe_dump(watcher))
    screen = terminal("watch", "fire", "nightly")
    _seconds_tick(screen, step=1)
    screen.expect(r"→ 1 tool call\(s\) · 10 in / 5 out tokens")
    screen.expect(r"f-\w+: \w+ \(session r-\w+\)")
    assert screen.wait() == 0


def test_no_spinner_with_json_or_when_piped(slow_model, terminal, cli):
    slow_model([{**SLOW, "delay_ms": 600}, {**SLOW, "delay_ms": 600}])
    screen = terminal("run", "think it over", "--json")
    assert screen.wait() == 4  # done_unverified
    assert "step 1" not in screen.text and "tokens" not in screen.text
    assert json.loads(screen.text[screen.text.index("{"):])["output"] == ANSWER
    piped = cli("run", "think again", check=4)  # stdout and stderr are pipes
    assert piped.stdout.strip() == ANSWER and not re.search(r"step \d|tokens", piped.stderr)
