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


class ContextSettings(BaseModel):
    """The `context:` section of config.yaml: compaction, the live session file and the curator."""

    model_config = ConfigDict(extra="forbid")

    compact_at_chars: int | None = Field(
        None, ge=1000, description="Compact a run's history when it grows past this many characters; null: "
                                   "derived from the model's context window (local models), else 120000.")
    summary_model: str | None = Field(None, description="provider/model that writes the summary; null: the run's "
                                                        "own model.")
    keep_recent_turns: int = Field(6, ge=1, description="Model turns (with their tool results) kept verbatim.")
    retry_after_turns: int = Field(3, ge=1, description="After a failed summary call, model turns to wait before "
                                                        "trying again.")
    curator_model: str | None = Field(None, description="provider/model that distils conventions and patterns "
                                                        "into MEMORY.md when a run ends; null: the run's own "
                                                        "model; \"off\": only the deterministic curator.")
    curate_every_checkpoints: int = Field(3, ge=0, description="Run the curator every N checkpoints (0: only at "
                                                               "the end of a run).")
