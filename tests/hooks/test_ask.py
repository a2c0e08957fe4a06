"""Issue 43: a rule of severity `ask` holds a coding agent's call until a person decides it in Sentinel's one
inbox. Real hook processes (the installed command's shape), the user's real store, a loopback webhook receiving
the notification, the web console in this process serving its one-tap link, posted as a browser posts it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "notify"))

from receivers import Webhook  # noqa: E402

PUSH_ASKS = {"kind": "scope", "trigger": "bash", "severity": "ask", "scope": ["git push*"],
             "description": "pushing leaves this machine: a person decides"}
COMMAND = "git push origin main"


def claude_payload(root: Path, command: str = COMMAND) -> dict:
    return {"session_id": "abc123", "transcript_path": None, "cwd": str(root), "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            "tool_use_id": "toolu_01"}


def codex_payload(root: Path, command: str = COMMAND) -> dict:
    return {"session_id": "s1", "turn_id": "t1", "transcript_path": None, "cwd": str(root),
            "hook_event_name": "PreToolUse", "model": "gpt-5", "permission_mode": "default", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": "call_1"}


PAYLOADS = {"claude-code": ("pre-tool-use", claude_payload), "codex": ("pre-tool-use", codex_payload)}


@pytest.fixture
def webhook():
    hook = Webhook()
    yield hook
    hook.stop()


@pytest.fixture
def inbox(sentinel_home, configure, webhook):
    """$SENTINEL_HOME with a one-tap webhook target; after the test, its detached deliverer has exited."""
    configure({"notify": [{"type": "webhook", "url": webhook.url, "on": ["approval"], "one_tap": True}]})
    yield sentinel_home
    from sentinel import paths

    deadline = time.monotonic() + 20
    while paths.state_dir(sentinel_home).is_dir() and time.monotonic() < deadline:
        fd = paths.try_lock(paths.state_dir(sentinel_home) / "notify.lock")
        if fd is not None:
            os.close(fd)
            return
        time.sleep(0.05)


@pytest.fixture
def console():
    from sentinel.local.engine import LocalEngine
    from sentinel.web.app import InThread, engines_for
    from sentinel.web.settings import WebSettings

    servers = []

    def start():
        servers.append(InThread(engines_for(LocalEngine()), WebSettings(poll_s=0.1)).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def hooks():
    """start(agent, payload, within) -> a running hook process (the installed command's shape); all reaped."""
    started = []

    def start(agent, payload, within=30):
        event = PAYLOADS[agent][0]
        proc = subprocess.Popen([sys.executable, "-m", "sentinel", "hook", agent, event, "--ask-within", str(within)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.stdin.write(json.dumps(payload))
        proc.stdin.close()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


def answer(proc, timeout=20):
    proc.wait(timeout)
    return proc.returncode, proc.stdout.read(), proc.stderr.read()


def local_link(server, notification):
    url = notification["decide_url"]
    return f"http://127.0.0.1:{server.port}" + url.split("8789", 1)[1]


def post(link, server, decision, **extra):
    """As a browser submits the link page's form: urlencoded, with the console's Origin."""
    return httpx.post(link, data={"decision": decision, **extra}, headers={"origin": f"http://127.0.0.1:{server.port}"},
                      timeout=30)


def approvals(home):
    with sqlite3.connect(home / "state" / "sentinel.db") as db:
        return db.execute("SELECT id, status, tool, arguments, digest FROM approvals ORDER BY created_at").fetchall()


def wait_filed(home, count=1, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (home / "state" / "sentinel.db").exists():
            try:
                found = approvals(home)
            except sqlite3.OperationalError:
                found = []
            if len(found) >= count:
                return found
        time.sleep(0.05)
    raise AssertionError("no approval was filed")


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_an_ask_notifies_once_and_the_link_approves_the_exact_call(agent, repo, inbox, webhook, console, hooks, cli):
    root = repo({"push-asks": PUSH_ASKS})
    proc = hooks(agent, PAYLOADS[agent][1](root))
    (note,) = webhook.wait(1)
    doc = note["json"]
    assert doc["event"] == "approval" and doc["tool"] == "Bash" and COMMAND in doc["arguments"]
    assert doc["agent"] == agent and "push-asks" in doc["reason"] and doc["decide_url"]
    (filed,) = approvals(inbox)
    from sentinel.engine.store import call_digest

    assert filed[4] == doc["digest"] == call_digest("Bash", PAYLOADS[agent][1](root)["tool_input"])
    listed = cli("approvals")  # the same inbox: which coding agent asks, where
    assert agent in listed.stdout and filed[0] in listed.stdout and str(root.resolve())[:20] in listed.stdout
    assert proc.poll() is None  # held: the client waits

    server = console()
    link = local_link(server, doc)
    page = httpx.get(link, timeout=10)
    assert page.status_code == 200 and COMMAND in page.text
    done = post(link, server, "approve")
    assert done.status_code == 200 and "approved" in done.text
    code, out, err = answer(proc)  # (how fast: benchmarks/bench_hook.py, "decision -> the hook's answer")
    assert code == 0
    if agent == "claude-code":
        out = json.loads(out)["hookSpecificOutput"]
        assert out["permissionDecision"] == "allow" and "approved by one-tap link" in out["permissionDecisionReason"]
    else:  # Codex understands deny only: a clean exit lets the call run
        assert out.strip() == "" and "blocked" not in err
    assert approvals(inbox)[0][1] == "consumed"  # used once, for this digest
    time.sleep(0.3)
    assert len(webhook.received) == 1  # exactly one notification


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_denial_through_the_link_reaches_the_model_with_its_reason(agent, repo, inbox, webhook, console, hooks):
    root = repo({"push-asks": PUSH_ASKS})
    proc = hooks(agent, PAYLOADS[agent][1](root))
    (note,) = webhook.wait(1)
    server = console()
    assert post(local_link(server, note["json"]), server, "deny", reason="not on a Friday").status_code == 200
    code, out, err = answer(proc)
    if agent == "claude-code":
        assert code == 0
        out = json.loads(out)["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny"
        reason = out["permissionDecisionReason"]
    else:
        assert code == 2 and out.strip() == ""
        reason = err
    assert "[push-asks]" in reason and "denied by one-tap link" in reason and "not on a Friday" in reason


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_no_decision_in_time_denies_and_withdraws_the_approval(agent, repo, inbox, webhook, hooks, cli):
    root = repo({"push-asks": PUSH_ASKS})
    proc = hooks(agent, PAYLOADS[agent][1](root), within=12)
    code, out, err = answer(proc)
    text = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] if agent == "claude-code" else err
    assert ("deny" in out) if agent == "claude-code" else code == 2
    assert "no decision within 12 s" in text
    ((approval_id, status, *_),) = approvals(inbox)
    assert status == "expired"
    late = cli("approve", approval_id)  # too late: nothing is decided, nothing runs
    assert late.returncode != 0 and "expired, not pending" in late.stderr
    assert "no pending approvals" in cli("approvals").stdout


def test_a_signal_while_waiting_denies(repo, inbox, webhook, hooks):
    root = repo({"push-asks": PUSH_ASKS})
    proc = hooks("codex", codex_payload(root))
    wait_filed(inbox)
    webhook.wait(1)
    proc.send_signal(signal.SIGTERM)
    code, out, err = answer(proc)
    assert code == 2 and "the hook was stopped (SIGTERM)" in err
    assert approvals(inbox)[0][1] == "expired"


def test_a_store_that_cannot_be_written_denies(repo, sentinel_home, hooks, tmp_path, monkeypatch):
    """Fail closed: with no queue to file in, the ask is denied, never let through."""
    root = repo({"push-asks": PUSH_ASKS})
    (sentinel_home / "state").write_text("not a directory")
    proc = hooks("claude-code", claude_payload(root))
    code, out, err = answer(proc)
    out = json.loads(out)["hookSpecificOutput"]
    assert code == 0 and out["permissionDecision"] == "deny"
    assert "could not ask a person" in out["permissionDecisionReason"]


def test_always_allowlists_this_exact_call_here_only(repo, inbox, webhook, hooks, cli, judge):
    """Approved with --always: the same call in the same repository files nothing and calls no judge; another
    command, or the same command in another repository, still asks; a revoked entry asks again."""
    calls = judge({"never": {"violation": False, "confidence": 0.9, "reason": "fine"}})
    judged_ask = {"trigger": "bash", "severity": "ask", "scope": ["git push*"], "prompt": "COMMAND: {{command}}\nRULE: never push broken code"}
    config = {"backends": {"ollama": {"url": calls.url}}}
    root = repo({"push-asks": PUSH_ASKS, "judged": judged_ask}, config)
    other = repo({"push-asks": PUSH_ASKS}, name="other")
    proc = hooks("claude-code", claude_payload(root))
    ((approval_id, *_),) = wait_filed(inbox)
    asked = len(calls.requests)
    assert cli("approve", approval_id, "--always").returncode == 0
    assert answer(proc)[0] == 0

    again = hooks("claude-code", claude_payload(root))
    code, out, err = answer(again)
    assert (code, out) == (0, "") and len(approvals(inbox)) == 1  # allowed at once, nothing filed
    assert len(calls.requests) == asked  # and no judge call for the ask rules
    listed = cli("hook", "allowlist")
    assert COMMAND in listed.stdout and str(root.resolve()) in listed.stdout

    def still_asks(payload, count):
        proc = hooks("claude-code", payload)
        newest = wait_filed(inbox, count)[-1][0]
        cli("deny", newest, check=0)
        assert "denied by" in json.loads(answer(proc)[1])["hookSpecificOutput"]["permissionDecisionReason"]

    still_asks(claude_payload(root, COMMAND + " --force"), 2)  # another command
    still_asks(claude_payload(other), 3)  # the same command in another repository
    revoked = cli("hook", "allowlist", "--revoke", "--repo", str(root), "command", json.dumps([".", COMMAND]))
    assert revoked.returncode == 0 and "revoked 1" in revoked.stdout
    still_asks(claude_payload(root), 4)  # revoked: it asks again


def test_always_is_refused_for_a_run_approval_and_decides_nothing(repo, inbox, hooks, cli):
    from sentinel.engine.store import Store

    with Store.open(inbox / "state" / "sentinel.db") as store:
        store.create_run("r-1", agent="a", task="t", model="m", workspace="/tmp", run_dir=Path("/nonexistent/r-1"))
        store.set_status("r-1", "waiting_approval")
        approval = store.submit_approval("r-1", "c1", "bash", {"command": "ls"}, "why")
    refused = cli("approve", approval.id, "--always")
    assert refused.returncode == 2 and "--always is for those only" in refused.stderr
    with Store.open(inbox / "state" / "sentinel.db") as store:
        assert store.get_approval(approval.id).status == "pending"


def test_a_call_out_of_every_ask_scope_opens_no_store(repo, sentinel_home, hooks):
    root = repo({"push-asks": PUSH_ASKS})
    code, out, err = answer(hooks("claude-code", claude_payload(root, "git status")))
    assert (code, out, err) == (0, "", "")
    assert not (sentinel_home / "state").exists()


def test_always_through_the_link_and_the_console_card(repo, inbox, webhook, console, hooks):
    """The link page offers "Approve always here" for an ask; posting it allows the call and allowlists it. The
    console's card for an ask names the coding agent and offers the same."""
    root = repo({"push-asks": PUSH_ASKS})
    proc = hooks("codex", codex_payload(root))
    (note,) = webhook.wait(1)
    server = console()
    link = local_link(server, note["json"])
    assert 'value="always"' in httpx.get(link, timeout=10).text
    assert post(link, server, "always").status_code == 200
    assert answer(proc)[0] == 0
    again = hooks("codex", codex_payload(root))
    assert answer(again) == (0, "", "") and len(approvals(inbox)) == 1
    from sentinel.engine.store import Store

    with Store.open(inbox / "state" / "sentinel.db") as store:
        from sentinel.engine import asks

        (entry,) = asks.allowlist(store)
    assert (entry["kind"], entry["value"], entry["repository"]) == ("command", json.dumps([".", COMMAND]),
                                                                    str(root.resolve()))
    assert entry["added_by"].startswith("one-tap link (webhook")


def test_the_console_card_names_the_coding_agent(repo, inbox, hooks, console):
    root = repo({"push-asks": PUSH_ASKS})
    hooks("claude-code", claude_payload(root), within=20)
    wait_filed(inbox)
    from sentinel.local.engine import LocalEngine
    from sentinel.web.render import Templates, approval_views

    with LocalEngine() as engine:
        (pending,) = engine.pending()
        assert pending.client == "claude-code" and pending.workspace == str(root.resolve())
        views = approval_views({pending.id: pending}, {r.id: r for r in engine.runs()})
    html = Templates().render("_approval.html", prefix="/s/x", a=views[0])
    assert "<b>claude-code</b> asks" in html and 'data-always="1"' in html


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini-cli", "cline", "copilot-cli", "cursor", "windsurf",
                                   "amazon-q"])
def test_every_client_gets_its_own_allow_and_deny(agent):
    """The answers an ask ends with, in each client's protocol: an approval is that client's pass (Claude Code
    and Cursor: an explicit allow), a denial is that client's block with the reason."""
    from sentinel.hooks import agents, ask
    from sentinel.policy.gate.engine import Finding, Verdict

    adapter = agents.get(agent)
    verdict = Verdict()
    verdict.findings.append(Finding("push-asks", "ask", "pushing leaves this machine", kind="scope"))
    payload = claude_payload(Path("/tmp"))
    yes = ask.allowed(adapter, verdict, payload, "approved by alice")
    no = ask.denied(adapter, verdict, payload, "push-asks", "denied by alice: not today")
    block = Verdict()
    block.findings.append(Finding("push-asks", "block", "this call needed a person's approval: denied by alice: "
                                                        "not today"))
    expected = adapter.render("pre", block, payload)
    assert (no.stdout, no.stderr, no.code) == (expected.stdout, expected.stderr, expected.code)
    assert "denied by alice: not today" in no.stdout + no.stderr
    assert yes.code == 0 and "blocked" not in yes.stdout + yes.stderr and '"deny"' not in yes.stdout
    assert '"cancel": true' not in yes.stdout
    if agent == "claude-code":
        assert json.loads(yes.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
