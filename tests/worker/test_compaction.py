"""A long scripted run: compaction keeps it inside the window, its identity intact, every call with one result;
the session file and the curated MEMORY.md come out of it; a failed summary drops nothing; kill -9 after a
compaction resumes from the compacted state."""

from __future__ import annotations

import signal

SUMMARIZER = "context compactor"
DECISION = "One file per part, so that each part can be reviewed on its own"
PLAN = ["write parts 1-20", "write parts 21-40", "write parts 41-57"]


def _plan(done: int, explanation: str | None = None) -> dict:
    args = {"plan": [{"task": t, "status": "done" if i < done else "pending"} for i, t in enumerate(PLAN)]}
    if explanation:
        args["explanation"] = explanation
    return {"tool_calls": [{"name": "update_plan", "arguments": args}]}


def _write(i: int) -> dict:
    args = {"path": f"part{i}.txt", "content": f"{i}:" + "x" * 400}
    return {"content": f"Writing part {i}.", "tool_calls": [{"name": "write_file", "arguments": args}]}


def long_script(summary: dict | None = None) -> list:
    """60 model turns: a plan, 57 file writes with plan updates, an error and its fix, the answer."""
    turns: list = [_plan(0, DECISION)]
    for i in range(1, 58):
        if i == 5:
            turns.append({"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]})
        elif i in (21, 41):
            turns.append(_plan(1 if i == 21 else 2))
        elif i == 6:
            turns.append({"tool_calls": [{"name": "read_file", "arguments": {"path": "part1.txt"}}]})
        else:
            turns.append(_write(i))
    turns.append(_plan(3))
    turns.append("All parts written.")
    assert len(turns) == 60
    return [*turns, summary or {"match": SUMMARIZER, "content": "- Wrote the early parts; plan recorded."}]


CONFIG = {"limits": {"max_steps": 100},
          "context": {"compact_at_chars": 12000, "keep_recent_turns": 4, "curate_every_checkpoints": 0,
                      "curator_model": "off"}}


def _main_requests(server) -> list[dict]:
    return [r for r in server.requests if SUMMARIZER not in r["messages"][0]["content"]]


def _one_result_each(messages: list[dict]) -> bool:
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    return sorted(calls) == sorted(results) and len(results) == len(set(results))


def _run_id(cli) -> str:
    return cli.json("runs", "--json")[0]["id"]


def test_a_long_run_compacts_and_keeps_its_mind(scripted_server, configure, cli, sentinel_home):
    server = scripted_server(long_script())
    configure(CONFIG, server=server)
    cli("run", "Write the 57 parts.", check=4)
    run_id = _run_id(cli)
    shown = cli.json("show", run_id, "--json")

    assert shown["status"] == "done_unverified" and shown["output"] == "All parts written."
    assert len(shown["compactions"]) >= 2
    assert all(c["chars_after"] < c["chars_before"] for c in shown["compactions"])
    assert len(shown["history"]) > len(shown["messages"])  # the journal keeps every message
    assert sum(1 for m in shown["history"] if m["role"] == "assistant") == 60
    assert _one_result_each(shown["history"]) and _one_result_each(shown["messages"])

    main = _main_requests(server)
    assert len(main) == 60 and len(server.requests) - len(main) == len(shown["compactions"])
    first, last = main[0]["messages"], main[-1]["messages"]
    assert last[0]["role"] == "system" and last[0]["content"] == first[0]["content"]  # identity, byte for byte
    assert _one_result_each(last)
    assert sum(1 for m in last if m["content"] and m["content"].startswith("[Summary so far:")) == 1
    sizes = [len(str(r["messages"])) for r in main]
    first_drop = next(i for i in range(1, len(sizes)) if sizes[i] < sizes[i - 1])
    window = max(sizes[:first_drop])  # the largest request before the first compaction
    assert all(size <= window + 1000 for size in sizes[first_drop:])  # it stays inside the window
    assert sizes[-1] < window < sizes[0] + 30 * (sizes[3] - sizes[2])  # uncompacted, it would have kept growing
    assert all(f"part{i}.txt" in {p.name for p in (sentinel_home / "workspace").iterdir()}
               for i in (1, 30, 57))

    live = (sentinel_home / "runs" / run_id / "session-live.md").read_text()
    for section in ("# Active Session", "**Goal:** Write the 57 parts.", "## Plan", "| 1 | write parts 1-20 | done |",
                    "## Decisions", DECISION, "## Checkpoints", "### CP-", "## Current State",
                    "3 of 3 tasks complete", "## Errors & Fixes"):
        assert section in live, section
    assert "read_file: Error" in live and len(live.splitlines()) < 200
    assert live.count("### CP-") <= 2  # the curator's tidy-up keeps the last two checkpoints

    learned = (sentinel_home / "memory" / shown["agent"] / "MEMORY.md").read_text()  # the agent's private scope
    assert DECISION in learned and "read_file: Error" in learned
    for state in ("CP-", "tasks complete", "| ", "pending", "write parts 1-20"):
        assert state not in learned, state


def test_a_failing_summary_drops_nothing_and_is_tried_again(scripted_server, configure, cli):
    failing = {"match": SUMMARIZER, "error": {"status": 500, "message": "summarizer down"}}
    server = scripted_server(long_script(failing))
    configure(CONFIG, server=server)
    cli("run", "Write the 57 parts.", check=4)
    shown = cli.json("show", _run_id(cli), "--json")
    assert shown["status"] == "done_unverified" and shown["compactions"] == []
    assert shown["history"] == shown["messages"] and _one_result_each(shown["messages"])
    tries = len(server.requests) - len(_main_requests(server))
    assert tries >= 3  # tried again every few turns, never given up
    assert _main_requests(server)[-1]["messages"][-2:] == shown["messages"][-3:-1]


def test_kill_right_after_a_compaction_then_resume(scripted_server, configure, cli, sentinel_home):
    server = scripted_server(long_script())
    configure(CONFIG, server=server)
    killed = cli("run", "Write the 57 parts.", env={"SENTINEL_FAILPOINT": "compaction:1"})
    assert killed.returncode == -signal.SIGKILL
    run_id = _run_id(cli)
    calls_before = len(_main_requests(server))
    cli("resume", run_id, check=4)  # it ends done_unverified, and resume says so with run's code
    shown = cli.json("show", run_id, "--json")
    assert shown["status"] == "done_unverified" and _one_result_each(shown["messages"])
    resumed = _main_requests(server)[calls_before]["messages"]
    assert any((m["content"] or "").startswith("[Summary so far:") for m in resumed)  # compacted state
    notes = [m["content"] for m in resumed if (m["content"] or "").startswith("Resuming from checkpoint")]
    assert notes and notes[0].startswith("Resuming from checkpoint — 0 of 3 tasks complete")
    assert sum(1 for m in shown["history"] if m["role"] == "assistant") == 60  # no turn lost or repeated
    assert len({p.name for p in (sentinel_home / "workspace").iterdir()}) == 53  # parts 5, 6, 21 and 41 are other calls


def _two_step_plan(done: int) -> dict:
    steps = [{"task": "draft", "status": "done" if done > 0 else "in-progress"},
             {"task": "review", "status": "done" if done > 1 else "pending"}]
    return {"tool_calls": [{"name": "update_plan", "arguments": {"plan": steps}}]}


def test_a_chat_session_resumes_from_its_session_file_and_archives_it_when_complete(scripted_server, configure,
                                                                                   sentinel_home):
    from sentinel.local.engine import LocalEngine

    server = scripted_server([_two_step_plan(1), "Drafted.", _two_step_plan(2), "Reviewed.", "Something new."])
    configure(server=server)
    engine = LocalEngine()
    try:
        first = engine.start("draft then review", chat=True)
        run_dir = sentinel_home / "runs" / first.id
        assert "| 1 | draft | done |" in (run_dir / "session-live.md").read_text()
        engine.send(first.id, "go on")
        sent = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
        assert any(s.startswith("Resuming from checkpoint — 1 of 2 tasks complete") and "## Plan" in s for s in sent)
        engine.send(first.id, "something else now")  # the plan was complete: archived, a fresh file
        archived = list(run_dir.glob("session-2*.md"))
        assert len(archived) == 1 and "| 2 | review | done |" in archived[0].read_text()
        assert "no plan yet" in (run_dir / "session-live.md").read_text()
        assert not any("Resuming from checkpoint" in (m["content"] or "") for m in server.requests[-1]["messages"][-2:])
    finally:
        engine.close()


def test_a_compacted_run_that_read_every_file_it_was_asked_to_is_not_failed_as_unread(scripted_server, configure,
                                                                                      cli, sentinel_home):
    """40 reads, then a compaction drops the early ones from the conversation: the journal still has them, and
    the checks that ask "did the run open the files the task names?" (unread_input, unread_overwrite) read it."""
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    names = [f"f{i:02d}.txt" for i in range(1, 41)]
    for i, name in enumerate(names, 1):
        (ws / name).write_text(f"value {i}\n" + "y" * 300 + "\n")
    reads = [{"tool_calls": [{"name": "read_file", "arguments": {"path": n}}]} for n in names]
    rewrite = {"tool_calls": [{"name": "write_file", "arguments": {"path": "f01.txt", "content": "value 1 checked\n"}}]}
    server = scripted_server([*reads, rewrite, "Every file read; f01.txt marked checked.",
                              {"match": SUMMARIZER, "content": "- Read the early files."}])
    configure(CONFIG, server=server)
    out = cli.json("run", f"Read {', '.join(names)} and mark f01.txt as checked.", "--json", check=4)
    shown = cli.json("show", out["id"], "--json")
    assert shown["compactions"], "the run must have compacted for this test to mean anything"
    early = [m for m in shown["messages"] if m["role"] == "assistant" and "f02.txt" in str(m.get("tool_calls"))]
    assert early == []  # the read of f02.txt is gone from what the model sees
    assert out["status"] == "done_unverified" and "safeguards" not in out, out
    assert (ws / "f01.txt").read_text() == "value 1 checked\n"
