"""The pre-tool hook fails closed: every client runs a call whose hook exits 1 (HOOK-PROTOCOLS.md), and the payload
is the agent's to shape, so nothing the agent sends may crash the hook into letting the call through.

Attacks, each on a call a rule holds (`rm -rf protected`), for every client: a payload nested deeper than the
JSON parser recurses, a lone surrogate in a path (a name no file system call takes), a byte that is not UTF-8 (in
either locale), an answer that quotes a lone surrogate. Each is denied in the client's own format (or exit 2), never
a traceback; a failure anywhere else (judging, rendering, writing the answer) too. After the tool ran, a failure is
one line on stderr."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from test_hook_protocols import block_reason
from test_unreadable_commands import AGENTS, shell_call

from sentinel.hooks import agents, entry
from sentinel.hooks.common import Reply

RULE = {"kind": "scope", "trigger": "file_write", "severity": "block", "scope": ["protected/**"],
        "description": "protected/ is read-only"}
EVENTS = {"claude-code": "pre-tool-use", "codex": "pre-tool-use", "gemini-cli": "BeforeTool", "amazon-q": "preToolUse",
          "copilot-cli": "preToolUse", "cline": "PreToolUse", "cursor": "beforeShellExecution",
          "windsurf": "pre_run_command"}
DEEP = 1100  # past the parser's recursion limit


@pytest.fixture
def root(repo, home):
    made = repo({"protected": RULE})
    (made / "protected").mkdir()
    (made / "protected" / "keep.txt").write_text("keep\n")
    return made


def with_deep(payload: dict) -> bytes:
    """The payload's JSON with a value nested `DEEP` levels (the parser recurses the same wherever it is)."""
    return json.dumps({**payload, "padding": "DEEP"}).replace('"DEEP"', '{"a": ' * DEEP + "{}" + "}" * DEEP).encode()


def run_main(monkeypatch, agent: str, data: bytes, errors: str = "strict", event: str = "") -> Reply:
    """`entry.main` on `data` as its stdin, through text streams as a locale makes them (`errors`: strict under
    en_US.UTF-8, surrogateescape under C.UTF-8); stdout and stderr as the bytes written."""
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors=errors)
    out, err = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="utf-8", errors=errors))
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding="utf-8", errors=errors))
    code = entry.main([agent, event or EVENTS[agent]])
    sys.stdout.flush()
    sys.stderr.flush()
    return Reply(out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8"), code)


def denied_by(agent: str, reply: Reply) -> str:
    reason = block_reason(agent, reply)
    assert reason, (agent, reply)
    assert "Traceback (most recent call last)" not in reply.stderr
    return reason


@pytest.mark.parametrize("agent", AGENTS)
def test_a_payload_too_deep_to_parse_is_denied(root, monkeypatch, agent):
    """RecursionError in the JSON parser, which `handle` took for no parse error at all: the hook exited 1."""
    payload = shell_call(agent, str(root), "rm -rf protected")
    reason = denied_by(agent, run_main(monkeypatch, agent, with_deep(payload)))
    assert "[sentinel-error]" in reason and "RecursionError" in reason
    assert "\n" not in reason.strip()


@pytest.mark.parametrize("agent", AGENTS)
def test_a_path_no_file_system_can_name_is_judged(root, monkeypatch, agent):
    """A lone surrogate (JSON `\\ud800`) in a written path: where it lands is unknown, so the path rule holds it;
    the walk that resolves it no longer raises."""
    for command in ("rm -rf protected; touch a\ud800", "touch a\ud800"):
        reply = entry.handle(agent, EVENTS[agent], json.dumps(shell_call(agent, str(root), command)))
        assert "[protected]" in denied_by(agent, reply), command
    reads = entry.handle(agent, EVENTS[agent], json.dumps(shell_call(agent, str(root), "ls -la a\ud800")))
    assert (reads.code, reads.stdout) == (0, "")  # a read writes nothing: no rule meets it


@pytest.mark.parametrize("errors", ["strict", "surrogateescape"])
@pytest.mark.parametrize("agent", AGENTS)
def test_a_byte_that_is_not_utf8_is_judged_as_sent(root, monkeypatch, agent, errors):
    """A raw 0xFF in the command: a strict stdin made it an unreadable payload (allowed, fail_open); a lenient one
    reached the judging, whose telemetry then failed to encode it."""
    text = json.dumps(shell_call(agent, str(root), "rm -rf protected; touch aMARK"))
    data = text.encode().replace(b"MARK", b"\xff")
    assert "[protected]" in denied_by(agent, run_main(monkeypatch, agent, data, errors))
    logged = (root / ".claude" / "sentinel" / "sentinel.log").read_bytes().decode("utf-8")
    assert "touch a\\udcff" in logged and all(json.loads(line) for line in logged.splitlines())


def test_an_answer_quoting_a_lone_surrogate_is_valid_json(repo, judge, monkeypatch):
    """The judge's reason quotes the payload; the deny on stdout stays JSON (`\\ud800` escaped), in either locale."""
    j = judge({"": {"violation": True, "confidence": 0.9, "reason": "it writes a\ud800"}})
    root = repo({"b": {"trigger": "file_write", "scope": ["src/**"], "prompt": "FILE {{file_path}}"}},
                {"backends": {"ollama": {"url": j.url}}})
    payload = {"session_id": "s", "cwd": str(root), "tool_name": "Write",
               "tool_input": {"file_path": "src/a\ud800.py", "content": "x"}}
    for errors in ("strict", "surrogateescape"):
        reply = run_main(monkeypatch, "claude-code", json.dumps(payload).encode(), errors)
        reason = denied_by("claude-code", reply)
        assert "it writes a\ud800" in reason and "\\ud800" in reply.stdout


@pytest.mark.parametrize("agent", AGENTS)
def test_any_failure_while_judging_denies_in_the_agents_format(root, monkeypatch, agent):
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected\n  a second line")

    monkeypatch.setattr(entry, "_evaluate", boom)
    payload = shell_call(agent, str(root), "rm -rf protected")
    reason = denied_by(agent, entry.handle(agent, EVENTS[agent], json.dumps(payload)))
    assert "[sentinel-error]" in reason and "RuntimeError: injected" in reason
    assert "\n" not in reason.strip()  # one line, whatever the exception's text holds
    # through `main` the same
    assert "[sentinel-error]" in denied_by(agent, run_main(monkeypatch, agent, json.dumps(payload).encode()))


@pytest.mark.parametrize("agent", AGENTS)
def test_a_deny_that_cannot_be_rendered_exits_2(root, monkeypatch, agent):
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(entry, "_evaluate", boom)
    monkeypatch.setattr(agents.get(agent), "render", boom)
    reply = run_main(monkeypatch, agent, json.dumps(shell_call(agent, str(root), "rm -rf protected")).encode())
    assert (reply.code, reply.stdout) == (2, "")
    assert reply.stderr.count("\n") == 1 and reply.stderr.startswith("sentinel: the hook failed (RuntimeError")


def test_an_answer_that_cannot_be_written_exits_2(root, monkeypatch):
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    payload = json.dumps(shell_call("claude-code", str(root), "rm -rf protected")).encode()
    err = io.BytesIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload), encoding="utf-8"))
    monkeypatch.setattr(sys, "stdout", Closed())
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding="utf-8"))
    assert entry.main(["claude-code", "pre-tool-use"]) == 2
    sys.stderr.flush()
    said = err.getvalue().decode()
    assert said.count("\n") == 1 and "BrokenPipeError" in said and "blocked" in said


@pytest.mark.parametrize("event", ["post-tool-use", "stop"])
def test_after_the_tool_ran_a_failure_is_one_line_and_no_block(root, monkeypatch, event):
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected")

    payload = {"session_id": "s", "cwd": str(root), "tool_name": "Bash", "tool_input": {"command": "ls"},
               "tool_response": "ok"}
    monkeypatch.setattr(entry, "run", boom)
    reply = entry.handle("claude-code", event, json.dumps(payload))
    assert (reply.code, reply.stdout) == (0, "") and reply.stderr.count("\n") == 1 and "RuntimeError" in reply.stderr
    monkeypatch.undo()
    reply = run_main(monkeypatch, "claude-code", with_deep(payload), event=event)
    assert (reply.code, reply.stdout) == (0, "") and reply.stderr.count("\n") == 1
    assert "RecursionError" in reply.stderr and "Traceback" not in reply.stderr


@pytest.mark.parametrize("agent", AGENTS)
def test_the_hook_process_denies_what_it_cannot_read(root, agent):
    """The process the client starts, with the payload on its real stdin: never exit 1, never a traceback."""
    payload = shell_call(agent, str(root), "rm -rf protected; touch aMARK")
    env = {k: v for k, v in os.environ.items() if k != "SENTINEL_GATE_JUDGE"}
    for data in (with_deep(payload), json.dumps(payload).encode().replace(b"MARK", b"\xff")):
        proc = subprocess.run([sys.executable, "-m", "sentinel", "hook", agent, EVENTS[agent]], input=data,
                              capture_output=True, timeout=60, env=env)
        reply = Reply(proc.stdout.decode(), proc.stderr.decode(), proc.returncode)
        assert proc.returncode in (0, 2) and denied_by(agent, reply)


# -- the roots: path code and telemetry take any text ------------------------------------------------------------

def test_a_walk_through_a_name_no_system_call_takes_never_raises(tmp_path):
    from sentinel.pathwalk import follow
    from sentinel.policy.landing import land

    for name in ("a\ud800", "a\udcff\ud800/b"):
        for past_missing in (True, False):
            walked = follow(str(tmp_path / name), past_missing)
            assert walked.unnamed == ("\ud800" in name) and walked.missing
        assert land(str(tmp_path), name).others is None  # lands anywhere: every path rule is about it
    walked = follow(str(tmp_path / "a\udcff"), True)  # a byte that is not UTF-8 is a name the kernel takes
    assert not walked.unnamed and land(str(tmp_path), "a\udcff").others == ()


def test_telemetry_takes_any_text(tmp_path):
    from sentinel.policy.gate import telemetry

    log = tmp_path / "log.jsonl"
    telemetry.append(str(log), [{"target": "a\ud800", "reason": "b\udcff"}])
    (line,) = log.read_bytes().decode("utf-8").splitlines()
    assert json.loads(line) == {"target": "a\ud800", "reason": "b\udcff"}
