"""Leash settings and policies as a launch needs them, re-read only when config.yaml changes."""

from __future__ import annotations

import os
from pathlib import Path

from sentinel.leash import policy
from sentinel.leash.settings import LeashSettings

_cache: dict[Path, tuple[int, LeashSettings]] = {}
_pinned: LeashSettings | None = None


def pin(value: LeashSettings) -> None:
    """Use `value` from now on: a system-mode worker's are the ones the supervisor sent, never those of a
    config.yaml its agent can edit (which would name the policy directory its tools' leash is read from)."""
    global _pinned
    _pinned = value


def settings() -> LeashSettings:
    from sentinel import config

    if _pinned is not None:
        return _pinned
    path = config.config_path()
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        mtime = -1
    cached = _cache.get(path)
    if cached and cached[0] == mtime:
        return cached[1]
    value = config.load().leash
    _cache[path] = (mtime, value)
    return value


def proxy() -> tuple[str, int]:
    s = settings()
    return s.proxy_host, s.proxy_port


def policy_file(agent: str | None, *, system: bool) -> Path:
    """System mode: the agent's root-owned file. In a system-mode worker (pinned settings), which runs
    as its agent: root's file for that user, missing or not (then the defaults), never the
    `leash.yaml` the agent's own tree holds. Otherwise root's file for our user if there is one, else
    $SENTINEL_HOME/leash.yaml."""
    directory = Path(settings().policy_dir)
    if _pinned is not None and not system:
        # USER is the supervisor's (workers.worker_env): the worker's Landlock rule for /etc/passwd holds
        # the file it opened, so after a useradd replaced it the worker can no longer look its name up
        return directory / f"{os.environ.get('USER') or policy.current_user()}.yaml"
    return policy.policy_path(agent, system=system, policy_dir=directory)


def policy_for(agent: str | None, *, system: bool) -> policy.LeashPolicy:
    return policy.load(policy_file(agent, system=system))
