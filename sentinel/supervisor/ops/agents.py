"""What agents may name and run, on the operator socket: the chat's catalog, trusted code of agent-authored
tools, MCP servers' pins, and the memory notes an operator's sync quarantined."""

from __future__ import annotations

from pathlib import Path

from sentinel.engine.operations import (AuditQuarantined, Catalog, McpTrust, McpTrustForget, McpTrustSet, TrustList,
                                        TrustRevoke)
from sentinel.errors import UsageError
from sentinel.frames import reply
from sentinel.supervisor import agentfs, registry
from sentinel.supervisor.hub import Client, Hub, caller
from sentinel.supervisor.ops.common import MAX_ROWS, Reply


def catalog(sup: Hub, conn: Client, req: Catalog) -> Reply:
    """Agents, skills and workflows a chat with this agent can name (read beneath the agent's home)."""
    from sentinel.agents import catalog, skills as skill_files

    store = sup.store
    agent, _ = registry.resolve(store, req.agent)
    pw = registry.account(agent, sup.settings.group)
    home, uid = pw.pw_dir, pw.pw_uid
    skills = {s.name: s for s in skill_files.bundled()}
    for name in filter(skill_files.NAME.match, agentfs.list_beneath(home, ".sentinel/skills", uid)):
        relative = f".sentinel/skills/{name}/SKILL.md"
        text = agentfs.read_text(home, relative, uid)
        if text is not None:
            skills[name] = skill_files.parse(name, text, Path(home, relative))
    profiles = [f"{agent.name}/{n[:-5]}" for n in agentfs.list_beneath(home, ".sentinel/agents", uid)
                if n.endswith(".yaml") and n[:-5] != agent.name]
    workflows = [n[:-5] for n in agentfs.list_beneath(home, ".sentinel/workflows", uid) if n.endswith(".yaml")]
    return reply({"agents": [{"name": n, "description": ""} for n in
                             [a.name for a in registry.all_agents(store)] + profiles],
                  "skills": catalog.listing(list(skills.values())),
                  "workflows": [{"name": n, "description": ""} for n in workflows]})


def trust_list(sup: Hub, conn: Client, req: TrustList) -> Reply:
    return reply(sup.store.trusted_tools(req.agent or None))


def trust_revoke(sup: Hub, conn: Client, req: TrustRevoke) -> Reply:
    if not req.tool:
        raise UsageError("TOOL: must not be empty")
    return reply(sup.store.revoke_trust(req.tool, agent=req.agent or None, code_sha256=req.code_sha256 or None,
                                        by=caller(conn).name))


def mcp_trust(sup: Hub, conn: Client, req: McpTrust) -> Reply:
    return reply(sup.store.mcp_trust(req.server))


def mcp_trust_set(sup: Hub, conn: Client, req: McpTrustSet) -> Reply:
    """Pin a server as the operator's `sentinel mcp trust` listed it: the hash must be the listing's."""
    import json

    from sentinel.mcp.pin import digest

    try:
        ok = digest(json.loads(req.document)) == req.sha256
    except ValueError:
        ok = False
    if not ok:
        raise UsageError("document: its SHA-256 is not sha256")
    sup.store.trust_mcp(req.server, req.sha256, req.document, caller(conn).name)
    return reply(None)


def mcp_trust_forget(sup: Hub, conn: Client, req: McpTrustForget) -> Reply:
    sup.store.untrust_mcp(req.server, caller(conn).name)
    return reply(None)


def audit_quarantined(sup: Hub, conn: Client, req: AuditQuarantined) -> Reply:
    """One audit record per quarantined note, by the operator the kernel names; strings only, each bounded."""
    by = caller(conn).name
    for finding in req.findings[:MAX_ROWS]:
        fields = {k: str(finding.get(k) or "")[:1000] for k in ("note", "title", "finding")}
        sup.store.audit("memory_quarantined", {"scope": req.scope[:200], **fields, "source": "cli", "by": by})
    return reply(None)
