"""Inspection of model traffic: outbound redaction and block rules, inbound flagging, redaction and tool calls.

    Inspector.request(body)      -> (body with secrets replaced, findings)   raises `blocked` (403)
    Inspector.response(data)     -> findings, for a whole chat.completion (redacted in place)
    Inspector.stream()           -> StreamInspector: chunk in, chunks out, tail held across chunks

Outbound, every string of the request body is redacted before it leaves: message
contents of any shape, names, tool call arguments (current and legacy), tool
descriptions and schemas, `response_format`, `stop`, `user`, `metadata`, and any field
a client adds. Object keys are inspected like values (a tool parameter's name, a
`metadata` or `logit_bias` key can carry a secret too): a secret in a key is replaced
by its placeholder, and a body where two keys of one object would then collide is
refused (400, naming the object's path). A value under a key that names a secret
(`"api_key": "..."`) is replaced whole. Inbound, secrets the model echoes are
flagged and (by default) redacted, and its tool calls are recorded for the log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator

from sentinel.jsontypes import JSON, JSONObject, list_in, object_in
from sentinel.muzzle.errors import MuzzleError, bad_request
from sentinel.muzzle.redact import Finding, Redactor, StreamRedactor

if TYPE_CHECKING:
    from sentinel.muzzle.settings import BlockRule, MuzzleSettings

MAX_DEPTH = 256  # deeper bodies are refused, never forwarded uninspected
_BLOCK_WINDOW = 1024  # a streamed response is checked over what is new plus this much before it


def blocked(rule: "BlockRule", direction: str) -> MuzzleError:
    why = f": {rule.message}" if rule.message else ""
    return MuzzleError(403, "blocked", f"Muzzle blocked the {direction}: rule {rule.id!r} matched{why}")


@dataclass
class Inspector:
    redactor: Redactor
    settings: "MuzzleSettings"
    _rules: list[tuple["BlockRule", re.Pattern[str]]] = field(default_factory=list, init=False)
    _by_direction: dict[str, list[tuple["BlockRule", re.Pattern[str]]]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._rules = [(r, re.compile(r.pattern)) for r in self.settings.block]
        self._by_direction = {d: [(r, rx) for r, rx in self._rules if r.on in (d, "both")]
                              for d in ("request", "response")}

    def rules(self, direction: str) -> list[tuple["BlockRule", re.Pattern[str]]]:
        return self._by_direction[direction]

    def check_block(self, text: str, direction: str) -> None:
        for rule, rx in self._by_direction[direction]:
            if rx.search(text):
                raise blocked(rule, direction)

    # -- outbound -----------------------------------------------------------------

    def request(self, body: JSONObject) -> tuple[JSONObject, list[Finding]]:
        findings: list[Finding] = []
        memo: dict[tuple[str | None, str], tuple[str, list[Finding]]] = {}  # "role": "assistant" comes often

        def clean(key: str | None, text: str) -> str:
            hit = memo.get((key, text))
            if hit is None:
                self.check_block(text, "request")
                hit = memo[(key, text)] = self.redactor.redact(text) if key is None else \
                    self.redactor.redact_named(key, text)
            findings.extend(hit[1])
            return hit[0]

        try:
            return _walk_object(body, clean, ()), findings
        except RecursionError:
            raise bad_request("the request body is nested too deeply") from None

    # -- inbound ------------------------------------------------------------------

    def response(self, data: JSONObject) -> list[Finding]:
        findings: list[Finding] = []

        def clean(text: str) -> str:
            self.check_block(text, "response")
            out, found = self.redactor.redact(text)
            findings.extend(found)
            return out if self.settings.redact_responses else text

        for choice in list_in(data.get("choices")):
            msg = choice.get("message") if isinstance(choice, dict) else None
            if isinstance(choice, dict) and isinstance(msg, dict):
                choice["message"] = _map_message(msg, clean)
        return findings

    def stream(self) -> "StreamInspector":
        return StreamInspector(self)


Clean = Callable[[str | None, str], str]


def _walk_object(value: JSONObject, clean: Clean, path: tuple[str, ...]) -> JSONObject:
    """A copy of a JSON object with every string inside, keys included, replaced by `clean(its key or None, it)`
    (a key is cleaned as text of its own: its name says nothing about itself)."""
    if len(path) > MAX_DEPTH:
        raise RecursionError
    out: JSONObject = {}
    for k, v in value.items():
        key = clean(None, k)
        if key in out:
            where = ".".join(path) or "the body"
            raise bad_request(f"{where}: two keys are the same once their secrets are redacted; "
                              "a secret does not belong in a key")
        out[key] = clean(k, v) if isinstance(v, str) else _walk(v, clean, (*path, key))
    return out


def _walk(value: JSON, clean: Clean, path: tuple[str, ...]) -> JSON:
    """`_walk_object` for any JSON value (an array's strings are cleaned with no key)."""
    if len(path) > MAX_DEPTH:
        raise RecursionError
    if isinstance(value, dict):
        return _walk_object(value, clean, path)
    if isinstance(value, list):
        return [clean(None, v) if isinstance(v, str) else _walk(v, clean, (*path, str(i)))
                for i, v in enumerate(value)]
    return value


def _map_message(msg: JSONObject, fn: Callable[[str], str]) -> JSONObject:
    """A copy of one message with `fn` applied to every text it carries."""
    out = dict(msg)
    content = msg.get("content")
    if isinstance(content, str):
        out["content"] = fn(content)
    elif isinstance(content, list):
        out["content"] = [_map_part(p, fn) for p in content]
    calls = msg.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [_map_call(c, fn) for c in calls]
    return out


def _map_part(part: JSON, fn: Callable[[str], str]) -> JSON:
    text = part.get("text") if isinstance(part, dict) else None
    return {**part, "text": fn(text)} if isinstance(part, dict) and isinstance(text, str) else part


def _map_call(call: JSON, fn: Callable[[str], str]) -> JSON:
    func = call.get("function") if isinstance(call, dict) else None
    arguments = func.get("arguments") if isinstance(func, dict) else None
    if not isinstance(call, dict) or not isinstance(func, dict) or not isinstance(arguments, str):
        return call
    return {**call, "function": {**func, "arguments": fn(arguments)}}


def tool_calls_of(data: JSONObject) -> list[dict[str, str]]:
    """The tool calls of a whole chat.completion, for the log."""
    out = []
    for choice in list_in(data.get("choices")):
        msg = choice.get("message") if isinstance(choice, dict) else None
        calls = msg.get("tool_calls") if isinstance(msg, dict) else None
        for call in calls if isinstance(calls, list) else []:
            func = object_in(call.get("function") if isinstance(call, dict) else None)
            out.append({"id": str(call.get("id", "") if isinstance(call, dict) else ""), "name": str(func.get("name", "")),
                        "arguments": str(func.get("arguments", ""))})
    return out


@dataclass
class _Call:
    """One streamed tool call as the log records it: its id and name, its arguments as redacted, in pieces."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamInspector:
    """Rewrites a chunk stream: content and tool-call arguments pass through StreamRedactors per slot."""

    def __init__(self, inspector: Inspector):
        self.inspector = inspector
        self.redact = inspector.settings.redact_responses
        self.rules = inspector.rules("response")
        self._slots: dict[tuple[int, int], StreamRedactor] = {}
        self._seen: dict[tuple[int, int], str] = {}
        self.calls: dict[tuple[int, int], _Call] = {}
        self.usage: JSON = None
        self.text_chars = 0

    @property
    def findings(self) -> list[Finding]:
        return [f for s in self._slots.values() for f in s.findings]

    @property
    def tool_calls(self) -> list[dict[str, str]]:
        return [{"id": c.id, "name": c.name, "arguments": "".join(c.arguments)}
                for _, c in sorted(self.calls.items())]

    def process(self, chunk: JSONObject) -> Iterator[JSONObject]:
        """The chunks to send for one upstream chunk (none while text is held back)."""
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            yield chunk
            return
        for choice in choices:
            if isinstance(choice, dict) and choice.get("finish_reason"):
                yield from self._flushed(chunk, _index(choice))
        kept: list[JSON] = [c for c in (self._choice(c) for c in choices) if c is not None]
        if kept or not choices:
            yield {**chunk, "choices": kept}

    def finish(self, template: JSONObject | None) -> Iterator[JSONObject]:
        """Whatever is still held when the stream ends without a finish_reason."""
        for index in sorted({i for i, _ in self._slots}):
            yield from self._flushed(template or {}, index)

    def _choice(self, choice: JSON) -> JSON | None:
        sent = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or not isinstance(sent, dict):
            return choice
        index = _index(choice)
        delta = dict(sent)
        content, calls = delta.get("content"), delta.get("tool_calls")
        if isinstance(content, str) and content:
            delta["content"] = self._feed((index, -1), content)
            if not delta["content"]:
                del delta["content"]
        if isinstance(calls, list):
            delta["tool_calls"] = [self._call(index, tc) for tc in calls]
        if not delta and not choice.get("finish_reason") and "logprobs" not in choice:
            return None
        return {**choice, "delta": delta}

    def _call(self, index: int, tc: JSON) -> JSON:
        if not isinstance(tc, dict):
            return tc
        slot = (index, _index(tc))
        rec = self.calls.setdefault(slot, _Call())
        sent_id = tc.get("id")
        rec.id = (sent_id if isinstance(sent_id, str) else str(sent_id)) if sent_id else rec.id
        func = tc.get("function")
        if not isinstance(func, dict):
            return tc
        name = func.get("name") or ""
        rec.name += name if isinstance(name, str) else str(name)
        args = func.get("arguments")
        if isinstance(args, str) and args:
            func = {**func, "arguments": self._feed(slot, args)}
        return {**tc, "function": func}

    def _feed(self, slot: tuple[int, int], piece: str) -> str:
        redactor = self._slots.get(slot)
        if redactor is None:
            redactor = self._slots[slot] = StreamRedactor(self.inspector.redactor)
        self.text_chars += len(piece)
        self._check(slot, piece)
        out = redactor.feed(piece)
        if slot[1] >= 0:  # the log records arguments as redacted, whatever the caller is sent
            self.calls[slot].arguments.append(out)
        return out if self.redact else piece

    def _check(self, slot: tuple[int, int], piece: str) -> None:
        if not self.rules:
            return
        seen = self._seen.get(slot, "")[-_BLOCK_WINDOW:] + piece
        self._seen[slot] = seen
        for rule, rx in self.rules:
            if rx.search(seen):
                raise blocked(rule, "response")

    def _flushed(self, template: JSONObject, index: int) -> Iterator[JSONObject]:
        """One chunk carrying the text held back for choice `index`, if there is any."""
        delta: JSONObject = {}
        calls: list[JSON] = []
        for (i, j), redactor in sorted(self._slots.items()):
            if i != index:
                continue
            rest = redactor.flush()
            if rest and j >= 0:
                self.calls[(i, j)].arguments.append(rest)
            if not rest or not self.redact:
                continue
            if j < 0:
                delta["content"] = rest
            else:
                calls.append({"index": j, "function": {"arguments": rest}})
        if calls:
            delta["tool_calls"] = calls
        if delta:
            yield {**{k: v for k, v in template.items() if k != "usage"},
                   "choices": [{"index": index, "delta": delta}]}


def _index(item: JSONObject) -> int:
    """A choice's or a streamed tool call's `index` (0 when it has none), as the upstream numbered it."""
    index = item.get("index") or 0
    return int(index) if isinstance(index, (int, float, str)) else 0
