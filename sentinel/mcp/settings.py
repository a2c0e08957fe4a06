"""The `mcp_servers:` section of config.yaml (owned by sentinel/mcp): the MCP servers agents may be granted.

    mcp_servers:
      files:                             # its tools are mcp__files__<tool>
        command: [/usr/bin/python3, -m, some_server]   # stdio: started under Leash as the agent's user
        env: {LOG_LEVEL: warning}
        read: [/opt/servers/files]       # read-only paths it needs besides the workspace and system paths
        network: []                      # host:port the server needs (shown to the operator); none: no TCP
        read_only: [read_text]           # these tools run `auto`; every other one `needs_approval`
        tools: {delete: deny}            # per-tool verdicts, over read_only and the default
      docs:
        url: http://127.0.0.1:8931/mcp   # streamable HTTP
        headers: {Authorization: {secret: DOCS_TOKEN}}   # a Muzzle-held secret, never shown to the agent

An agent profile grants servers by name (`mcp: [files]`).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")  # no "__": the tool name's separator
NAME_RULE = "use lowercase letters and digits, single '-' or '_' between them, starting with a letter"
Verdict = Literal["auto", "needs_approval", "deny"]


class Secret(BaseModel):
    model_config = ConfigDict(extra="forbid")

    secret: str = Field(description="Name of a secret Muzzle holds: NAME=value in its keys file (muzzle.keys_file).")
    prefix: str = Field("", description="Text before the secret in the header, e.g. 'Bearer '.")


class McpServer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = ""
    command: list[str] | None = Field(None, description="stdio server: the command and its arguments.")
    args: list[str] = Field(default_factory=list, description="More arguments after `command`.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment of a stdio server (over a minimal one).")
    workdir: str | None = Field(None, description="A stdio server's working directory and HOME, which the agent must "
                                                  "not be able to write (default: a directory Sentinel makes for it: "
                                                  "$SENTINEL_HOME/mcp/NAME, /etc/sentinel/mcp/NAME in system mode).")
    url: str | None = Field(None, description="Streamable HTTP server: its endpoint URL.")
    headers: dict[str, str | Secret] = Field(default_factory=dict,
                                             description="HTTP headers; a {secret: NAME} value comes from Muzzle.")
    read: list[str] = Field(default_factory=list, description="Paths a stdio server reads besides the system, "
                                                              "the Python install and the workspace (its code).")
    network: list[str] = Field(default_factory=list,
                               description="host:port a stdio server connects to (via the agent's egress allowlist).")
    read_only: list[str] = Field(default_factory=list, description="Tools that run `auto` (they change nothing).")
    tools: dict[str, Verdict] = Field(default_factory=dict, description="Per-tool verdicts (over read_only).")
    pin: bool = Field(True, description="Calls pause for approval unless the tool list is the one trusted with "
                                        "`sentinel mcp trust NAME`.")
    agents: list[str] | None = Field(None, description="System mode: the agents (Linux users) whose profiles may "
                                                      "grant this server; unset, any agent's may. An agent's profile "
                                                      "is its own file, so this list is the operator's say.")
    timeout_s: float = Field(60.0, gt=0, description="Seconds one call may take before it fails.")
    start_timeout_s: float = Field(20.0, gt=0, description="Seconds the server may take to start and list its tools.")

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            import shlex

            return shlex.split(value)
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServer":
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of `command` (a stdio server) or `url` (a streamable HTTP server)")
        if self.command is not None and not self.command:
            raise ValueError("command must not be empty")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ValueError("url must start with http:// or https://")
        for entry in self.network:
            host, sep, port = entry.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"network entry {entry!r} must be host:port")
        return self

    @property
    def argv(self) -> list[str]:
        return [*(self.command or []), *self.args]

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    @property
    def target(self) -> str:
        """What the operator trusts: the command line or the URL."""
        import shlex

        return shlex.join(self.argv) if self.command is not None else str(self.url)

    def verdict(self, tool: str) -> Verdict:
        if tool in self.tools:
            return self.tools[tool]
        return "auto" if tool in self.read_only else "needs_approval"


def check_names(servers: dict[str, McpServer]) -> None:
    for name in servers:
        if not NAME.match(name):
            raise ValueError(f"server name {name!r}: {NAME_RULE}")
