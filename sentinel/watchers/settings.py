"""The watchers' section of config.yaml (owned by sentinel/watchers); key names follow the watcher files.

    watchers:
      defaultHookModel: null             # a hook session's model when its watcher's fire.model names none
      hookResponseTimeoutMs: 30000       # how long a hook session has to notify before the fallback relay
      hookResponseFallbackMode: summary  # summary: deliver the callback's summary; none: deliver nothing
      deliveryAttempts: 5                # a failed delivery is retried this often (backoff), then lands in the inbox
      deliveryBackoffS: 2.0              # the first retry's delay; each next one doubles it
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FallbackMode = Literal["summary", "none"]


class WatcherSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    defaultHookModel: str | None = Field(None, description="Model of hook sessions whose watcher names none.")
    hookResponseTimeoutMs: int = Field(30000, ge=1, description="Milliseconds a hook session has to notify.")
    hookResponseFallbackMode: FallbackMode = Field("summary", description="none: no fallback delivery at all.")
    deliveryAttempts: int = Field(5, ge=1, le=50, description="Attempts of a failing delivery before the inbox.")
    deliveryBackoffS: float = Field(2.0, gt=0, description="Delay before the first retry; it doubles each time.")
