"""`sentinel hook AGENT EVENT`: read the agent's payload on stdin, run the rule gate, answer in its format.

    main(argv) -> exit status        argv = [AGENT, EVENT]
    handle(agent, event, raw) -> Reply   the same, in-process (tests, `sentinel rules test`)

Silent on pass. The repository's `.claude/sentinel/` is found from the call's working directory
as its adapter reads it (or the written file's directory) upward. Imports stay minimal: with a warm
rules cache and no rule in scope this module reads JSON, stats a few files and exits; the engine
(threads, HTTP) is imported only when some rule's scope matches. A judge subprocess (claude/copilot CLI)
carries SENTINEL_GATE_JUDGE=1 and passes straight through here, so it never re-enters.
Malformed payloads follow `fail_open`: a one-line note on stderr and a pass, or a
block in strict mode. Exit status 2 is only ever used to block.

A call outside any repository still meets the built-in rule on the gate's own files (a client's user-level
hook settings, Sentinel's home), its relative paths taken from the call's working directory.

The hook fails closed. Every client runs a call whose pre-tool hook exits 1 (HOOK-PROTOCOLS.md: only a deny
or exit 2 blocks), and the payload is the agent's to shape, so an exception anywhere in a pre-tool hook
(parsing, judging, rendering, writing the answer) is a deny in the client's own format (rule
`sentinel-error`), or exit 2 with one line on stderr when even that cannot be written; never a traceback.
Post-tool and Stop hooks end with one line on stderr. The answer is written as UTF-8 with unencodable
characters (a lone surrogate from the payload) escaped, which inside a JSON string is a valid `\\udXXX`.
"""

from __future__ import annotations

import json
import os
import sys
import time

from sentinel.hooks import common
from sentinel.policy.gate import GUARD_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: the fast path imports neither typing nor the gate's engine
    from typing import TextIO

    from sentinel.hooks.adapter import Adapter, EventOf
    from sentinel.hooks.ask import LocalQueue, SupervisorQueue
    from sentinel.jsontypes import JSON, JSONObject
    from sentinel.policy.gate.action import Action
    from sentinel.policy.gate.alignment import Intent
    from sentinel.policy.gate.engine import Verdict
    from sentinel.policy.gate.loader import Bundle
    from sentinel.policy.gate.rules import Rule

STARTED = time.monotonic()  # an ask's deadline counts from here (sentinel/hooks/ask.py)
ASK_ARGS: list[str] = []    # the command's extra arguments (`--ask-within N`, written by `sentinel hook install`)
ERROR_RULE = "sentinel-error"  # the rule id a deny names when the hook itself failed
USAGE = "usage: sentinel hook AGENT EVENT (agents: claude-code, copilot-cli, cursor, windsurf, cline, amazon-q, " \
        "gemini-cli, codex)"


def note(text: str) -> None:
    _write(sys.stderr, f"sentinel: {text}\n")


def main(argv: list[str]) -> int:
    if os.environ.get(GUARD_ENV):
        return 0
    if len(argv) < 2:
        note(USAGE)
        return 1
    ASK_ARGS[:] = argv[2:]
    try:
        reply = handle(argv[0], argv[1], _read_payload())
        _write(sys.stdout, reply.stdout + ("" if not reply.stdout or reply.stdout.endswith("\n") else "\n"))
        _write(sys.stderr, reply.stderr)
        return reply.code
    except BaseException as exc:  # the answer could not be made or written: a pre-tool call must not run on it
        return _last_word(common.phase(argv[1]), exc)


def _read_payload() -> str:
    """The payload as bytes decoded with `surrogateescape`: a byte that is not UTF-8 stays in the text (as the
    agent sent it) instead of failing the read, whatever the locale makes of stdin."""
    try:
        stream = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin
        data = stream.read()
    except (OSError, ValueError) as exc:
        note(f"cannot read the payload ({exc.__class__.__name__})")
        return ""
    return data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data


def _write(stream: TextIO, text: str) -> None:
    """`text` as UTF-8, with what UTF-8 cannot carry (a lone surrogate) escaped as `\\udXXX`."""
    if not text:
        return
    data = text.encode("utf-8", "backslashreplace")
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(data.decode("utf-8"))
    else:
        stream.flush()
        buffer.write(data)
    stream.flush()


def _last_word(phase: str | None, exc: BaseException) -> int:
    """When not even a reply could be written: one line on stderr; for a pre-tool call (or an event not known
    to be another phase) exit 2, which blocks where a deny could not be written."""
    pre = phase in (None, "pre")
    try:
        _write(sys.stderr, f"sentinel: {failure(exc)}; {'the call is blocked' if pre else 'nothing was checked'}\n")
    except BaseException:
        pass  # nothing is left to say it with; the exit status still blocks
    return 2 if pre else 0


def failure(exc: BaseException) -> str:
    """One line naming what failed, its text escaped (a message may quote the payload)."""
    said = " ".join(repr(str(exc))[1:-1].split())
    return f"the hook failed ({type(exc).__name__}{': ' + said[:300] if said else ''})"


def handle(agent: str, event: str, raw: str) -> common.Reply:
    from sentinel.hooks import agents

    adapter = agents.get(agent)
    if adapter is None:
        return common.Reply(stderr=f"sentinel: unknown agent {agent!r}; {USAGE}\n", code=1)
    phase = common.phase(event)
    payload: JSONObject | None = None
    try:
        try:
            parsed: JSON = json.loads(raw)
            if not isinstance(parsed, dict):
                raise ValueError("top level is not an object")
        except ValueError as exc:
            return malformed(adapter, phase or "pre", f"payload is not valid JSON ({exc})", os.getcwd())
        payload = parsed
        event_of: EventOf | None = getattr(adapter, "event_of", None)
        if phase is None and event_of is not None:
            phase = common.phase(str(event_of(payload) or ""))
        if phase is None:
            return common.Reply(stderr=f"sentinel: unknown event {event!r} (expected pre-tool-use, post-tool-use or "
                                       "stop, or the agent's own name for them)\n", code=1)
        return run(adapter, phase, payload)
    except Exception as exc:  # RecursionError on a deep payload, a name no file system can hold, a bug: fail closed
        return failed(adapter, phase, payload, exc)


def failed(adapter: Adapter, phase: str | None, payload: JSONObject | None, exc: BaseException) -> common.Reply:
    """The answer to a hook that failed: a pre-tool call (or one of an unknown phase) is denied in the client's
    own format; after the tool ran, or at the session's end, one line on stderr."""
    if phase not in (None, "pre"):
        return common.Reply(stderr=f"sentinel: {failure(exc)}; nothing was checked\n")
    try:
        return adapter.render("pre", _blocked(ERROR_RULE, failure(exc)), payload)
    except Exception:
        return common.exit2(f"sentinel: {failure(exc)}; the call is blocked")


def _repo(cwd: str | None, fallback_path: str = "") -> str | None:
    """The repository the call is in: found from its working directory, else from the written file's."""
    from sentinel.policy.gate.loader import find_repo

    start = cwd or None
    if start is None and fallback_path and os.path.isabs(fallback_path):
        start = os.path.dirname(fallback_path)
    return find_repo(start or os.getcwd())


def malformed(adapter: Adapter, phase: str, problem: str, start: str) -> common.Reply:
    from sentinel.policy.gate.loader import find_repo, load_repo

    root = find_repo(start)
    strict = False
    if root is not None:
        bundle = load_repo(root)
        strict = bundle.strict_on_error if bundle.config_error else not bundle.config.fail_open
    if strict and phase == "pre":
        return adapter.render(phase, _blocked("malformed-payload", f"{problem}; strict mode (fail_open: false)"), None)
    return common.Reply(stderr=f"sentinel: {problem}; allowed (fail_open)\n")


def _blocked(rule_id: str, reason: str) -> Verdict:
    from sentinel.policy.gate.engine import Finding, Verdict

    verdict = Verdict()
    verdict.findings.append(Finding(rule_id, "block", reason, kind="error"))
    return verdict


def run(adapter: Adapter, phase: str, payload: JSONObject) -> common.Reply:
    from sentinel.policy.gate.loader import load_bare, load_repo

    # where the client runs the call, as its adapter reads it (Windsurf: `tool_info.cwd`; Cline: its workspace)
    cwd, session_id, transcript = adapter.session(payload)
    root = _repo(cwd, _path_hint(payload))
    if root is None:
        if phase != "pre":
            return common.SILENT
        # no repository, no rules of its own; the gate's own files (a client's user-level hook settings,
        # Sentinel's home) are held all the same, relative paths taken from where the call runs
        bundle = load_bare(os.path.abspath(cwd or os.getcwd()))
        return _judge(adapter, phase, payload, bundle, cwd, session_id, transcript)
    bundle = load_repo(root)
    notes = "".join(f"sentinel: skipped rule: {e}\n" for e in bundle.errors)
    if bundle.config_error:
        if bundle.strict_on_error and phase == "pre":
            return _with_notes(adapter.render(phase, _blocked("config", bundle.config_error), payload), notes)
        notes += f"sentinel: {bundle.config_error}; gate off but for its own files (fail_open)\n"
        if phase != "pre" or bundle.own is None:
            return common.Reply(stderr=notes)
        # fail open is the repository's rules off, not the person's hold on the gate's own files: an agent
        # that finds the config broken must not be able to rewrite the hook settings or $SENTINEL_HOME unasked
        bundle = bundle.without_rules()
    if phase == "stop":
        from sentinel.hooks.background import on_stop

        return _with_notes(on_stop(adapter, root, session_id, transcript, bundle), notes)
    return _with_notes(_judge(adapter, phase, payload, bundle, cwd, session_id, transcript), notes)


def _judge(adapter: Adapter, phase: str, payload: JSONObject, bundle: Bundle, cwd: str | None, session_id: str,
           transcript: str | None) -> common.Reply:
    """The call's actions, located from where it runs, against the bundle's rules."""
    root = bundle.paths.root or os.getcwd()
    try:
        found = adapter.action(payload, bundle.config, phase)
    except ValueError as exc:
        return malformed(adapter, phase, f"malformed payload: {exc}", root)
    acts = [a.locate(root, cwd) for a in (found if isinstance(found, list) else [found] if found is not None else [])]
    return _evaluate(adapter, phase, acts, bundle, payload, session_id, transcript)


def _evaluate(adapter: Adapter, phase: str, acts: list[Action], bundle: Bundle, payload: JSONObject, session_id: str,
              transcript: str | None) -> common.Reply:
    """Every action of the call (a patch touches several files) against the rules in its scope."""
    from sentinel.policy.gate.rules import applicable

    deferred: bool = getattr(adapter, "DEFER_WARNINGS", False)
    rules = [*bundle.rules, bundle.own] if bundle.own is not None else bundle.rules  # the gate's own files: built in
    scoped = [(a, m) for a in acts for m in [applicable(rules, a, phase)] if m]
    asking = phase == "pre" and any(r.severity == "ask" for _, m in scoped for r in m)
    queue: LocalQueue | SupervisorQueue | None = None
    allowed: set[int] = set()
    if asking:  # an ask rule is in scope: an allowlisted exact call loses it before any judge is called
        queue, scoped, allowed = _allowlist(bundle, scoped, adapter.NAME)
    if not scoped:  # scope first: no rule in scope, no model call, no engine import
        if deferred and phase == "post":
            return _held(adapter, phase, bundle, session_id, None, payload)
        _close(queue)
        return common.SILENT
    from sentinel.policy.gate.engine import Gate, Verdict
    from sentinel.policy.gate.judges import Judges

    gate = Gate(bundle.config, rules, bundle.paths, Judges(bundle.config))
    # allowlisted actions are judged by the same rules but the ask rules
    unasked = Gate(bundle.config, [r for r in rules if r.severity != "ask"], bundle.paths, gate.judges) \
        if allowed else gate
    verdict = Verdict()
    for act, matching in scoped:
        one = gate.post(act, session_id=session_id) if phase == "post" else \
            (unasked if id(act) in allowed else gate).pre(act, session_id=session_id,
                                                          intent=_intent(matching, transcript))
        verdict.merge(one)
    if phase == "pre" and verdict.asks and not verdict.blocks:
        from sentinel.hooks import ask

        ask.STARTED, ask.WITHIN_S = STARTED, ask.within_from(ASK_ARGS)
        root = bundle.paths.root or os.getcwd()
        return _with_errors(ask.hold(adapter, verdict, payload, acts, root, queue), verdict)
    _close(queue)
    if deferred and phase == "pre" and not verdict.blocks and (verdict.warnings or verdict.errors):
        from sentinel.hooks import pending

        for text in (common.warn_text(verdict) if verdict.warnings else "", common.unchecked_text(verdict)):
            if text:
                pending.hold(bundle.paths.session_dir(session_id), text, bundle.paths.root)
    elif deferred and phase == "post":
        return _held(adapter, phase, bundle, session_id, verdict, payload)
    return _with_errors(adapter.render(phase, verdict, payload), verdict)


def _allowlist(bundle: Bundle, scoped: list[tuple[Action, list[Rule]]], client: str
               ) -> tuple[LocalQueue | SupervisorQueue | None, list[tuple[Action, list[Rule]]], set[int]]:
    """(queue, scoped without the ask rules of the actions allowlisted for `client`, ids of those actions). A store
    that cannot be read keeps every ask rule: the ask itself then fails closed."""
    from sentinel.hooks import ask

    queue = None
    try:
        queue = ask.open_queue()
        kept, allowed = ask.drop_allowlisted(queue, bundle.paths.root or os.getcwd(), scoped, client)
        return queue, kept, allowed
    except Exception as exc:
        note(f"cannot read the allowlist ({type(exc).__name__}: {exc})")
        _close(queue)
        return None, scoped, set()


def _close(queue: LocalQueue | SupervisorQueue | None) -> None:
    if queue is not None:
        try:
            queue.close()
        except Exception:
            pass


def _held(adapter: Adapter, phase: str, bundle: Bundle, session_id: str, verdict: Verdict | None,
          payload: JSONObject) -> common.Reply:
    """After the tool ran: warnings held from before it (agents whose pre-tool answer reaches no model)."""
    from sentinel.hooks import pending

    held = pending.take(bundle.paths.session_dir(session_id))
    if verdict is None:
        if not held:
            return common.SILENT
        from sentinel.policy.gate.engine import Verdict

        verdict = Verdict()
    verdict.held.extend(held)
    return _with_errors(adapter.render(phase, verdict, payload), verdict)


def _with_errors(reply: common.Reply, verdict: Verdict) -> common.Reply:
    """Skipped rules are also noted on stderr for the user, unless the answer already says so there."""
    if reply.stderr and common.unchecked_text(verdict) in reply.stderr:
        return reply
    return _with_notes(reply, "".join(f"sentinel: {e}\n" for e in verdict.errors))


def _intent(matching: list[Rule], transcript: str | None) -> Intent | None:
    """The alignment kind's intent from the session: the first user request is the mission (what the
    session was started for), the latest one the request being served; read only when needed."""
    if not any(r.kind == "alignment" for r in matching):
        return None
    from sentinel.policy.gate.alignment import Intent
    from sentinel.policy.gate.transcript import user_requests

    first, last = user_requests(transcript)
    return Intent(last, first)


def _path_hint(payload: JSONObject) -> str:
    for holder in (payload.get("tool_input"), payload.get("tool_info"), payload):
        if isinstance(holder, dict):
            for key in ("file_path", "path"):
                value = holder.get(key)
                if isinstance(value, str):
                    return value
    return ""


def _with_notes(reply: common.Reply, notes: str) -> common.Reply:
    if not notes:
        return reply
    return common.Reply(reply.stdout, notes + reply.stderr, reply.code)
