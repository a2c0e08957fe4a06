"""The rule gate's section of config.yaml for Sentinel's own runs (owned by sentinel/policy)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GateSettings(BaseModel):
    model_config = ConfigDict(extra="allow")

    enabled: bool = Field(True, description="Judge tool calls with the rules under $SENTINEL_HOME/rules.")
