"""The web console's section of config.yaml (owned by sentinel/web).

    web:
      host: 127.0.0.1          # listen address; loopback only unless you change it
      port: 8789               # `sentinel web --port P` overrides it; 0 picks a free port
      allowed_hosts: []        # extra Host names the console answers to (e.g. a name for a non-loopback host)
      poll_s: 0.25             # how often the console looks for new approvals and run changes
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class WebSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="Listen address of `sentinel web` (loopback by default).")
    port: int = Field(8789, ge=0, le=65535, description="Listen port; `--port` overrides it, 0 picks a free one.")
    allowed_hosts: list[str] = Field(default_factory=list,
                                     description="Host names besides loopback the console answers to (DNS rebinding guard).")
    poll_s: float = Field(0.25, gt=0, le=5, description="Seconds between looks for new approvals and run changes.")
