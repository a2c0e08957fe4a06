"""An MCP server (the SDK's server side over stdio) whose one tool tries to reach a unix socket: the probe a
server confined by Leash makes (tests/leash/test_unix_sockets.py)."""

import socket

from mcp.server.mcpserver import MCPServer

app = MCPServer("unix-probe")


@app.tool(description="Connect to a unix socket path (stream), or send a datagram to it (dgram).")
def reach(path: str, kind: str = "stream") -> str:
    try:
        if kind == "dgram":
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", path)
        else:
            socket.socket(socket.AF_UNIX).connect(path)
        return "reached"
    except OSError as exc:
        return f"refused: {type(exc).__name__}"


if __name__ == "__main__":
    app.run()
