"""Muzzle: the inspecting model proxy that holds the upstream credentials (DESIGN section 6).

    app.py        the OpenAI-compatible listener (starlette): auth, checks, forwarding, log
    tokens.py     per-run bearer tokens (hashes only), grants, budgets, spending (SQLite)
    redact.py     secret patterns, stable placeholders, redaction of streamed text
    inspect.py    outbound redaction and block rules, inbound flagging and tool calls
    upstream.py   routing provider/model to HTTP upstreams or in-process backends
    layout.py     where state, log and keys live in local and system mode
    server.py     `sentinel muzzle serve` and the in-process listener of local mode
    system.py     Muzzle's system user and file layout (system mode setup)

The API the engine and the supervisor use:

    issue_token(agent, run_id, models, ttl_s, budgets, store=None) -> str
    client_for_run(name, config, run_id=..., agent=..., also=[...]) -> OpenAICompatClient   # local mode
    model_hosts(system=False) -> [{model, pid, rss_mb, state, ...}]   # the `local/*` model hosts Muzzle runs
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from sentinel.muzzle.settings import Budgets

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.models.openai_compat import OpenAICompatClient

__all__ = ["Budgets", "issue_token", "client_for_run", "model_hosts"]


def issue_token(agent: str, run_id: str, models: Sequence[str], ttl_s: float = 86400.0,
                budgets: Budgets | None = None, *, store: Path | None = None) -> str:
    """Issue a run token; only its hash is stored. `store` defaults to the local mode store
    ($SENTINEL_HOME/state/muzzle.db); the supervisor passes `layout.system_layout(config).store_path`."""
    from sentinel.muzzle.tokens import TokenStore

    if store is None:
        from sentinel import config as config_mod
        from sentinel.muzzle.layout import local_layout

        store = local_layout(config_mod.load()).store_path
    opened = TokenStore.open(store)
    try:
        return opened.issue(agent, run_id, models, ttl_s, budgets)
    finally:
        opened.close()


def client_for_run(name: str, config: "Config", *, run_id: str, agent: str,
                   also: list[str] | None = None) -> "OpenAICompatClient":
    """An OpenAI-compatible client for one run, pointed at the in-process Muzzle with a fresh run token."""
    from sentinel.models.openai_compat import OpenAICompatClient
    from sentinel.muzzle.server import ensure_local

    muzzle = ensure_local(config)
    token = issue_token(agent, run_id, [name, *(also or [])], config.muzzle.token_ttl_s, config.muzzle.budgets,
                        store=muzzle.layout.store_path)
    return OpenAICompatClient(name, name, muzzle.base_url, token, timeout_s=config.limits.model_timeout_s)


def model_hosts(*, system: bool = False) -> list[dict[str, Any]]:
    """Each model host under Muzzle's state directory (local mode: $SENTINEL_HOME/state; system mode: Muzzle's)."""
    from sentinel import config as config_mod
    from sentinel.models.hosts import status
    from sentinel.muzzle.layout import local_layout, system_layout

    config = config_mod.load()
    return status((system_layout(config) if system else local_layout(config)).state_dir)
