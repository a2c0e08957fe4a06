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
from typing import TYPE_CHECKING, Any, Callable, Iterator

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

    def request(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[Finding]]:
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
            return _walk(body, clean, ()), findings
        except RecursionError:
            raise bad_request("the request body is nested too deeply") from None

    # -- inbound ------------------------------------------------------------------

    def response(self, data: dict[str, Any]) -> list[Finding]:
        findings: list[Finding] = []

        def clean(text: str) -> str:
            self.check_block(text, "response")
            out, found = self.redactor.redact(text)
            findings.extend(found)
            return out if self.settings.redact_responses else text

        for choice in data.get("choices") or []:
            msg = choice.get("message") if isinstance(choice, dict) else None
            if isinstance(msg, dict):
                choice["message"] = _map_message(msg, clean)
        return findings

    def stream(self) -> "StreamInspector":
        return StreamInspector(self)


def _walk(value: Any, clean: Callable[[str | None, str], str], path: tuple[str, ...]) -> Any:
    """A copy of a JSON object or array with every string inside, keys included, replaced by `clean(its key or
    None, it)` (a key is cleaned as text of its own: its name says nothing about itself)."""
    if len(path) > MAX_DEPTH:
        raise RecursionError
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = clean(None, k) if isinstance(k, str) else k
            if key in out:
                where = ".".join(path) or "the body"
                raise bad_request(f"{where}: two keys are the same once their secrets are redacted; "
                                  "a secret does not belong in a key")
            out[key] = clean(k, v) if isinstance(v, str) else _walk(v, clean, (*path, str(key)))
        return out
    if isinstance(value, list):
        return [clean(None, v) if isinstance(v, str) else _walk(v, clean, (*path, str(i)))
                for i, v in enumerate(value)]
    return value


def _map_message(msg: dict[str, Any], fn: Callable[[str], str]) -> dict[str, Any]:
    """A copy of one message with `fn` applied to every text it carries."""
    out = dict(msg)
    content = msg.get("content")
    if isinstance(content, str):
        out["content"] = fn(content)
    elif isinstance(content, list):
        out["content"] = [{**p, "text": fn(p["text"])} if isinstance(p, dict) and isinstance(p.get("text"), str) else p
                          for p in content]
    calls = msg.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [_map_call(c, fn) for c in calls]
    return out


def _map_call(call: Any, fn: Callable[[str], str]) -> Any:
    func = call.get("function") if isinstance(call, dict) else None
    if not isinstance(func, dict) or not isinstance(func.get("arguments"), str):
        return call
    return {**call, "function": {**func, "arguments": fn(func["arguments"])}}


def tool_calls_of(data: dict[str, Any]) -> list[dict[str, str]]:
    """The tool calls of a whole chat.completion, for the log."""
    out = []
    for choice in data.get("choices") or []:
        msg = choice.get("message") if isinstance(choice, dict) else None
        calls = msg.get("tool_calls") if isinstance(msg, dict) else None
        for call in calls if isinstance(calls, list) else []:
            func = (call.get("function") if isinstance(call, dict) else None) or {}
            out.append({"id": str(call.get("id", "") if isinstance(call, dict) else ""), "name": str(func.get("name", "")),
                        "arguments": str(func.get("arguments", ""))})
    return out


class StreamInspector:
    """Rewrites a chunk stream: content and tool-call arguments pass through StreamRedactors per slot."""

    def __init__(self, inspector: Inspector):
        self.inspector = inspector
        self.redact = inspector.settings.redact_responses
        self.rules = inspector.rules("response")
        self._slots: dict[tuple[int, int], StreamRedactor] = {}
        self._seen: dict[tuple[int, int], str] = {}
        self.calls: dict[tuple[int, int], dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.text_chars = 0
        self.model: str | None = None

    @property
    def findings(self) -> list[Finding]:
        return [f for s in self._slots.values() for f in s.findings]

    @property
    def tool_calls(self) -> list[dict[str, str]]:
        return [{"id": c["id"], "name": c["name"], "arguments": "".join(c["arguments"])}
                for _, c in sorted(self.calls.items())]

    def process(self, chunk: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The chunks to send for one upstream chunk (none while text is held back)."""
        self.model = self.model or chunk.get("model")
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            yield chunk
            return
        for choice in choices:
            if isinstance(choice, dict) and choice.get("finish_reason"):
                yield from self._flushed(chunk, int(choice.get("index") or 0))
        kept = [c for c in (self._choice(c) for c in choices) if c is not None]
        if kept or not choices:
            yield {**chunk, "choices": kept}

    def finish(self, template: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
        """Whatever is still held when the stream ends without a finish_reason."""
        for index in sorted({i for i, _ in self._slots}):
            yield from self._flushed(template or {}, index)

    def _choice(self, choice: Any) -> dict[str, Any] | None:
        if not isinstance(choice, dict) or not isinstance(choice.get("delta"), dict):
            return choice
        index = int(choice.get("index") or 0)
        delta = dict(choice["delta"])
        if isinstance(delta.get("content"), str) and delta["content"]:
            delta["content"] = self._feed((index, -1), delta["content"])
            if not delta["content"]:
                del delta["content"]
        if isinstance(delta.get("tool_calls"), list):
            delta["tool_calls"] = [self._call(index, tc) for tc in delta["tool_calls"]]
        if not delta and not choice.get("finish_reason") and "logprobs" not in choice:
            return None
        return {**choice, "delta": delta}

    def _call(self, index: int, tc: Any) -> Any:
        if not isinstance(tc, dict):
            return tc
        slot = (index, int(tc.get("index") or 0))
        rec = self.calls.setdefault(slot, {"id": "", "name": "", "arguments": []})
        rec["id"] = tc.get("id") or rec["id"]
        func = tc.get("function")
        if not isinstance(func, dict):
            return tc
        rec["name"] += func.get("name") or ""
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
            self.calls[slot]["arguments"].append(out)
        return out if self.redact else piece

    def _check(self, slot: tuple[int, int], piece: str) -> None:
        if not self.rules:
            return
        seen = self._seen.get(slot, "")[-_BLOCK_WINDOW:] + piece
        self._seen[slot] = seen
        for rule, rx in self.rules:
            if rx.search(seen):
                raise blocked(rule, "response")

    def _flushed(self, template: dict[str, Any], index: int) -> Iterator[dict[str, Any]]:
        """One chunk carrying the text held back for choice `index`, if there is any."""
        delta: dict[str, Any] = {}
        calls = []
        for (i, j), redactor in sorted(self._slots.items()):
            if i != index:
                continue
            rest = redactor.flush()
            if rest and j >= 0:
                self.calls[(i, j)]["arguments"].append(rest)
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
