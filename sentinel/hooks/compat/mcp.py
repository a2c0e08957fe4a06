"""A stdio MCP server named `files` with one destructive tool, for the compatibility run.

    python -m sentinel.hooks.compat.mcp ROOT

Tools: `delete_file{path}` deletes ROOT/path; `list_files{}` lists ROOT. JSON-RPC 2.0, one message
per line (the stdio transport); only what a client needs: initialize, tools/list, tools/call, ping.
"""

from __future__ import annotations

import json
import os
import sys
from sentinel.jsontypes import JSON, JSONObject

TOOLS: list[JSON] = [
    {"name": "delete_file", "description": "Delete a file of the project.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "list_files", "description": "List the project's files.",
     "inputSchema": {"type": "object", "properties": {}}},
]


def call(root: str, name: str, args: JSONObject) -> JSONObject:
    if name == "list_files":
        return {"content": [{"type": "text", "text": "\n".join(sorted(os.listdir(root)))}]}
    if name == "delete_file":
        target = os.path.realpath(os.path.join(root, str(args.get("path") or "")))
        if not target.startswith(os.path.realpath(root) + os.sep) or not os.path.isfile(target):
            return {"content": [{"type": "text", "text": "no such file"}], "isError": True}
        os.unlink(target)
        return {"content": [{"type": "text", "text": f"deleted {args['path']}"}]}
    return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}


def answer(root: str, msg: JSONObject) -> JSONObject | None:
    method, params = msg.get("method"), msg.get("params")
    params = params if isinstance(params, dict) else {}
    if "id" not in msg:
        return None  # a notification
    result: JSON
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion") or "2025-06-18",
                       "capabilities": {"tools": {"listChanged": False}},
                       "serverInfo": {"name": "files", "version": "1.0.0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        arguments = params.get("arguments")
        result = call(root, str(params.get("name")), arguments if isinstance(arguments, dict) else {})
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


def main(argv: list[str]) -> int:
    root = os.path.abspath(argv[0] if argv else ".")
    for line in sys.stdin:
        try:
            msg: JSON = json.loads(line)
        except ValueError:
            continue
        reply = answer(root, msg) if isinstance(msg, dict) else None
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
