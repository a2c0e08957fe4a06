"""System mode shows the same live progress as local mode: the worker's model-call events cross the supervisor's
socket to the operator's terminal (spinner, seconds, tokens so far, tokens in/out)."""

from __future__ import annotations

import os

import pytest
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
        assert screen.wait() == 0
    finally:
        terminals.close()
