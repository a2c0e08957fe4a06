"""System mode shows the same live progress as local mode: the worker's model-call events cross the supervisor's
socket to the operator's terminal (spinner, seconds, tokens so far, tokens in/out)."""

from __future__ import annotations

import os

import pytest
import yaml
from screen import Terminals
from sx_helpers import serve_model

pytestmark = pytest.mark.root

ANSWER = "Forty-two, from the worker, slowly."


def test_run_through_the_supervisor_shows_the_spinner_and_tokens(system, supervisor, make_agent, scripted_server,
                                                                 tmp_path):
    agent = make_agent()
    serve_model(system.etc, scripted_server([{"content": ANSWER, "delay_ms": 1500}], chunk_delay_s=0.1))
    supervisor()
    terminals = Terminals({**os.environ, **system.env, "TERM": "xterm"}, tmp_path, (40, 160))
    try:
        screen = terminals("run", "think", "--agent", agent)
        assert float(screen.expect(r"model fake/m · step 1 · (\d+\.\d) s").group(1)) < 0.5
        screen.expect(r"model fake/m · step 1 · \d+\.\d s · \d+ tokens?")
        screen.expect(r"● model fake/m \d+ ms → final answer · 10 in / 5 out tokens")
        screen.expect(ANSWER)
        assert screen.wait() == 4  # "think": answered, nothing checked (done_unverified)
    finally:
        terminals.close()


def test_watch_fire_through_the_supervisor_shows_its_hook_session_working(system, supervisor, make_agent,
                                                                          scripted_server, tmp_path):
    agent = make_agent()
    act = {"tool_calls": [{"name": "sentinel_act", "arguments": {"action": "notify", "message": "report is due"}}],
           "delay_ms": 1500}
    serve_model(system.etc, scripted_server([act, "Notified."], chunk_delay_s=0.05))
    (system.etc / "watchers").mkdir(mode=0o755)
    (system.etc / "watchers" / "nightly.yaml").write_text(yaml.safe_dump(
        {"id": "nightly", "eventName": "report.due", "fire": {"agent": agent},
         "strategy": {"type": "schedule", "intervalS": 3600}, "hookResponseTimeoutMs": 20000}))
    supervisor()
    terminals = Terminals({**os.environ, **system.env, "TERM": "xterm"}, tmp_path, (40, 160))
    try:
        screen = terminals("watch", "fire", "nightly")
        screen.expect(r"model fake/m · step 1 · \d+\.\d s")
        screen.expect(r"→ 1 tool call\(s\) · 10 in / 5 out tokens")
        screen.expect(r"f-\w+: notified \(session r-\w+\)")
        assert screen.wait() == 0
    finally:
        terminals.close()
