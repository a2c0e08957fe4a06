"""Scripted model servers for the coding-agent CLIs, each speaking its API's streaming dialect (SSE):

    Anthropic Messages        POST /v1/messages                                  (Claude Code)
    OpenAI Responses          POST /v1/responses                                 (Codex CLI)
    Gemini                    POST /v1beta/models/M:streamGenerateContent?alt=sse (Gemini CLI)
    OpenAI Chat Completions   POST /v1/chat/completions                          (Cline, Copilot CLI)

The script is the compatibility scenario: the first user message names the case, the server answers
with the case's tool calls one turn at a time (choosing, among the tools the client declared, the one
that does the job, with arguments in that tool's own shape), then with a final text. Every request
body is kept, so the run can tell what reached the model (a block's reason, a warning).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Callable

from sentinel.hooks.common import obj
from sentinel.hooks.compat import scenario
from sentinel.jsontypes import JSON, JSONObject
from sentinel.models.loopback import Loopback

FINAL = "Done."
Call = tuple[str, JSONObject]   # (tool name, arguments)
Events = list[tuple["str | None", JSON]]   # (SSE event name or None, data) in the order they are sent


# -- the script: which tool calls a case makes, in the client's own tools ---------------------


def _shell(command: str) -> list[Callable[[set[str], str], Call | None]]:
    def pick(tools: set[str], root: str) -> Call | None:
        candidates: tuple[Call, ...] = (
            ("Bash", {"command": command, "description": "run it"}),
            ("exec_command", {"cmd": command}), ("shell", {"command": ["bash", "-lc", command]}),
            ("run_shell_command", {"command": command}),
            ("bash", {"command": command, "description": "run it"}),
            ("run_commands", {"commands": [command]}), ("execute_command", {"command": command}))
        for name, args in candidates:
            if name in tools:
                return name, args
        return None
    return [pick]


def _patch(body: str) -> str:
    return f"*** Begin Patch\n{body}*** End Patch\n"


def _patch_via_shell(patch: str) -> Call:
    """Codex without a declared apply_patch tool: the model runs `apply_patch` through exec_command,
    which Codex intercepts and applies as a patch (its hooks see tool `apply_patch`)."""
    return "exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"}


def _write(tools: set[str], root: str) -> Call | None:
    path, text = f"{root}/protected/new.txt", "new file\n"
    patch = _patch("*** Add File: protected/new.txt\n+new file\n")
    candidates: tuple[Call, ...] = (
        ("Write", {"file_path": path, "content": text}), ("apply_patch", {"input": patch}),
        _patch_via_shell(patch),
        ("write_file", {"file_path": path, "content": text}),
        ("create", {"path": path, "file_text": text}),
        ("editor", {"command": "create", "path": path, "file_text": text, "new_text": text}))
    for name, args in candidates:
        if name in tools:
            return name, args
    return None


def _read(tools: set[str], root: str) -> Call | None:
    path = f"{root}/protected/keep.txt"
    candidates: tuple[Call, ...] = (("Read", {"file_path": path}), ("view", {"path": path}))
    for name, args in candidates:
        if name in tools:
            return name, args
    return None


def _edit(tools: set[str], root: str) -> Call | None:
    path, old, new = f"{root}/protected/keep.txt", scenario.KEEP.strip(), "changed"
    patch = _patch(f"*** Update File: protected/keep.txt\n@@\n-{old}\n+{new}\n")
    candidates: tuple[Call, ...] = (
        ("Edit", {"file_path": path, "old_string": old, "new_string": new}),
        ("apply_patch", {"input": patch}), _patch_via_shell(patch),
        ("replace", {"file_path": path, "old_string": old, "new_string": new,
        "instruction": "change the line"}),
        ("edit", {"path": path, "old_str": old, "new_str": new}),
        ("editor", {"command": "str_replace", "path": path, "old_text": old, "new_text": new,
        "old_str": old, "new_str": new}))
    for name, args in candidates:
        if name in tools:
            return name, args
    return None


def _mcp(tools: set[str], root: str) -> Call | None:
    for name in sorted(tools):
        if name.endswith("delete_file"):
            return name, {"path": "canary.txt"}
    return None


STEPS: dict[str, list[Callable[[set[str], str], Call | None]]] = {
    "block-shell": _shell("rm -f canary.txt"),
    "allow-shell": _shell("echo allowed > allowed.txt"),
    "block-write": [_write],
    "block-edit": [_read, _edit],
    "block-mcp": [_mcp],
    "warn": _shell("cat notes.txt"),
    "ask-approve": _shell(scenario.ASK_COMMAND),
    "ask-deny": _shell(scenario.ASK_COMMAND),
    "ask-expire": _shell(scenario.ASK_COMMAND),
}
CASE = re.compile(r"Sentinel compatibility case ([a-z-]+)")


def next_call(text: str, tools: set[str], done: int, root: str, log: list[str] | None = None) -> Call | None:
    """The tool call for this turn (None: the final answer). `done` = tool calls already made."""
    found = CASE.search(text)
    if not found or found.group(1) not in STEPS:
        return None
    calls = [c for c in (step(tools, root) for step in STEPS[found.group(1)]) if c is not None]
    call = calls[done] if done < len(calls) else None
    if call is not None and log is not None:
        log.append(call[0])
    return call


# -- the server ----------------------------------------------------------------------------------


class ScriptedAPI(Loopback):
    """One loopback server answering all four dialects; `root` is the project the calls act on."""

    THREAD = "scripted-api"

    def __init__(self, root: str, host: str = "127.0.0.1", port: int = 0):
        self.root = root
        self.requests: list[tuple[str, JSON]] = []
        self.called: list[str] = []   # scripted tool calls handed to the client
        self._lock = threading.Lock()
        self.listen(_handler(self), host, port)

    def seen(self) -> str:
        """Everything the clients sent (what the model saw), as one text."""
        with self._lock:
            return "\n".join(json.dumps(body, ensure_ascii=False) for _, body in self.requests)

    def record(self, path: str, body: JSON) -> None:
        with self._lock:
            self.requests.append((path, body))


def _handler(api: ScriptedAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _json(self, status: int, data: JSON) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            if path.endswith("/models"):
                return self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}],
                                        "models": [{"name": "models/scripted"}]})
            self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                parsed: JSON = json.loads(raw or b"{}")
            except ValueError:
                return self._json(400, {"error": {"message": "body is not JSON"}})
            path = self.path.split("?")[0]
            api.record(path, parsed)
            body = obj(parsed)
            for suffix, dialect in DIALECTS:
                if path.endswith(suffix) or (suffix.startswith(":") and suffix in path):
                    events = dialect(body, api.root, api.called)
                    return self._sse(events) if _streams(body, path) else self._json(200, _unstreamed(suffix, events))
            self._json(404, {"error": {"message": f"no route {path}"}})

        def _sse(self, events: Events) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for name, data in events:
                text = data if isinstance(data, str) else json.dumps(data)
                self.wfile.write(((f"event: {name}\n" if name else "") + f"data: {text}\n\n").encode())
                self.wfile.flush()
            self.close_connection = True

    return Handler


def _streams(body: JSONObject, path: str) -> bool:
    return bool(body.get("stream")) or "streamGenerateContent" in path


def _field(event: tuple[str | None, JSON], key: str) -> JSONObject:
    """An object inside one of the events this module built."""
    return obj(obj(event[1]).get(key))


def _unstreamed(suffix: str, events: Events) -> JSON:
    """The same answer without streaming (clients use it for side calls)."""
    if suffix == "/chat/completions":
        return _chat_whole(events)
    if suffix == "/responses":
        return _field(events[-1], "response")
    if suffix == "/messages":
        message = dict(_field(events[0], "message"))
        block = dict(_field(events[1], "content_block"))
        delta = _field(events[2], "delta")
        if block["type"] == "text":
            block["text"] = delta["text"]
        else:
            block["input"] = json.loads(str(delta["partial_json"]))
        return {**message, "content": [block], "stop_reason": _field(events[-2], "delta")["stop_reason"]}
    return events[0][1]


# -- dialects: request -> (conversation text, declared tools, calls made) -> SSE events ------------


def _text_of(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False)


def _objects(value: JSON) -> list[JSONObject]:
    """The objects in a JSON list a client sent (anything else holds none)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _names(declared: list[JSONObject], key: str = "name") -> set[str]:
    return {name for d in declared if isinstance(name := d.get(key), str)}


def anthropic(body: JSONObject, root: str, called: list[str] | None = None) -> Events:
    messages = _objects(body.get("messages"))
    first: list[JSON] = [m for m in messages if m.get("role") == "user"]
    done = sum(1 for m in messages if m.get("role") == "assistant"
               for b in _objects(m.get("content")) if b.get("type") == "tool_use")
    tools = _names(_objects(body.get("tools")))
    call = next_call(_text_of(first), tools, done, root, called)
    msg_id, model = f"msg_{int(time.time() * 1000)}", body.get("model") or "scripted"
    usage: JSON = {"input_tokens": 10, "output_tokens": 5}
    events: Events = [("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": usage}})]
    if call is None:
        events += [("content_block_start", {"type": "content_block_start", "index": 0,
                                            "content_block": {"type": "text", "text": ""}}),
                   ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": FINAL}}),
                   ("content_block_stop", {"type": "content_block_stop", "index": 0})]
        stop = "end_turn"
    else:
        events += [("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                        "type": "tool_use", "id": f"toolu_{done}_{msg_id[-6:]}", "name": call[0], "input": {}}}),
                   ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "input_json_delta", "partial_json": json.dumps(call[1])}}),
                   ("content_block_stop", {"type": "content_block_stop", "index": 0})]
        stop = "tool_use"
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": 5}}),
               ("message_stop", {"type": "message_stop"})]
    return events


def _declared(t: JSONObject, namespace: str = "") -> tuple[str, str]:
    """(type, namespace) of one tool the client declared."""
    return str(t.get("type", "function")), namespace


def responses(body: JSONObject, root: str, called: list[str] | None = None) -> Events:
    items = _objects(body.get("input"))
    first: JSON = [i for i in items if i.get("role") == "user"] or body.get("input")  # a bare string: one user turn
    done = sum(1 for i in items if i.get("type") in ("function_call", "custom_tool_call", "local_shell_call"))
    tools: dict[str, tuple[str, str]] = {}   # name -> (type, namespace)
    for t in _objects(body.get("tools")):
        name = t.get("name")
        if t.get("type") == "namespace":  # Codex groups an MCP server's tools: namespace mcp__<server>
            inner = _objects(t.get("tools"))
            tools.update({n: _declared(f, str(name)) for f in inner if isinstance(n := f.get("name"), str) and n})
        elif isinstance(name, str) and name:
            tools[name] = _declared(t)
    call = next_call(_text_of(first), set(tools), done, root, called)
    rid = f"resp_{int(time.time() * 1000)}"
    item: JSONObject
    if call is None:
        item = {"type": "message", "id": f"msg_{rid}", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": FINAL, "annotations": []}]}
    elif tools[call[0]][0] == "custom":  # a freeform tool (Codex's apply_patch): the raw input text
        item = {"type": "custom_tool_call", "id": f"ctc_{rid}", "status": "completed", "call_id": f"call_{done}_{rid}",
                "name": call[0], "input": call[1].get("input", "")}
    else:
        item = {"type": "function_call", "id": f"fc_{rid}", "status": "completed", "call_id": f"call_{done}_{rid}",
                "name": call[0], "arguments": json.dumps(call[1])}
        if tools[call[0]][1]:
            item["namespace"] = tools[call[0]][1]
    response: JSONObject = {"id": rid, "object": "response", "created_at": int(time.time()), "status": "completed",
                "model": body.get("model") or "scripted", "output": [item],
                "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                          "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
    created = {**response, "status": "in_progress", "output": []}
    return [("response.created", {"type": "response.created", "response": created}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": response})]


def gemini(body: JSONObject, root: str, called: list[str] | None = None) -> Events:
    contents = _objects(body.get("contents"))
    first: list[JSON] = [c for c in contents if c.get("role") == "user"]
    done = sum(1 for c in contents if c.get("role") == "model"
               for p in _objects(c.get("parts")) if "functionCall" in p)
    tools = _names([d for t in _objects(body.get("tools")) for d in _objects(t.get("functionDeclarations"))])
    call = next_call(_text_of(first), tools, done, root, called)
    part: JSON = {"text": FINAL} if call is None else {"functionCall": {"name": call[0], "args": call[1]}}
    chunk: JSON = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
             "modelVersion": "scripted"}
    return [(None, chunk)]


def chat(body: JSONObject, root: str, called: list[str] | None = None) -> Events:
    messages = _objects(body.get("messages"))
    first: list[JSON] = [m for m in messages if m.get("role") == "user"]
    done = sum(len(_listed(m.get("tool_calls"))) for m in messages if m.get("role") == "assistant")
    tools = _names([obj(t.get("function")) for t in _objects(body.get("tools"))])
    call = next_call(_text_of(first), tools, done, root, called)
    chunk_id = f"chatcmpl-{int(time.time() * 1000)}"
    base: JSONObject = {"id": chunk_id, "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": body.get("model") or "scripted"}
    delta: JSONObject
    if call is None:
        delta = {"role": "assistant", "content": FINAL}
        finish = "stop"
    else:
        delta = {"role": "assistant", "content": None, "tool_calls": [{
            "index": 0, "id": f"call_{done}_{chunk_id[-6:]}", "type": "function",
            "function": {"name": call[0], "arguments": json.dumps(call[1])}}]}
        finish = "tool_calls"
    usage: JSON = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return [(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage}),
            (None, "[DONE]")]


def _listed(value: JSON) -> list[JSON]:
    return value if isinstance(value, list) else []


def _choice(event: tuple[str | None, JSON]) -> JSONObject:
    """The first choice of a chat chunk this module built."""
    return obj(_listed(obj(event[1]).get("choices"))[0])


def _chat_whole(events: Events) -> JSONObject:
    first, last = obj(events[0][1]), obj(events[1][1])
    message = {k: v for k, v in obj(_choice(events[0]).get("delta")).items()}
    for call in _objects(message.get("tool_calls")):
        call.pop("index", None)
    return {**first, "object": "chat.completion", "usage": last.get("usage"),
            "choices": [{"index": 0, "message": message, "finish_reason": _choice(events[1])["finish_reason"]}]}


Dialect = Callable[[JSONObject, str, "list[str] | None"], Events]
DIALECTS: tuple[tuple[str, Dialect], ...] = (
    ("/messages", anthropic), ("/responses", responses), (":streamGenerateContent", gemini),
    (":generateContent", gemini), ("/chat/completions", chat))
