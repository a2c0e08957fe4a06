"""Leash's section of config.yaml (owned by sentinel/leash)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class LeashSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tools: Literal["sandboxed", "plain"] = Field(
        "sandboxed", description="Run tool processes under the tool profile (default) or as plain subprocesses."
    )
