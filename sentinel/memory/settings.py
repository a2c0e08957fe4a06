"""Memory's section of config.yaml (owned by sentinel/memory)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MemorySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index_max_chars: int = Field(4000, ge=0, description="How much of the memory index a system prompt shows "
                                                         "(most recently updated notes first).")
    note_max_chars: int = Field(20000, ge=100, description="Largest note `remember` writes.")
    recall_limit: int = Field(5, ge=1, le=50, description="Notes `recall` returns when the call names no limit.")
    recall_max: int = Field(20, ge=1, le=200, description="Most notes one `recall` may return.")
