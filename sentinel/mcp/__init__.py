"""MCP servers for Sentinel's own agents: configuration, confined servers, their tools through the decision
pipeline, pinning (docs/mcp.md)."""
