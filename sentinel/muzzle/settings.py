"""Muzzle's section of config.yaml (owned by sentinel/muzzle).

    muzzle:
      enabled: true                 # route every run's model calls through Muzzle
      host: 127.0.0.1               # `sentinel muzzle serve` listen address
      port: 8787
      token_ttl_s: 86400            # lifetime of a run token
      budgets: {run_tokens: 2000000, agent_daily_tokens: null}
      redact:
        - {name: internal_host_key, pattern: 'ik_[a-z0-9]{24}'}
      block:
        - {id: no-rm-root, pattern: 'rm -rf /(\\s|$)', on: response, message: destructive command}
      scripted: false               # serve scripted/<script> models (tests and demos only)
      local_models: {coder: /srv/models/coder.gguf}   # GGUF files served as local/<name>
      max_request_bytes: 16777216   # larger request bodies are refused (413)
      max_connections_per_client: 64
      header_timeout_s: 10
      body_timeout_s: 60
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _check_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"invalid regular expression ({exc})") from None
    return value


class RedactPattern(_Strict):
    name: str = Field(description="Kind shown in the placeholder, e.g. [REDACTED:<name>:1a2b3c4d].",
                      pattern=r"^[a-z0-9_]{1,40}$")
    pattern: str = Field(description="Python regex; a named group `secret` limits what is replaced.")

    _check = field_validator("pattern")(_check_regex)


class BlockRule(_Strict):
    id: str = Field(description="Rule id shown to the caller and in the log.")
    pattern: str = Field(description="Python regex searched in message text (case-sensitive unless (?i)).")
    on: Literal["request", "response", "both"] = Field("both", description="Which direction the rule inspects.")
    message: str = Field("", description="Why; shown to the caller with the rule id.")

    _check = field_validator("pattern")(_check_regex)


class Budgets(_Strict):
    run_tokens: int | None = Field(None, ge=0, description="Tokens (in + out) one run may spend; null: no limit.")
    agent_daily_tokens: int | None = Field(None, ge=0, description="Tokens one agent may spend per UTC day.")


class MuzzleSettings(_Strict):
    enabled: bool = Field(True, description="Route every model call of a run through Muzzle.")
    host: str = Field("127.0.0.1", description="Listen address of `sentinel muzzle serve`.")
    port: int = Field(8787, ge=0, le=65535, description="Listen port of `sentinel muzzle serve`.")
    token_ttl_s: float = Field(86400.0, gt=0, description="Lifetime of a run token issued by the engine.")
    budgets: Budgets = Field(default_factory=Budgets, description="Default budgets of run tokens.")
    redact: list[RedactPattern] = Field(default_factory=list, description="Extra secret patterns to redact.")
    redact_responses: bool = Field(True, description="Also redact secrets the model echoes (they are flagged either way).")
    block: list[BlockRule] = Field(default_factory=list, description="Deny requests or responses matching a pattern.")
    log_path: str | None = Field(None, description="JSONL call log (default: <state>/muzzle.jsonl).")
    state_dir: str | None = Field(None, description="Token store directory (default: $SENTINEL_HOME/state; "
                                                    "system mode: /var/lib/sentinel-muzzle).")
    keys_file: str | None = Field(None, description="env-style file of upstream keys read by Muzzle only "
                                                    "(system mode default: /etc/sentinel/muzzle/keys.env).")
    upstream_timeout_s: float = Field(300.0, gt=0, description="Seconds to wait for an upstream answer.")
    connect_timeout_s: float = Field(10.0, gt=0, description="Seconds to wait for an upstream connection.")
    scripted: bool = Field(False, description="Serve scripted/<script> models, whose name is a file path "
                                              "(tests and demos only; off in any Muzzle that serves agents).")
    local_models: dict[str, str] = Field(default_factory=dict, description="GGUF files Muzzle may serve, "
                                         "as local/<name>; no other path is ever opened for a model name.")
    max_request_bytes: int = Field(16 << 20, ge=1024, description="Largest request body accepted (413 beyond).")
    max_connections_per_client: int = Field(64, ge=1, description="Open connections per client: per uid for "
                                            "loopback clients, else per address (429 beyond).")
    header_timeout_s: float = Field(10.0, gt=0, description="Seconds a request's line and headers may take (408).")
    body_timeout_s: float = Field(60.0, gt=0, description="Seconds a request's body may take to arrive (408).")

    @field_validator("local_models")
    @classmethod
    def _gguf_files(cls, value: dict[str, str]) -> dict[str, str]:
        for name, path in value.items():
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:-]*", name) or name.endswith(".gguf"):
                raise ValueError(f"{name!r}: a name is letters, digits and ._:- (not a path)")
            if not path.endswith(".gguf"):
                raise ValueError(f"{name}: {path!r} is not a .gguf file")
        return value
