"""An MCP tool call's added latency over a built-in tool, with the server warm (kept across the run's calls).

    /opt/sentinel/venv/bin/python benchmarks/bench_mcp.py [--calls N]

A real stdio MCP server (the SDK's server side, one `echo` tool) runs under Leash with the tool profile
(as root; `leash.tools: plain` otherwise, and the report says which), registered as a run registers it
(sentinel.mcp.tools.McpTools). Each sample is what the loop does for one call after its decision: for
the MCP tool, pin (the listing's SHA-256 the trust layer checks) and run (one tools/call round trip over
the pipes); for the built-in, `read_file` of a small file. Samples alternate between the two so noise
hits both; the report gives each p50 and p90 and the added p50. Goal: <= 5 ms added p50.

Wall-clock latency on a shared 2-core machine is mostly waiting for a core (each call wakes the server
and then us), so the report also gives the CPU one call costs, which load does not change: ours
(process time) and, in plain mode where the server's pid is ours to read, the server's (/proc).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

SERVER = '''
from mcp.server.mcpserver import MCPServer
app = MCPServer("bench")

@app.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text

app.run()
'''


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    calls = parser.parse_args().calls
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["SENTINEL_HOME"] = str(root / "home")
        (root / "home").mkdir()
        workspace, code = root / "workspace", root / "server"
        workspace.mkdir()
        code.mkdir()
        (code / "server.py").write_text(SERVER)
        (workspace / "small.txt").write_text("hello\n" * 20)

        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {calls} calls each")
        for mode in (["sandboxed"] if os.geteuid() == 0 else []) + ["plain"]:
            measure(mode, workspace, code, calls)


def measure(mode: str, workspace: Path, code: Path, calls: int) -> None:
    from sentinel.mcp.settings import McpServer
    from sentinel.mcp.tools import McpTools
    from sentinel.tools import ToolContext
    from sentinel.tools.builtin import default_registry

    ctx = ToolContext(workspace=workspace, agent="sentinel", tools_mode=mode)
    registry = default_registry()
    server = McpServer(command=[sys.executable, str(code / "server.py")], read=[str(code)], read_only=["echo"])
    began = time.perf_counter()
    tools = McpTools({"bench": server}, ctx, audit=lambda kind, record: print(kind, record, file=sys.stderr))
    tools.register(registry)
    cold = time.perf_counter() - began
    mcp_tool = registry.get("mcp__bench__echo")
    assert mcp_tool is not None and mcp_tool.pin is not None, "the server offered no echo tool"

    def mcp_call() -> str:
        return registry.run(mcp_tool.name, {"text": "ping"}, ctx, mcp_tool.pin())

    def builtin_call() -> str:
        return registry.run("read_file", {"path": "small.txt"}, ctx)

    assert mcp_call() == "ping", mcp_call()
    for _ in range(20):  # warm both paths
        mcp_call(), builtin_call()
    mcp_s, builtin_s, ours = [], [], 0.0
    server_pid = getattr(tools.connections["bench"]._process, "pid", None)  # plain mode: a Popen
    server_cpu = _cpu(server_pid) if server_pid else None
    for _ in range(calls):
        t, c = time.perf_counter(), time.process_time()
        mcp_call()
        mcp_s.append(time.perf_counter() - t)
        ours += time.process_time() - c
        t = time.perf_counter()
        builtin_call()
        builtin_s.append(time.perf_counter() - t)
    theirs = (_cpu(server_pid) - server_cpu) / calls if server_pid else None
    tools.connections["bench"].close()
    ms = lambda v: v * 1000  # noqa: E731
    print(f"\n-- MCP server run {mode}" + (" under Leash (Landlock, seccomp, cgroup, rlimits)" if mode == "sandboxed"
                                            else " (a plain subprocess)"))
    print(f"server start + initialize + list (cold, once per process): {ms(cold):8.1f} ms")
    print(f"built-in read_file             p50 {ms(statistics.median(builtin_s)):6.2f} ms"
          f"   p90 {ms(percentile(builtin_s, 0.9)):6.2f} ms")
    print(f"mcp__bench__echo (pin + call)  p50 {ms(statistics.median(mcp_s)):6.2f} ms"
          f"   p90 {ms(percentile(mcp_s, 0.9)):6.2f} ms")
    added = ms(statistics.median(mcp_s) - statistics.median(builtin_s))
    print(f"added by MCP (p50)                 {added:6.2f} ms   goal <= 5 ms: {'met' if added <= 5 else 'MISSED'}")
    print(f"CPU per MCP call: ours {ms(ours / calls):.2f} ms" +
          (f", the server's {ms(theirs):.2f} ms" if theirs is not None else ""))


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
