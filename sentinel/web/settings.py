"""The web console's section of config.yaml (owned by sentinel/web).

    web:
      host: 127.0.0.1          # listen address; loopback only unless you change it
      port: 8789               # `sentinel web --port P` overrides it; 0 picks a free port
      allowed_hosts: []        # extra Host names the console answers to (e.g. a name for a non-loopback host)
      poll_s: 0.25             # how often the console looks for new approvals and run changes
      public_url: null         # the console as a browser elsewhere reaches it (https://sentinel.example.com behind
                               # a TLS proxy): notification links use it; default http://127.0.0.1:<port>
      link_ttl_s: 900          # how long a one-tap decision link stays valid
      session_days: 14         # how long a browser stays signed in (sessions survive console restarts)
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
    public_url: str | None = Field(None, pattern=r"^https?://[^/?#]+(/[^?#]*)?$",
                                   description="The console's address as operators' browsers reach it (links use it).")
    link_ttl_s: float = Field(900.0, gt=0, le=7 * 86400, description="Seconds a one-tap decision link stays valid.")
    session_days: float = Field(14.0, gt=0, le=365, description="Days a signed-in browser stays signed in.")

    def base_url(self) -> str:
        """Where links point: `public_url`, else this machine's loopback and the configured port."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}"
