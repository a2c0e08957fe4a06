"""The embedded model itself: one llama.cpp instance, loaded once, run inside a model host.

Only the model host (`sentinel.models.host_process`) imports llama.cpp; Muzzle and runs talk
to the host over its socket, so a fault in llama.cpp costs one call, not their process.

    Engine(model, tool_mode)    loads `local/<model>` (see `weights`), answers OpenAI-style calls

Tool calls, by `tool_mode`:
    scaffold   the worker's system prompt asks for a plain-text JSON call; tool traffic is
               flattened to user/assistant text, and calls are recovered from the reply
    native     the tools go to the model's own chat template (Qwen: <tool_call> tags)
    grammar    the scaffold, with the reply constrained to a tool call or {"answer": ...}

One instance serves every caller in turn (a llama.cpp context is not thread-safe); the
prompt prefix it already holds (system prompt, tool schemas, earlier steps) is reused by
llama.cpp, so a run's second step processes only what is new.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from sentinel.jsontypes import JSON, JSONObject
from sentinel.models.base import Completion, ModelError, OnDelta, ToolCall
from sentinel.models.toolcalls import recover
from sentinel.models.weights import path_of

if TYPE_CHECKING:
    from llama_cpp import Llama

TOOL_MODES = ("scaffold", "native", "grammar")
DEFAULT_MAX_TOKENS = 1024
DEFAULT_SLOTS = 2  # prompts a model host keeps evaluated (local.slots): an agent's and one for side calls
_TOOL_CALL = "<tool_call>"


class Engine:
    """One model, one llama.cpp context, up to `slots` prompts kept evaluated. A context keeps the tokens it
    evaluated last, so a call whose prompt starts the same way (an agent's next step, its next run in the same
    workspace) evaluates only what is new. Calls are routed by their system prompt: an agent's calls go on
    meeting their own evaluated prompt, and a side call with another prompt (the curator, a rule-gate judge, a
    summary) parks it instead of evicting it. On 2 cores a 3,000-token agent prompt costs over a minute to
    evaluate again.

    Memory: the weights are mmapped once (page cache, shared with every other host on the machine that maps
    the same file), and there is one context (its KV cache of `n_ctx` tokens and one compute buffer). A parked
    prompt is a copy of its sequence's KV cells only (about 28 KB a token on the default model), not a second
    context: a second `Llama` per slot cost a second mapping of the weights, a second private copy of the
    repacked weights and a second full-size KV cache and compute buffer (a host was ~4 GB resident)."""

    def __init__(self, model: str, *, tool_mode: str = "native", n_ctx: int = 8192, threads: int | None = None,
                 slots: int = DEFAULT_SLOTS):
        if tool_mode not in TOOL_MODES:
            raise ModelError(f"local tool mode {tool_mode!r}: expected one of {', '.join(TOOL_MODES)}")
        self.name = f"local/{model}"
        self.model = model
        self.tool_mode = tool_mode
        self.lock = threading.Lock()
        self.load_s = 0.0
        self.cached_tokens = 0  # of the last call's prompt, found evaluated in its context already
        self.n_ctx, self.threads, self.max_slots = n_ctx, threads, max(1, slots)
        self.path = path_of(model)
        began = time.monotonic()
        self.llama = self._load()
        self.active = _Slot()
        self.slots: list[_Slot] = [self.active]
        self.load_s = time.monotonic() - began

    def _load(self) -> Llama:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ModelError("the local model needs llama-cpp-python (pip install 'sentinel-harness[local]')") from None
        with _quiet_stderr(), _weights_mapped_only():  # llama.cpp logs to fd 2 even with verbose=False
            try:
                # flash attention: no n_ctx x batch attention-score buffer (~200 MB of the compute buffer at
                # 8,192 tokens), and faster prompt evaluation on CPU (measured: 991 tokens in 32.6 CPU-s, 42.2
                # without)
                return Llama(model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.threads or default_threads(),
                             verbose=False, seed=0, flash_attn=True)
            except (ValueError, RuntimeError, MemoryError) as exc:
                raise ModelError(f"model {self.name}: cannot load {self.path.name} ({exc})") from None

    def _slot(self, messages: list[JSONObject]) -> Llama:
        """The context, holding the prompt that last served this system prompt: that slot's, else a new slot while
        there is room, else the slot used longest ago (under self.lock)."""
        key = str(messages[0].get("content") or "") if messages and messages[0].get("role") == "system" else ""
        slot = next((s for s in self.slots if s.key == key), None)
        if slot is None and len(self.slots) < self.max_slots:
            slot = _Slot()
            self.slots.append(slot)
        if slot is None:
            slot = min(self.slots, key=lambda s: s.used)
            slot.parked = None  # evicted: its prompt is evaluated again when its caller comes back
        if slot is not self.active:
            self.active.parked = _park(self.llama)
            _restore(self.llama, slot.parked)
            slot.parked, self.active = None, slot
        slot.key, slot.used = key, time.monotonic()
        return self.llama

    def close(self) -> None:
        close = getattr(self.llama, "close", None)
        if close:
            close()

    def complete(self, messages: list[JSONObject], tools: list[JSONObject], *, on_delta: OnDelta | None = None,
                 response_format: JSONObject | None = None, max_tokens: int | None = None,
                 temperature: float = 0.0, stop: threading.Event | None = None) -> Completion:
        """One chat completion; `tools` are function schemas (name, description, parameters). Setting `stop`
        (the caller went away) ends the generation at the next token."""
        names = {str(t["name"]) for t in tools if isinstance(t, dict) and t.get("name")}
        kwargs: JSONObject = {"temperature": temperature, "max_tokens": max_tokens or DEFAULT_MAX_TOKENS}
        grammar_format = _grammar_format(response_format)
        if grammar_format is None and names and self.tool_mode == "grammar":
            grammar_format = {"type": "json_object", "schema": call_schema(sorted(names))}
        if grammar_format is not None:
            kwargs["response_format"] = grammar_format
        if self.tool_mode == "native" and names and response_format is None:
            kwargs["messages"] = to_native_chat(messages)
            kwargs["tools"] = [{"type": "function", "function": t} for t in tools]
        else:
            kwargs["messages"] = [dict(m) for m in to_plain_chat(messages)]
        wants_calls = bool(names) and response_format is None
        with self.lock:
            llama = self._slot(messages)
            text, usage = self._generate(llama, kwargs, on_delta, stop, wants_calls or grammar_format is not None)
        calls = recover(text, names, 0) if wants_calls else []
        if calls:
            text = text.split(_TOOL_CALL)[0].strip() if text.lstrip()[:1] not in ("{", "[", "`", "<") else ""
        elif self.tool_mode == "grammar" and names and response_format is None:
            text = _answer_of(text)
        return Completion(text, [ToolCall(f"call_{os.urandom(4).hex()}", c.name, c.arguments) for c in calls],
                          usage, self.name)

    def _generate(self, llama: Llama, kwargs: JSONObject, on_delta: OnDelta | None, stop: threading.Event | None,
                  calls: bool) -> tuple[str, dict[str, int]]:
        """Stream prose as it comes; a reply that opens like a call (`{`, `[`, a fence, a tag) is held back, so the
        caller gets it once, as a tool call, and never also as text (the model would see its call twice)."""
        parts: list[str] = []
        usage: dict[str, int] = {"prompt_tokens": 0, "completion_tokens": 0}
        before = _tokens(llama)
        streaming: bool | None = None if calls else True  # None: not known before the first visible character
        try:
            for chunk in _chat_stream(llama, kwargs):
                if stop is not None and stop.is_set():
                    break
                piece = _piece(chunk)
                if not piece:
                    continue
                parts.append(piece)
                usage["completion_tokens"] += 1
                if streaming is None and (head := "".join(parts).lstrip()):
                    streaming = head[0] not in "{[`<"
                    piece = "".join(parts)
                if streaming and calls and _TOOL_CALL in "".join(parts[-4:]):
                    streaming = False
                if on_delta and streaming:
                    on_delta(piece)
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"model {self.name}: {exc}") from None
        usage["prompt_tokens"] = int(getattr(llama, "n_tokens", 0)) - usage["completion_tokens"]
        self.cached_tokens = int(llama.longest_token_prefix(before, _tokens(llama)[:usage["prompt_tokens"]]))
        return "".join(parts), usage


def _chat_stream(llama: Llama, kwargs: JSONObject) -> Iterator[JSONObject]:
    """The stream chunks of one chat completion, as the JSON objects they are."""
    # the OpenAI JSON passed here is what llama_cpp parses, and each chunk it yields is a plain dict of that JSON
    # untyped: llama_cpp types each option with its own classes (message TypedDicts, LlamaGrammar)
    options: dict[str, Any] = kwargs
    chunks: Iterator[Any] = iter(llama.create_chat_completion(stream=True, **options))  # untyped: as above
    return chunks


def _piece(chunk: JSONObject) -> str:
    """The text a stream chunk adds ("" for a chunk with no choices or no content)."""
    choices = chunk.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    delta = first.get("delta") if isinstance(first, dict) else None
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else ""


@dataclass
class _Parked:
    """A prompt set aside: its tokens and a copy of its KV cells (llama_state_seq_get_data)."""

    tokens: list[int]
    state: Any  # untyped: a ctypes c_uint8 array, handed back to llama.cpp as it is
    size: int  # the bytes of `state` llama.cpp wrote


@dataclass
class _Slot:
    key: str | None = None  # the system prompt of the last call it served
    used: float = 0.0
    parked: _Parked | None = None  # its prompt while another slot holds the context


# Parking reads and sets llama-cpp-python's own prefix bookkeeping (`n_tokens`, `input_ids`, `_ctx`,
# `_requires_eval`, as in its save_state/load_state, which also copy a logits array of n_batch x vocab floats
# this needs not): the version is pinned (installer/install.sh), and tests/models/test_slots.py checks it.
def _park(llama: Llama) -> _Parked | None:
    import ctypes

    import llama_cpp

    n = int(llama.n_tokens)
    if n == 0:
        return None
    size = llama_cpp.llama_state_seq_get_size(llama._ctx.ctx, 0)
    state = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(llama._ctx.ctx, state, size, 0)
    if not 0 < written <= size:
        return None  # nothing kept: the prompt is evaluated again, only slower
    return _Parked([int(t) for t in llama.input_ids[:n]], state, written)


def _restore(llama: Any, parked: _Parked | None) -> None:  # untyped: llama_cpp leaves its context methods untyped
    """Empty the context, then put `parked` back in it (an empty context when there is none)."""
    import llama_cpp

    llama._ctx.kv_cache_clear()
    llama.n_tokens = 0
    llama._requires_eval = True  # the last prompt token is evaluated again for its logits
    if parked is None:
        return
    if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, parked.state, parked.size, 0) != parked.size:
        llama._ctx.kv_cache_clear()
        return
    llama.input_ids[:len(parked.tokens)] = parked.tokens
    llama.n_tokens = len(parked.tokens)


def _tokens(llama: Llama) -> list[int]:
    ids = getattr(llama, "input_ids", None)
    return [] if ids is None else [int(t) for t in ids]


def default_threads() -> int:
    """Half the CPUs: llama.cpp's threads meet at a barrier after every operation, so with one thread per CPU a
    single busy core stalls them all (measured on 2 shared cores: 0.4 tokens/s with 2 threads, 7.5 with 1)."""
    return max(1, (os.cpu_count() or 1) // 2)


def call_schema(names: list[str]) -> JSONObject:
    """A reply that is exactly one tool call, or a final answer."""
    enum: list[JSON] = list(names)
    call: JSONObject = {"type": "object", "properties": {"tool": {"type": "string", "enum": enum},
                                             "arguments": {"type": "object"}},
            "required": ["tool", "arguments"]}
    answer: JSONObject = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    return {"oneOf": [call, answer]}


def _answer_of(text: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return text
    return str(data.get("answer", text)) if isinstance(data, dict) else text


def _grammar_format(response_format: JSONObject | None) -> JSONObject | None:
    """llama-cpp-python constrains `json_object` (with a schema); OpenAI callers send `json_schema`."""
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return {"type": "json_object", **({"schema": schema} if isinstance(schema, dict) else {})}
    if response_format.get("type") == "json_object":
        return response_format
    return None


@contextlib.contextmanager
def _weights_mapped_only() -> Iterator[None]:
    """Load with every tensor in the mmapped file. By default llama.cpp repacks most Q4_K tensors into a private,
    interleaved copy at load (CPU_REPACK: 597 MiB of the default model's 1,066), which no other host can share;
    it bought about 10% of prompt evaluation (measured on 2 busy cores: 32.6 against 36.1 CPU-seconds for 991
    tokens) for 600 MB per host. `Llama()` takes no argument for it, so its default model parameters are
    patched for the duration of the load (a model host loads nothing else)."""
    import llama_cpp.llama_cpp as native  # the ctypes bindings `Llama()` reads its defaults from

    # untyped: ctypes bindings declared at run time, which the type checker cannot see
    defaults: Any = native.__dict__["llama_model_default_params"]

    def mapped_only() -> Any:  # untyped: a ctypes llama_model_params structure
        params = defaults()
        params.use_extra_bufts = False
        return params

    native.__dict__["llama_model_default_params"] = mapped_only
    try:
        yield
    finally:
        native.__dict__["llama_model_default_params"] = defaults


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _function(call: JSON) -> JSONObject:
    """The `function` object of an OpenAI tool call in a message ({} when it has none)."""
    function = call.get("function") if isinstance(call, dict) else None
    return function if isinstance(function, dict) else {}


def _calls(msg: JSONObject) -> list[JSON]:
    calls = msg.get("tool_calls")
    return calls if isinstance(calls, list) else []


def to_plain_chat(messages: list[JSONObject]) -> list[dict[str, str]]:
    """Flatten tool traffic into alternating user/assistant text the chat template accepts."""
    out: list[dict[str, str]] = []
    for msg in messages:
        role, content = msg.get("role"), _text(msg.get("content"))
        if role == "assistant" and msg.get("tool_calls"):
            calls: list[JSON] = [{"tool": _function(c).get("name"), "arguments": _loads(_function(c).get("arguments"))}
                                 for c in _calls(msg)]
            content = (content + "\n" if content else "") + json.dumps(calls[0] if len(calls) == 1 else calls)
        elif role == "tool":
            role, content = "user", f"Result of tool call {msg.get('tool_call_id', '')}:\n{content}"
        if role not in ("system", "user", "assistant") or not isinstance(role, str):
            role = "user"
        if out and out[-1]["role"] == role and role != "system":
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})
    return out


def to_native_chat(messages: list[JSONObject]) -> list[JSON]:
    """Messages as chat templates expect them: tool-call arguments as objects, content as text."""
    out: list[JSON] = []
    for msg in messages:
        msg = {**msg, "content": _text(msg.get("content"))}
        if msg.get("tool_calls"):
            msg["tool_calls"] = [{**(c if isinstance(c, dict) else {}),
                                  "function": {**_function(c), "arguments": _loads(_function(c).get("arguments"))}}
                                 for c in _calls(msg)]
        out.append(msg)
    return out


def _text(content: JSON) -> str:
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content) if content else ""


def _loads(text: JSON) -> JSON:
    if not isinstance(text, str):
        return text
    try:
        value: JSON = json.loads(text)
    except ValueError:
        return text
    return value
