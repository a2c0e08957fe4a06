"""Leash settings and policies as a launch needs them, re-read only when config.yaml changes."""

from __future__ import annotations

from pathlib import Path

from sentinel import paths
from sentinel.leash import policy
from sentinel.leash.settings import LeashSettings

_cache: dict[Path, tuple[int, LeashSettings]] = {}


def settings() -> LeashSettings:
    from sentinel import config

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
    if system:
        return policy.policy_path(agent, system=True, policy_dir=Path(settings().policy_dir))
    return paths.home() / "leash.yaml"


def policy_for(agent: str | None, *, system: bool) -> policy.LeashPolicy:
    return policy.load(policy_file(agent, system=system))
