"""Layer 5 of the decision (docs/architecture.md, Decisions on a tool call): an agent-authored tool runs `auto` only when an operator has
trusted the exact SHA-256 of its code.

    TrustLayer(trusted).check(ctx)      `trusted(run_id, tool, sha256)` answers from the trust store

The store is where the agent cannot write: the local state database in local mode, the supervisor's
root-owned database in system mode (the worker asks over its channel with the read-only op
`tool_trusted`; only an operator's approval records trust). Approving an untrusted call records its
hash; any edit changes the hash, so the next call pauses again; a denial trusts nothing.
"""

from __future__ import annotations

from typing import Callable

from sentinel.mcp.names import split_name
from sentinel.policy.decide import CallContext, LayerResult

Trusted = Callable[[str, str, str], bool]


class TrustLayer:
    name = "trust"

    def __init__(self, trusted: Trusted):
        self.trusted = trusted

    def check(self, ctx: CallContext) -> list[LayerResult]:
        if ctx.code_sha256 is None:
            return []
        short = ctx.code_sha256[:16]
        mcp = split_name(ctx.tool)
        if self.trusted(ctx.run_id, ctx.tool, ctx.code_sha256):
            what = f"tool list and code sha256 {short}… of MCP server {mcp[0]}" if mcp else f"code sha256 {short}… of {ctx.tool}"
            return [LayerResult("trust", "auto", f"{what} is trusted", rule_id="trust.trusted")]
        if mcp:
            server = mcp[0]
            return [LayerResult("trust", "needs_approval",
                                f"MCP server {server}: its command, tool list and code (sha256 {short}…) are not the ones "
                                f"trusted with `sentinel mcp trust {server}`; approving runs this call and trusts "
                                "this listing for this agent's tool", rule_id="trust.mcp_untrusted")]
        return [LayerResult("trust", "needs_approval",
                            f"agent-authored tool {ctx.tool}: its code (sha256 {short}…) is not trusted yet; "
                            "approving runs it and trusts this exact code", rule_id="trust.untrusted")]
