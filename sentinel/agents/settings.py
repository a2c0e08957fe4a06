"""The `tools.authored:` section of config.yaml: limits of agent-authored tools (owned by sentinel/agents).

A tool's own `limits:` (in its tool.yaml) ask for values; each is capped by the operator's maximum here,
and a missing one takes the default here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class AuthoredToolSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cpu_s: int = Field(10, ge=1, description="CPU seconds of one call (RLIMIT_CPU) unless the tool asks for less "
                                             "or more.")
    timeout_s: float = Field(30.0, gt=0, description="Wall-clock seconds of one call before it is killed.")
    memory_mb: int = Field(256, ge=32, description="Memory of one call: the cgroup limit and RLIMIT_AS.")
    processes: int = Field(16, ge=1, description="Processes and threads one call may run (pids cgroup, RLIMIT_NPROC).")
    max_cpu_s: int = Field(60, ge=1, description="The most CPU seconds any tool may ask for.")
    max_timeout_s: float = Field(300.0, gt=0, description="The longest wall-clock timeout any tool may ask for.")
    max_memory_mb: int = Field(1024, ge=32, description="The most memory any tool may ask for.")
    code_max_chars: int = Field(65536, ge=256, description="Largest tool.py `create_tool`/`edit_tool` accept.")
    spare_idle_s: float = Field(60.0, ge=0, description="How long a confined interpreter started ahead of the next "
                                                        "call waits for it before it is stopped; 0: start none.")

    @model_validator(mode="after")
    def _defaults_within_maxima(self) -> "AuthoredToolSettings":
        for key in ("cpu_s", "timeout_s", "memory_mb"):
            if getattr(self, key) > getattr(self, f"max_{key}"):
                raise ValueError(f"{key} ({getattr(self, key)}) is above max_{key} ({getattr(self, f'max_{key}')})")
        return self
