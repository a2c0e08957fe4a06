"""The engine's one event stream: typed, ordered, keyed by call id, the same for every renderer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from sentinel.engine import events as ev
from sentinel.engine.records import from_dict


def test_every_kind_survives_its_wire_form():
    for kind in ev.KINDS.values():
        event = kind(run_id="r-1", seq=7, t=1.5)
        back = ev.parse(json.loads(json.dumps(event.to_dict())))
        assert back == event and back.type == kind.type
    assert ev.parse({"type": "from-a-newer-version", "run_id": "r", "seq": 1}) is None
    assert ev.parse({"type": "done", "seq": "not a number but still a dict"}) is None  # run_id missing


def test_a_decision_with_a_skipped_rule_becomes_a_warning():
    translator = ev.Translator("r-1")
    out = translator.feed(from_dict({"type": "decision", "seq": 3, "call_id": "c1", "tool": "write_file",
                           "arguments": {"path": "a"}, "outcome": "auto", "reason": "ok",
                           "layers": [{"layer": "gate", "warnings": ["rule no-writes skipped: judge unreachable"]}]}))
    assert [type(e) for e in out] == [ev.Decision, ev.Warned]
    assert out[1].message == "write_file: rule no-writes skipped: judge unreachable" and out[1].seq == 3


def test_local_run_emits_ordered_events_keyed_by_call_id(scripted_server, configure, sentinel_home):
    from sentinel.local.engine import LocalEngine

    script = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}},
                              {"name": "read_file", "arguments": {"path": "a.txt"}}]},
              "all written"]
    configure(server=scripted_server(script))
    seen: list[ev.Event] = []
    engine = LocalEngine()
    try:
        outcome = engine.start("write then read", on_event=seen.append)
        replay = list(engine.events(outcome.id))
    finally:
        engine.close()
    assert outcome.status == "done_unverified" and outcome.output == "all written"
    kinds = [e.type for e in seen]
    assert kinds[0] == "run_started" and kinds[-1] == "done"
    assert kinds.count("model_call_started") == 2 and kinds.count("model_call_ended") == 2
    begins = [e for e in seen if isinstance(e, ev.ToolCallBegin)]
    ends = [e for e in seen if isinstance(e, ev.ToolCallEnd)]
    assert [b.call_id for b in begins] == [e.call_id for e in ends] and len(begins) == 2
    assert begins[0].arguments == {"path": "a.txt", "content": "hi"} and ends[1].result == "hi"
    durable = [e for e in seen if e.durable]
    assert [e.seq for e in durable] == sorted({e.seq for e in durable})  # strictly increasing
    assert replay == durable  # what `logs` replays is what the live listener saw
    assert "".join(e.text for e in seen if isinstance(e, ev.TextDelta)) == "all written"


def test_logs_follow_streams_a_run_executing_in_another_process(scripted_server, configure, cli, sentinel_home):
    script = [{"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}], "delay_ms": 1500}, "listed"]
    configure(server=scripted_server(script))
    env = {**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "k"}
    run = subprocess.Popen([sys.executable, "-m", "sentinel", "run", "list it"], env=env,
                           cwd=sentinel_home / "workspace", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while not list((sentinel_home / "runs").glob("r-*/journal.jsonl")) and time.time() < deadline:
            time.sleep(0.05)
        follow = cli("logs", "--follow", "--json", check=0, timeout=30)
    finally:
        run.wait(timeout=30)
    kinds = [json.loads(line)["type"] for line in follow.stdout.splitlines()]
    assert kinds[0] == "run_started" and kinds[-1] == "done" and "tool_call_end" in kinds


def test_run_json_carries_the_workspace_default_and_a_terminal_gets_progress(scripted_server, configure, cli,
                                                                             sentinel_home, tmp_path):
    configure(server=scripted_server([{"tool_calls": [{"name": "write_file",
                                                        "arguments": {"path": "out.txt", "content": "x"}}]}, "ok"]))
    here = tmp_path / "project"
    here.mkdir()
    out = cli.json("run", "write it", "--json", check=4, cwd=here)
    assert out["status"] == "done_unverified" and (here / "out.txt").read_text() == "x"  # local mode works where you are
    shown = cli.json("show", out["id"], "--json")
    assert shown["workspace"] == str(here)


def test_progress_renders_each_event_as_one_line():
    from rich.text import Text

    from sentinel.ui.render import Progress, describe

    started = ev.RunStarted(run_id="r-1", seq=1, agent="ana", model="fake/m", workspace="/w")
    assert "workspace /w" in Text.from_markup(describe(started)).plain
    end = ev.ToolCallEnd(run_id="r-1", seq=5, call_id="c", tool="bash", result="[red]not markup[/red]\nline two")
    assert Text.from_markup(describe(end)).plain.strip() == "↳ [red]not markup[/red]\\nline two"  # one line, shown
    progress = Progress(enabled=False)
    progress(ev.Warned(run_id="r-1", seq=2, message="gate: rule x skipped"))
    assert progress.warnings == ["gate: rule x skipped"]
