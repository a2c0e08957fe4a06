"""Pinning an MCP server: what `sentinel mcp trust NAME` hashes, and what an approval of a changed one shows.

    document(name, server, tools, code) -> dict   the server's transport, command or URL, its whole tool list and,
                                               for a stdio server, what runs (sentinel/mcp/launch.py `manifest`):
                                               the resolved command, directory, environment and the SHA-256 of
                                               its executable and code files
    digest(document) -> str                    SHA-256 of its canonical JSON
    shown(document, trusted) -> {file: text}   an approval's files: the listing, and its diff from the trusted one
    shows_listing(files, sha256) -> bool       do these files show exactly the listing whose hash was decided?
    paused_by_pin(reason) -> bool              did the pin (not only policy, the gate...) pause this call?
"""

from __future__ import annotations

import difflib
import hashlib
import json
from typing import Mapping, Protocol, Sequence

from sentinel.jsontypes import JSON, JSONObject
from sentinel.mcp.settings import McpServer


LISTING, DIFF = "mcp-tools.json", "changes.diff"


class Listed(Protocol):
    """A tool as its server lists it (sentinel/mcp/client.py ServerTool)."""

    @property
    def name(self) -> str: ...
    def document(self) -> JSONObject: ...


# A trusted pin as the engine returns it (`Engine.mcp_trust`): its sha256 and the document it hashed, and who
# trusted it when
Trusted = Mapping[str, object]


def document(name: str, server: McpServer, tools: Sequence[Listed], code: JSONObject | None = None) -> JSONObject:
    listing: list[JSON] = [t.document() for t in sorted(tools, key=lambda t: t.name)]
    doc: JSONObject = {"server": name, "transport": server.transport, "target": server.target, "tools": listing}
    if code is not None:
        doc["code"] = code
    return doc


def canonical(doc: JSONObject) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def digest(doc: JSONObject) -> str:
    return hashlib.sha256(canonical(doc).encode()).hexdigest()


def pretty(doc: JSONObject) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def diff(old: JSONObject, new: JSONObject) -> str:
    return "".join(difflib.unified_diff(pretty(old).splitlines(True), pretty(new).splitlines(True),
                                        "trusted", "now", n=2))


def shown(doc: JSONObject, trusted: Trusted | None) -> dict[str, str]:
    """The listing, plus its diff from the trusted listing when there is one and it differs."""
    files = {LISTING: pretty(doc)}
    if trusted is not None and trusted.get("sha256") != digest(doc):
        files[DIFF] = diff(json.loads(str(trusted["document"])), doc) or "(no textual change)\n"
    return files


def shows_listing(files: dict[str, str], sha256: str) -> bool:
    if LISTING not in files or not set(files) <= {LISTING, DIFF}:
        return False
    try:
        return digest(json.loads(files[LISTING])) == sha256
    except ValueError:
        return False


def reshown(files: dict[str, str], trusted: Trusted | None) -> dict[str, str]:
    """`files` (already checked by shows_listing) with the diff made again from `trusted`, not taken as sent."""
    return shown(json.loads(files[LISTING]), trusted)


def paused_by_pin(reason: str) -> bool:
    """Did the trust layer pause this call (its listing or code is not the trusted one), rather than policy or
    the rule gate alone? Its part of a decision's reason starts `trust: ` (decide joins the layers' reasons)."""
    return any(part.startswith("trust: ") for part in (reason or "").split("; "))
