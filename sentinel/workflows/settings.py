"""The `orchestration:` section of config.yaml: how deep delegation may go and what becomes of temporary
subagents (owned by sentinel/workflows and the child runs of sentinel/worker/children.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class OrchestrationSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_depth: int = Field(2, ge=0, description="How many levels of child runs below a run: a call of delegate, "
                                                "spawn or run_workflow deeper than this is refused.")
    temporary: Literal["discard", "save", "ask"] = Field(
        "discard", description="What becomes of a subagent `spawn` composed once its run ends: discard its "
                               "profile, save it to the roster, or ask (an approval to save it).")
