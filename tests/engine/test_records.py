"""Journal records: every kind a worker writes parses to its typed record and back to the same JSON object, and
`parse` never raises on a line an agent planted (the supervisor reads agents' journals as root)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sentinel.engine import journal, records
from sentinel.engine.records import parse
from sentinel.engine.state import RunState
from sentinel.supervisor.agentfs import replay

# Lines as journals on disk hold them today (one of every kind the code writes, optional keys in and out).
OLD_LINES = [
    '{"seq":1,"t":1.5,"type":"created","id":"r-1","task":"t","agent":"default","model":"openai/m",'
    '"workspace":"/w","mission":"","parent_id":null,"kind":"task"}',
    '{"seq":2,"t":1.5,"type":"session","pid":42}',
    '{"seq":3,"t":1.5,"type":"message","message":{"role":"system","content":"be brief"}}',
    '{"seq":4,"t":1.5,"type":"message","message":{"role":"user","content":"go"},"skill":"tdd"}',
    '{"seq":5,"t":1.5,"type":"message","message":{"role":"user","content":"resumed"},"note":"resume"}',
    '{"seq":6,"t":2,"type":"model","model":"openai/other"}',
    '{"seq":7,"t":2,"type":"system","content":"new soul"}',
    '{"seq":8,"t":2,"type":"assistant","message":{"role":"assistant","content":"","tool_calls":[{"id":"c1",'
    '"type":"function","function":{"name":"write_file","arguments":"{}"}}]},"model":"m","latency_ms":12.5,'
    '"usage":{"prompt_tokens":3,"completion_tokens":4},"recovered":false}',
    '{"seq":9,"t":2,"type":"assistant","message":{"role":"assistant","content":"x"},"model":"m","latency_ms":1,'
    '"usage":{},"recovered":false,"rejected":"empty_answer"}',
    '{"seq":10,"t":2,"type":"safeguard","kind":"loop","action":"stopped","detail":"d"}',
    '{"seq":11,"t":2,"type":"safeguard","kind":"write_unverified","action":"flagged","detail":"d","note":"n"}',
    '{"seq":12,"t":2,"type":"decision","call_id":"c1","tool":"write_file","arguments":{"path":"a"},'
    '"outcome":"auto","reason":"ok","layers":[{"layer":"gate","outcome":"auto"}]}',
    '{"seq":13,"t":2,"type":"decision","call_id":"c2","tool":"t","arguments":"{bad","outcome":"deny","layers":[],'
    '"reason":"r","code_sha256":"ab","mcp":{"server":"s","tool":"t"}}',
    '{"seq":14,"t":2,"type":"started","call_id":"c1","tool":"write_file"}',
    '{"seq":15,"t":2,"type":"finished","call_id":"c1","result":"Wrote 1 bytes","changed":true}',
    '{"seq":16,"t":2,"type":"finished","call_id":"c3","result":"Interrupted","interrupted":true}',
    '{"seq":17,"t":2,"type":"finished","call_id":"c4","result":"same","duplicate":true}',
    '{"seq":18,"t":2,"type":"paused","call_id":"c5","approval_id":"a-1","tool":"shell","reason":"ask"}',
    '{"seq":19,"t":2,"type":"resolved","call_id":"c5","approval_id":"a-1","approved":true,"reason":"","by":"op"}',
    '{"seq":20,"t":2,"type":"self_edit","agent":"a","call_id":"c6","tool":"edit_soul","file":"SOUL.md",'
    '"chars":5,"version":3,"excerpt":"hello"}',
    '{"seq":21,"t":2,"type":"child_started","child_id":"r-2","call_id":"c7","agent":"helper","task":"sub"}',
    '{"seq":22,"t":2,"type":"child_finished","child_id":"r-2","call_id":"c7","status":"done","output":"ok"}',
    '{"seq":23,"t":2,"type":"compaction","start":1,"end":3,"message":{"role":"user","content":"summary"},'
    '"summarized":2,"turns":1,"chars_before":100,"chars_after":10}',
    '{"seq":24,"t":2,"type":"warning","message":"skill \'x\' not found; not attached"}',
    '{"seq":25,"t":2,"type":"checkpoint","title":"before children"}',
    '{"seq":26,"t":2,"type":"archived","path":"session-1.md"}',
    # a call's checkpoint (undo), the run's contract and its verdict, the paths a call read whole
    '{"seq":27,"t":2,"type":"finished","call_id":"c8","result":"x","known":["a.txt"]}',
    '{"seq":28,"t":2,"type":"workspace_step","call_id":"c8","tool":"bash","changes":{"a.txt":["ab",420],'
    '"b.txt":null},"complete":true,"undo":null}',
    '{"seq":29,"t":2,"type":"contract","terms":{"create":["a.txt"]},"clauses":["create a.txt"]}',
    '{"seq":30,"t":2,"type":"verdict","verified":true,"checked":["create a.txt"],"unmet":[]}',
    '{"seq":31,"t":3,"type":"status","status":"idle","error":"stopped"}',
    '{"seq":32,"t":3,"type":"status","status":"done","output":"answer","error":null}',
]


@pytest.mark.parametrize("line", OLD_LINES)
def test_an_old_journal_line_parses_and_gives_back_its_json(line):
    record = parse(line)
    assert record is not None and record.type == json.loads(line)["type"]
    assert record.to_dict() == json.loads(line)
    assert parse(json.dumps(record.to_dict())) == record


def test_every_kind_the_code_writes_is_covered():
    assert {json.loads(line)["type"] for line in OLD_LINES} == set(records.KINDS)


def test_an_absent_output_keeps_the_answer_a_null_one_clears_it():
    state = RunState()
    for line in OLD_LINES:
        state.apply(parse(line))
    assert state.output == "answer" and state.status == "done"
    state.apply(parse('{"seq":33,"type":"status","status":"idle","error":"stopped"}'))
    assert state.output == "answer" and state.error == "stopped"
    state.apply(parse('{"seq":34,"type":"status","status":"failed","output":null,"error":"x"}'))
    assert state.output is None


HOSTILE = [
    b"", b"   ", b"\xff\xfe", b"not json", b"[]", b"null", b"42", b'"created"', b"{}", b'{"type":null}',
    b'{"type":["created"]}', b'{"type":{"a":1}}', b'{"type":"no-such-kind"}', b'{"type":"__class__"}',
    b'{"type":"created","seq":"1"}', b'{"type":"created","seq":true}', b'{"type":"created","t":"now"}',
    b'{"type":"created","id":7}', b'{"type":"created","parent_id":[]}', b'{"type":"created","absent":["id"]}',
    b'{"type":"message"}', b'{"type":"message","message":"hi"}', b'{"type":"message","message":null}',
    b'{"type":"model"}', b'{"type":"model","model":1}', b'{"type":"assistant","message":[]}',
    b'{"type":"assistant","message":{},"latency_ms":"fast"}', b'{"type":"decision"}',
    b'{"type":"decision","call_id":{"x":1}}', b'{"type":"decision","call_id":"c","layers":"all"}',
    b'{"type":"started","call_id":1}', b'{"type":"finished","call_id":"c"}',
    b'{"type":"finished","call_id":"c","result":1}', b'{"type":"finished","call_id":"c","result":"r","changed":1}',
    b'{"type":"paused","call_id":"c"}', b'{"type":"resolved","call_id":"c","approved":"yes"}',
    b'{"type":"status"}', b'{"type":"status","status":0}', b'{"type":"compaction","start":"0","end":1,"message":{}}',
    b'{"type":"self_edit","chars":1.5}', b'{"type":"session","pid":"1"}', b'{"type":"warning","message":[1]}',
    b'{"type":"created"' + b',"x":' * 10, b"[" * 100_000, b'{"type":"message","message":' + b"[" * 5000 + b"]" * 5000
    + b"}", b'{"type":"status","status":"done","output":1e999}', b'{"type":"created","type":"created","id":NaN}',
]


@pytest.mark.parametrize("line", HOSTILE)
def test_parse_never_raises_on_a_planted_line(line):
    record = parse(line)
    assert record is None or isinstance(record, records.Record)
    if record is not None:  # what it takes is typed: the reducer cannot trip over it
        RunState().apply(record)


def test_a_malformed_record_costs_its_line_only(tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_bytes(b"\n".join([*HOSTILE, *(line.encode() for line in OLD_LINES)]) + b'\n{"type":"sta')
    read, offset = journal.read(path)
    assert [r.seq for r in read if r.seq] == list(range(1, len(OLD_LINES) + 1))
    assert offset == path.stat().st_size - len(b'{"type":"sta')
    state = replay(read)
    assert state.id == "r-1" and state.status == "done" and state.steps == 2


def test_a_record_the_harness_writes_with_a_wrong_type_is_a_bug(tmp_path):
    from sentinel.engine.run import Run

    with Run.create(tmp_path / "r-1", records.Created(id="r-1", task="t")) as run:
        with pytest.raises(TypeError, match="Finished"):
            run.record(records.Finished(call_id="c1", result=None))  # a store row's field handed on unchecked
        run.record(records.Finished(call_id="c1", result="ok"))  # nothing of the refused one was written
    assert [json.loads(line)["type"] for line in (tmp_path / "r-1" / "journal.jsonl").read_text().splitlines()] == [
        "created", "finished"]


# What the writers build, typed, next to the line the same write gave when records were written as dicts: the
# same bytes (seq and t aside), so journals written before and after read alike, by this version and the last.
WRITTEN = [
    (records.Created(id="r-1", task="t", agent="default", model="openai/m", workspace="/w"), 0),
    (records.Session(pid=42), 1),
    (records.Message(message={"role": "system", "content": "be brief"}), 2),
    (records.Message(message={"role": "user", "content": "go"}, skill="tdd"), 3),
    (records.Message(message={"role": "user", "content": "resumed"}, note="resume"), 4),
    (records.Model(model="openai/other"), 5),
    (records.System(content="new soul"), 6),
    (records.Assistant(message={"role": "assistant", "content": "x"}, model="m", latency_ms=1, usage={},
                       rejected="empty_answer"), 8),
    (records.Safeguard(kind="loop", action="stopped", detail="d"), 9),
    (records.Safeguard(kind="write_unverified", action="flagged", detail="d", note="n"), 10),
    (records.Started(call_id="c1", tool="write_file"), 13),
    (records.Finished(call_id="c1", result="Wrote 1 bytes", changed=True), 14),
    (records.Finished(call_id="c3", result="Interrupted", interrupted=True), 15),
    (records.Finished(call_id="c4", result="same", duplicate=True), 16),
    (records.Paused(call_id="c5", approval_id="a-1", tool="shell", reason="ask"), 17),
    (records.Resolved(call_id="c5", approval_id="a-1", approved=True, reason="", by="op"), 18),
    (records.SelfEdit(agent="a", call_id="c6", tool="edit_soul", file="SOUL.md", chars=5, version=3,
                      excerpt="hello"), 19),
    (records.ChildStarted(child_id="r-2", call_id="c7", agent="helper", task="sub"), 20),
    (records.ChildFinished(child_id="r-2", call_id="c7", status="done", output="ok"), 21),
    (records.Compaction(start=1, end=3, message={"role": "user", "content": "summary"}, summarized=2, turns=1,
                        chars_before=100, chars_after=10), 22),
    (records.Warned(message="skill 'x' not found; not attached"), 23),
    (records.Checkpoint(title="before children"), 24),
    (records.Archived(path="session-1.md"), 25),
    (records.Finished(call_id="c8", result="x", known=["a.txt"]), 26),
    (records.ContractMade(terms={"create": ["a.txt"]}, clauses=["create a.txt"]), 28),
    (records.Verdict(verified=True, checked=["create a.txt"], unmet=[]), 29),
    (records.Status.keeping_output("idle", error="stopped"), 30),
    (records.Status(status="done", output="answer", error=None), 31),
]


@pytest.mark.parametrize(("record", "index"), WRITTEN)
def test_a_typed_record_is_written_as_the_line_its_dict_was(record, index):
    old = json.loads(OLD_LINES[index])
    stamped = dataclasses.replace(record, seq=old["seq"], t=old["t"])
    assert records.encode(stamped) == OLD_LINES[index]
    assert parse(records.encode(stamped)) == stamped


def test_open_calls_are_typed_and_a_planted_call_item_is_skipped():
    """The loop reads a model's tool calls as ToolCall; an item the agent planted in its journal that is no call
    (no id, no function, a name that is no string) is left out instead of stopping the run with a KeyError."""
    from sentinel.models.base import ToolCall

    state = RunState()
    state.apply(parse('{"seq":1,"type":"assistant","message":{"role":"assistant","content":"","tool_calls":['
                      '{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\\"path\\":\\"a\\"}"}},'
                      '{"type":"function","function":{"name":"bash","arguments":"{}"}},{"id":"c3","function":"x"},'
                      '{"id":"c4","function":{"name":7}},"c5",'
                      '{"id":"c6","function":{"name":"write_file","arguments":{"path":"b"}}}]}}'))
    state.apply(parse('{"seq":2,"type":"finished","call_id":"c6","result":"ok"}'))
    assert state.open_calls() == [ToolCall("c1", "read_file", '{"path":"a"}')]
    assert state.turn_args == ['{"path":"a"}', "", "", "", "", '{"path": "b"}']
