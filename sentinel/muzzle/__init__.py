"""Muzzle: the inspecting model proxy that holds the upstream credentials (docs/muzzle.md).

    app.py        the OpenAI-compatible listener (starlette): auth, checks, forwarding, log
    tokens.py     per-run bearer tokens (hashes only), grants, budgets, spending (SQLite)
    redact.py     secret patterns, stable placeholders, redaction of streamed text
    inspect.py    outbound redaction and block rules, inbound flagging and tool calls
    upstream.py   routing provider/model to HTTP upstreams or in-process backends
    served.py     which in-process models a name may reach, and from which file (no file work)
    guard.py      connection limits: per-client connections, head and body time, head size
    layout.py     where state, log and keys live in local and system mode
    server.py     `sentinel muzzle serve` and the in-process listener of local mode
    system.py     Muzzle's system user and file layout (system mode setup)

The API the engine and the supervisor use:

    issue_token(agent, run_id, models, ttl_s, budgets, store=None) -> str
    model_for_run(name, config, run_id=..., agent=..., also=[...]) -> ModelClient   # what a run's loop calls
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from sentinel.muzzle.settings import Budgets

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.models import ModelClient
    from sentinel.models.openai_compat import OpenAICompatClient

__all__ = ["Budgets", "issue_token", "client_for_run", "model_for_run"]


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

    _check_served([name, *(also or [])], config)
    muzzle = ensure_local(config)
    token = issue_token(agent, run_id, [name, *(also or [])], config.muzzle.token_ttl_s, config.muzzle.budgets,
                        store=muzzle.layout.store_path)
    return OpenAICompatClient(name, name, muzzle.base_url, token, timeout_s=config.limits.model_timeout_s)


def model_for_run(name: str, config: "Config", *, run_id: str, agent: str,
                  also: list[str] | tuple[str, ...] = (), endpoint: tuple[str, str] | None = None) -> "ModelClient":
    """The client a run's worker uses: an OpenAI-compatible client pointed at Muzzle with a run token.

    System mode: the supervisor issued the token and handed `endpoint` (Muzzle's URL, the token) to the
    worker over its channel; the worker only ever holds those (docs/architecture.md, property 4) and never starts a
    Muzzle of its own. Local mode: an in-process Muzzle on an ephemeral loopback port, started on first
    use. With `muzzle.enabled: false` the backend is used directly (no inspection, no log).
    `also`: further models the run's token may use (the rule gate's judges).
    """
    from sentinel.models import resolve
    from sentinel.models.openai_compat import OpenAICompatClient

    if endpoint is not None:
        base_url, token = endpoint
        client = OpenAICompatClient(name, name, base_url, token, timeout_s=config.limits.model_timeout_s)
        client.via_muzzle = True
        return client
    if not config.muzzle.enabled:
        return resolve(name, config)
    _check(name, config)
    client = client_for_run(name, config, run_id=run_id, agent=agent, also=list(also))
    client.via_muzzle = True
    return client


def _check(name: str, config: "Config") -> None:
    """A name that can never work is a usage error before the run calls Muzzle."""
    from sentinel.models import resolve, script_path, split

    provider, model = split(name)
    if provider == "scripted":
        script_path(model)
    elif provider != "local" and config.provider(provider) is None:
        resolve(name, config)  # raises the unknown-provider error


def _check_served(names: list[str], config: "Config") -> None:
    """An in-process model this Muzzle will not serve is a usage error before the run starts."""
    from sentinel.errors import UsageError
    from sentinel.muzzle.errors import MuzzleError
    from sentinel.muzzle.served import served_file
    from sentinel.muzzle.upstream import HOSTED, IN_PROCESS

    for name in names:
        provider, _, model = name.partition("/")
        if provider in (*IN_PROCESS, HOSTED):
            try:
                served_file(provider, model, config.muzzle)
            except MuzzleError as exc:
                raise UsageError(exc.message) from None
