"""Holding a coding agent's call for a person: an `ask` rule applied, so `sentinel hook` files an approval in
Sentinel's queue and answers the agent only once someone decided, or denies when nobody did in time.

    queue = open_queue()                          # the operator's queue (supervisor) or the user's own store
    scoped = drop_allowlisted(queue, root, scoped, client)  # an exact call allowlisted for this client loses its
                                                            # ask rules (no judge, no ask)
    reply = hold(adapter, verdict, payload, acts, root, queue)

Fail closed on time: the hook waits until `--ask-within` seconds after it started (written by `sentinel hook
install` below the client's own hook timeout; 20 s for hooks installed before asks existed, whose clients allow
30 s), then withdraws the approval and denies with "no decision within N s". A store error, a crash of this
code, or a SIGTERM/SIGHUP/SIGINT while waiting all deny too (the approval is withdrawn when the store still
answers; else it expires by itself at the same deadline). Only an approval of the exact call the hook filed
(its SHA-256 digest) lets it through, and only once.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType

    from sentinel.client.system import SystemEngine
    from sentinel.engine.asks import Ask
    from sentinel.hooks.adapter import Adapter, RenderAllow
    from sentinel.jsontypes import JSON, JSONObject
    from sentinel.policy.gate.action import Action
    from sentinel.policy.gate.engine import Verdict
    from sentinel.policy.gate.rules import Rule

from sentinel.hooks import common

STARTED = time.monotonic()     # the hook's start (entry.main sets it): the client's timeout runs from about here
DEFAULT_WITHIN_S = 20.0        # hooks installed without --ask-within: their clients were given 30 s
POLL_S = 0.1                   # a decision reaches the waiting hook within this (plus one store read)
MIN_WINDOW_S = 2.0             # less than this left after judging: deny at once, file nothing
DECIDE_HINT = "sentinel approvals, the web console, or the notification's link"


class Interrupted(Exception):
    """A signal arrived while the hook waited for a decision."""


# -- the deadline ----------------------------------------------------------------------------------

def within_from(argv: list[str]) -> float:
    """`--ask-within N` (seconds from the hook's start) from the hook's extra arguments, else the default. Given
    more than once, the shortest wins (a shorter wait can never outlast the client's timeout); unreadable, the
    default."""
    found = []
    for i, arg in enumerate(argv):
        value = arg.partition("=")[2] if arg.startswith("--ask-within=") else \
            argv[i + 1] if arg == "--ask-within" and i + 1 < len(argv) else None
        if value is not None:
            try:
                found.append(max(0.0, float(value)))
            except ValueError:
                found.append(DEFAULT_WITHIN_S)
    return min(found) if found else DEFAULT_WITHIN_S


WITHIN_S = DEFAULT_WITHIN_S    # set by entry.main from the command line


# -- allowlist keys ------------------------------------------------------------------------------
# What "this exact call here" is for one action, as a [kind, value] pair of text (docs/hooks.md, "Allow once, or
# always"); an entry holds it with the client it was allowed for, and only that client's calls look it up. The
# kinds of the first allowlist (`bash`: the command alone; `file_write`: the path alone) are never made any more,
# so an entry of theirs matches no call: it allowed more than the call a person saw.

def keys_of(act: Action, root: str) -> list[str]:
    """The allowlist key of one action: a command with the directory it runs in; a write's resolved path with the
    SHA-256 of what it writes there; for any other call its name (`call_name`: an MCP call's server and tool) and
    the SHA-256 of its exact arguments."""
    if act.trigger == "bash":
        return ["command", _pair(run_in(act, root), act.command)]
    if act.trigger == "file_write" and act.file_path:
        return ["write", _pair(resolved_path(act.file_path, root), "sha256:" + written_digest(act))]
    return ["call", f"{call_name(act)} {_sha256(act.tool_input)}"]


def call_name(act: Action) -> str:
    """The name a call is shown and allowlisted by. An MCP call: always `SERVER/TOOL`, whatever the client's own
    spelling (`mcp__db__query`, `db-query`, Cline's `use_mcp_tool{server_name, tool_name}`, Cursor's bare `query`),
    so the same tool and arguments on another server is another call. Any other tool: its name. A server or MCP
    tool name that is empty or holds anything but letters, digits and `_.@:+-`, and another tool's name holding
    `/` or starting with `"`, are written as JSON strings, so no name passes for another: server `db` tool
    `db_drop` is `db/db_drop`, server `b` is `b/db_drop`, server `a/b` tool `c` is `"a/b"/c`, server `a` tool `b/c`
    is `a/"b/c"`, and a tool named `db/query` that is no MCP call is `"db/query"`."""
    if act.trigger == "mcp":
        return f"{_part(act.server)}/{_part(act.mcp_tool)}"
    return shown_tool(act.tool_name)


def shown_tool(name: str) -> str:
    """A tool's own name as shown: as a JSON string when it could read as an MCP call's `SERVER/TOOL`."""
    return json.dumps(name, ensure_ascii=False) if "/" in name or name.startswith('"') else name


def _part(text: str) -> str:
    """A server's or an MCP tool's name, bare when it can only be read one way, else as a JSON string."""
    import re

    return text if re.fullmatch(r"[A-Za-z0-9_.@:+-]+", text) else json.dumps(text, ensure_ascii=False)


def _pair(first: str, second: str) -> str:
    """Two texts as one unambiguous value (a JSON array): no directory or path can pass for part of a command."""
    return json.dumps([first, second], ensure_ascii=False)


def _sha256(value: object) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)  # ASCII: as the first `call` keys
    return hashlib.sha256(canonical.encode()).hexdigest()


def run_in(act: Action, root: str) -> str:
    """Where a command runs, resolved like a written path (`.`: the repository's root): `./deploy.sh` or `rm -rf
    build` mean another thing in another directory. `""` when the client sends no working directory (Cline):
    such a command is keyed where the client runs it, which the hook cannot tell apart."""
    cwd = act.cwd or common.text(act.tool_input, "cwd")
    return resolved_path(cwd, root) if cwd and "\x00" not in cwd else ""


def written_digest(act: Action) -> str:
    """SHA-256 of what a file write writes: its tool and its exact input (content, edits, patch text, mode), with
    the one path it names left out when it names one only (that path is the key's resolved path, so `./b.txt` and
    `b.txt` writing the same are one entry). An input naming several paths (a multi-file edit, a rename, a patch,
    which carries its paths in its text) is bound whole: each of its files is allowed for that exact call only."""
    from sentinel.policy.gate.action import written_paths

    found, complete = written_paths(act.tool_input)
    names = {name for name, _ in found}
    tool_input = _without_path(act.tool_input, names.pop()) if complete and len(names) == 1 else act.tool_input
    return _sha256({"tool": act.tool_name, "input": tool_input})


def _without_path(value: JSON, path: str, depth: int = 0) -> JSON:
    """`value` with every path key naming `path` emptied (the same walk as the gate's `written_paths`)."""
    from sentinel.policy.gate.action import PATH_KEYS, WALK_DEPTH

    if depth > WALK_DEPTH:
        return value
    if isinstance(value, list):
        return [_without_path(v, path, depth + 1) for v in value]
    if not isinstance(value, dict):
        return value
    out: JSONObject = {}
    for key, item in value.items():
        if key in PATH_KEYS and item == path:
            item = ""
        elif key in PATH_KEYS and isinstance(item, list):
            item = ["" if i == path else _without_path(i, path, depth + 1) for i in item]
        else:
            item = _without_path(item, path, depth + 1)
        out[key] = item
    return out


def resolved_path(path: str, root: str) -> str:
    """A written path as the file system resolves it (symlinks followed), relative to the resolved repository
    when inside it: `a/../b.txt`, `./b.txt` and a symlink to it are one entry."""
    real_root = os.path.realpath(root)
    full = os.path.realpath(os.path.join(root, path))
    rel = os.path.relpath(full, real_root)
    return full if rel == ".." or rel.startswith(".." + os.sep) else rel


def repository(root: str) -> str:
    return os.path.realpath(root)


# -- the queue ---------------------------------------------------------------------------------------

class LocalQueue:
    """The user's own store ($SENTINEL_HOME/state/sentinel.db, outside every repository)."""

    def __init__(self) -> None:
        from sentinel import paths
        from sentinel.engine.store import Store

        self.home = paths.home()
        self.store = Store.open(paths.state_dir(self.home) / "sentinel.db")

    def allowlisted(self, repo: str, client: str, keys: list[list[str]]) -> bool:
        from sentinel.engine import asks

        return asks.allowlisted(self.store, repo, client, keys)

    def file(self, ask: Ask, ttl_s: float) -> Ask:
        from sentinel import paths
        from sentinel.engine import asks

        filed = asks.file(self.store, ask, ttl_s, str(paths.runs_dir(self.home)))
        self._notify()
        return filed

    def _notify(self) -> None:
        """`notify:` targets hear of the ask at once: queued here, sent by the detached deliverer."""
        from sentinel import config as config_mod
        from sentinel.errors import SentinelError
        from sentinel.notify.dispatch import kick

        try:
            kick(self.store, config_mod.load(self.home), self.home)
        except (SentinelError, OSError) as exc:  # the ask stands: the console and `sentinel approvals` show it
            import sys

            sys.stderr.write(f"sentinel: notify: {exc}\n")

    def state(self, approval_id: str) -> JSONObject:
        from sentinel.engine import asks

        return asks.state(self.store, approval_id)

    def take(self, approval_id: str, digest: str) -> bool:
        from sentinel.engine import asks

        return asks.take(self.store, approval_id, digest)

    def withdraw(self, approval_id: str, why: str) -> bool:
        from sentinel.engine import asks

        return asks.withdraw(self.store, approval_id, why)

    def allowlist(self, repo: str | None) -> list[JSONObject]:
        from sentinel.engine import asks

        return asks.allowlist(self.store, repo)

    def revoke(self, repo: str, kind: str | None, value: str | None, client: str | None = None) -> int:
        from sentinel.engine import asks
        from sentinel.local.engine import operator_name

        return asks.revoke(self.store, repo, kind, value, client, by=operator_name())

    def close(self) -> None:
        self.store.close()


class SupervisorQueue:
    """The operator's queue: every step is one op on the supervisor's socket (sentinel/supervisor/ops/)."""

    def __init__(self, client: SystemEngine):
        self.client = client

    def _call(self, op: str, **args: object) -> "JSONObject":
        """One op on the supervisor's socket; its reply is an object (anything else: an error naming the op)."""
        from sentinel.errors import SentinelError

        got = self.client.call(op, None, **args)
        if not isinstance(got, dict):
            raise SentinelError(f"the supervisor's reply to {op} is not an object")
        return got

    def allowlisted(self, repo: str, client: str, keys: list[list[str]]) -> bool:
        return bool(self._call("hook_allowlisted", repository=repo, client=client, keys=keys).get("allowlisted"))

    def file(self, ask: Ask, ttl_s: float) -> Ask:
        got = self._call("hook_ask", client=ask.client, repository=ask.repository, tool=ask.tool,
                               arguments=ask.arguments, rule=ask.rule, reason=ask.reason, keys=ask.keys,
                               call_id=ask.call_id, ttl_s=ttl_s)
        ask.approval_id, ask.digest = str(got.get("approval_id") or ""), str(got.get("digest") or "")
        return ask

    def state(self, approval_id: str) -> JSONObject:
        return self._call("hook_ask_state", approval_id=approval_id)

    def take(self, approval_id: str, digest: str) -> bool:
        return bool(self._call("hook_ask_take", approval_id=approval_id, digest=digest).get("taken"))

    def withdraw(self, approval_id: str, why: str) -> bool:
        return bool(self._call("hook_ask_withdraw", approval_id=approval_id, why=why).get("withdrawn"))

    def allowlist(self, repo: str | None) -> list[JSONObject]:
        from sentinel.jsontypes import list_in

        entries = list_in(self._call("hook_allowlist", repository=repo).get("entries"))
        return [e for e in entries if isinstance(e, dict)]

    def revoke(self, repo: str, kind: str | None, value: str | None, client: str | None = None) -> int:
        revoked = self._call("hook_allowlist_revoke", repository=repo, kind=kind, value=value,
                             client=client).get("revoked")
        return revoked if isinstance(revoked, int) else 0

    def close(self) -> None:
        self.client.close()


def open_queue() -> SupervisorQueue | LocalQueue:
    """The supervisor's queue when one answers this user as an operator, else the user's own store."""
    import contextlib
    import io

    from sentinel.client.system import Denied, connect

    try:
        with contextlib.redirect_stderr(io.StringIO()):  # "system mode: ..." is for a person, not an agent
            client = connect()
    except Denied:
        client = None  # not an operator: this user's own queue
    return SupervisorQueue(client) if client is not None else LocalQueue()


# -- the hook's part ---------------------------------------------------------------------------------

def drop_allowlisted(queue: SupervisorQueue | LocalQueue, root: str, scoped: list[tuple[Action, list[Rule]]],
                     client: str) -> tuple[list[tuple[Action, list[Rule]]], set[int]]:
    """An action whose exact call is on the repository's allowlist for this client (the adapter's NAME) loses its
    `ask` rules: no judge call for them and nothing filed (its block and warn rules still apply). Returns what is
    left to judge, and the ids of the actions that were allowlisted. An action the gate's own-files rule holds is
    never looked up: its writes may land elsewhere than when it was allowed (`echo x > out.txt`, out.txt now a
    link to the hook settings)."""
    from sentinel.policy.gate.own import RULE_ID as OWN_FILES

    out: list[tuple[Action, list[Rule]]] = []
    allowed: set[int] = set()
    for act, rules in scoped:
        held_for_own = any(r.id == OWN_FILES for r in rules)
        if not held_for_own and any(r.severity == "ask" for r in rules) and \
                queue.allowlisted(repository(root), client, [keys_of(act, root)]):
            rules = [r for r in rules if r.severity != "ask"]
            allowed.add(id(act))
        if rules:
            out.append((act, rules))
    return out, allowed


def build(adapter: Adapter, verdict: Verdict, payload: JSONObject, acts: list[Action], root: str) -> Ask:
    from sentinel.engine.asks import Ask

    first = acts[0]
    # what the card shows is what the key holds: an MCP call's server and tool, never the client's wrapper name
    # and what it shows is what was judged: the call as the adapter read it, never another field of the payload
    # (a Copilot payload carrying a `tool_input` beside the `toolArgs` it is judged on)
    tool = call_name(first) if first.trigger == "mcp" else shown_tool(first.tool_name or "tool")
    arguments = first.tool_input
    call_id = str(payload.get("tool_use_id") or "call")[:200]
    return Ask(client=adapter.NAME, repository=repository(root), tool=tool, arguments=dict(arguments or {}),
               rule=",".join(dict.fromkeys(f.rule_id for f in verdict.asks)), reason=verdict.ask_reason(),
               keys=[keys_of(a, root) for a in acts], call_id=call_id)


def hold(adapter: Adapter, verdict: Verdict, payload: JSONObject, acts: list[Action], root: str,
         queue: SupervisorQueue | LocalQueue | None) -> common.Reply:
    """File the ask, wait for the decision, answer in the client's protocol. Every way out but an approval of
    this exact call denies."""
    rule = verdict.asks[0].rule_id
    try:
        left = WITHIN_S - (time.monotonic() - STARTED)
        if left < MIN_WINDOW_S:
            return denied(adapter, verdict, payload, rule, f"no decision within {int(max(0, WITHIN_S))} s "
                          "(no time was left to ask a person)")
        if queue is None:
            queue = open_queue()
        ask = queue.file(build(adapter, verdict, payload, acts, root), left)
        with _signals_interrupt():
            approved, why = wait(queue, ask, STARTED + WITHIN_S)
    except Exception as exc:  # a store error or a bug: fail closed, never let an unanswered ask through
        return denied(adapter, verdict, payload, rule,
                      f"Sentinel could not ask a person ({type(exc).__name__}: {exc}); denied")
    finally:
        if queue is not None:
            try:
                queue.close()
            except Exception:
                pass
    if approved:
        return allowed(adapter, verdict, payload, why)
    return denied(adapter, verdict, payload, rule, why)


def wait(queue: SupervisorQueue | LocalQueue, ask: Ask, deadline: float) -> tuple[bool, str]:
    """Poll the approval until it is decided or the deadline passes; (allowed, why)."""
    waited = int(max(0, WITHIN_S))
    try:
        while True:
            got = queue.state(ask.approval_id)
            if got["status"] != "pending":
                return _decided(queue, ask, got)
            if time.monotonic() >= deadline:
                break
            time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
        why = f"no decision within {waited} s (the approval expired; ask again to let a person decide)"
    except Interrupted as exc:
        why = f"the hook was stopped ({exc}) before anyone decided"
    if queue.withdraw(ask.approval_id, why):
        return False, why
    return _decided(queue, ask, queue.state(ask.approval_id))  # decided in the same instant: that decision stands


def _decided(queue: SupervisorQueue | LocalQueue, ask: Ask, got: JSONObject) -> tuple[bool, str]:
    by = got.get("by") or "?"
    if got["status"] == "approved" and got.get("digest") == ask.digest and queue.take(ask.approval_id, ask.digest):
        return True, f"approved by {by}"
    if got["status"] == "denied":
        return False, f"denied by {by}" + (f": {got['reason']}" if got.get("reason") else "")
    if got["status"] == "expired":
        return False, str(got.get("reason") or f"no decision within {int(max(0, WITHIN_S))} s")
    return False, f"the approval is {got['status']}, not approved for this call"


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(signum).name)


class _signals_interrupt:
    """SIGTERM, SIGHUP and SIGINT end the wait with a denial (the approval withdrawn), not a silent exit."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

    def __enter__(self) -> None:
        self.saved: dict[signal.Signals, signal._HANDLER] = {}
        for sig in self.SIGNALS:
            try:
                self.saved[sig] = signal.signal(sig, _raise)
            except ValueError:  # not the main thread (in-process tests): nothing to catch
                pass

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)


def allowed(adapter: Adapter, verdict: Verdict, payload: JSONObject, why: str) -> common.Reply:
    """The client's allow: its explicit one where it has it, else its ordinary pass (warnings still delivered)."""
    rest = _without_asks(verdict)
    render_allow: RenderAllow | None = getattr(adapter, "render_allow", None)
    if render_allow is not None:
        return render_allow(rest, f"Sentinel: {why}", payload)
    return adapter.render("pre", rest, payload)


def denied(adapter: Adapter, verdict: Verdict, payload: JSONObject, rule: str, why: str) -> common.Reply:
    from sentinel.policy.gate.engine import Finding

    rest = _without_asks(verdict)
    rest.findings.append(Finding(rule, "block", f"this call needed a person's approval: {why}", kind="ask"))
    return adapter.render("pre", rest, payload)


def _without_asks(verdict: Verdict) -> Verdict:
    from sentinel.policy.gate.engine import Verdict

    rest = Verdict()
    rest.findings = [f for f in verdict.findings if f.severity != "ask"]
    rest.errors, rest.held, rest.calls = list(verdict.errors), list(verdict.held), verdict.calls
    return rest
