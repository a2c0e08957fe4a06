"""The `local:` section of config.yaml: how `local/*` models run (owned by sentinel/models).

    local:
      tool_mode: native       # native | scaffold | grammar (see docs/models.md for the figures)
      memory_mb: null         # the model host's memory limit; null: 75% of the machine's memory
      idle_s: 900             # a model host with no call for this long exits (the next call starts one)
      threads: null           # llama.cpp threads; null: half the CPUs (see docs/models.md)
      context_tokens: 8192    # llama.cpp context window
      slots: 2                # prompts a host keeps evaluated, so side calls don't evict the agent's prompt
      tool_set: focused       # focused | all: the tools a task run on a local model is shown (see docs/models.md)
      max_tokens: 1024        # the longest reply, unless a call asks for less
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class LocalSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool_mode: Literal["scaffold", "native", "grammar"] = Field(
        "native", description="How a local model makes tool calls: plain-text JSON (scaffold), the model's chat "
                                "template (native), or the scaffold constrained by a grammar.")
    memory_mb: int | None = Field(None, ge=256, description="Memory limit of a model host (cgroup, else rlimit); "
                                                            "null: 75% of the machine's memory.")
    idle_s: float = Field(900.0, gt=0, description="Seconds without a call before a model host exits.")
    threads: int | None = Field(None, ge=1, description="llama.cpp threads (null: half the CPUs).")
    context_tokens: int = Field(8192, ge=512, description="llama.cpp context window in tokens.")
    tool_set: Literal["focused", "all"] = Field(
        "focused", description="The tools a task run on a local/* model is offered when its profile grants every "
                               "tool: focused leaves out the self-state and authoring tools (edit_soul, update_user, "
                               "create_tool, edit_tool, list_tools, delete_tool, create_skill, list_skills, "
                               "update_plan); all offers everything. Chat sessions and profiles that list their "
                               "tools are not affected.")
    slots: int = Field(2, ge=1, le=8, description="Prompts a model host keeps evaluated: calls with another "
                                                   "system prompt (the curator, a rule-gate judge) park the agent's "
                                                   "instead of evicting it. One context serves them all; a parked "
                                                   "prompt costs a copy of its KV cells (about 28 KB a token on the "
                                                   "default model), not another context or the weights again.")
    max_tokens: int = Field(1024, ge=1, description="The longest reply of a local model, unless a call asks for less.")
