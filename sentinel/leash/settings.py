"""Leash's section of config.yaml (owned by sentinel/leash)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class LeashSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tools: Literal["sandboxed", "plain"] = Field(
        "sandboxed", description="Run tool processes under the tool profile (default) or as plain subprocesses."
    )
    proxy_host: str = Field("127.0.0.1", description="Listen address of the egress proxy (`sentinel leash proxy`).")
    proxy_port: int = Field(8790, ge=1, le=65535, description="Listen port of the egress proxy; tools may connect only here.")
    policy_dir: str = Field("/etc/sentinel/leash", description="System mode: where `<user>.yaml` Leash policies live.")
    audit_log: str | None = Field(
        None, description="JSONL file the egress proxy appends allow/deny records to (default: the audit database)."
    )
