"""Muzzle's section of config.yaml (owned by sentinel/muzzle)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MuzzleSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Route every model call of a run through Muzzle.")
    host: str = Field("127.0.0.1", description="Listen address of `sentinel muzzle serve`.")
    port: int = Field(8787, description="Listen port of `sentinel muzzle serve`.")
