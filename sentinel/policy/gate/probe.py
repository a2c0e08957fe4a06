"""Can each configured judge be reached? One line per judge, for `sentinel status`.

    probe_judges(cfg, rules, providers=None) -> [str]
    probe_configured() -> [str]          the same for $SENTINEL_HOME's gate (config.yaml `gate:`)

A rule whose judge is unreachable is skipped (fail_open), so the operator should learn of it
before a run, not from `show` after one. Probes are cheap and bounded: an HTTP GET of the
backend's model list (Ollama `/api/tags`, OpenAI-compatible `/models`) with a short timeout, a
PATH lookup for the claude/copilot CLIs. No model is loaded and nothing is judged.
"""

from __future__ import annotations

import shutil
from typing import Any

from sentinel.policy.gate.judges.base import ProviderLookup

TIMEOUT_S = 2.0


def probe_judges(cfg: Any, rules: list[Any], providers: ProviderLookup | None = None,
                 timeout_s: float = TIMEOUT_S) -> list[str]:
    backends = sorted({cfg.backend, *(r.backend for r in rules if r.backend)})
    return [probe_one(cfg, name, providers, timeout_s) for name in backends]


def probe_one(cfg: Any, name: str, providers: ProviderLookup | None, timeout_s: float) -> str:
    settings = cfg.backend_settings(name)
    label = f"judge {name}/{cfg.model_for(name)}"
    if name in ("claude", "copilot"):
        command = settings.get("command") or name
        return f"{label}: {'found' if shutil.which(command) else 'NOT FOUND'} ({command} on PATH)"
    if name == "local":
        return f"{label}: in-process llama.cpp"
    if name == "ollama":
        url = (settings.get("url") or "http://localhost:11434").rstrip("/")
        return f"{label}: {_get(url + '/api/tags', None, timeout_s)} ({url})"
    url, key = settings.get("url"), None
    if not url and providers is not None:
        found = providers(name)
        url, key = found if found else (None, None)
    if not url:
        return f"{label}: UNKNOWN backend (set backends.{name}.url or a provider {name} in config.yaml)"
    return f"{label}: {_get(url.rstrip('/') + '/models', key, timeout_s)} ({url})"


def _get(url: str, key: str | None, timeout_s: float) -> str:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            return "reachable" if resp.status < 400 else f"UNREACHABLE (HTTP {resp.status})"
    except urllib.error.HTTPError as exc:  # it answered: reachable, unless a gateway says what is behind is not
        return f"UNREACHABLE (HTTP {exc.code})" if exc.code in (502, 503, 504) else "reachable"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"UNREACHABLE ({str(reason).splitlines()[0] if str(reason) else type(exc).__name__})"


def probe_configured() -> list[str]:
    """`sentinel status`: the judges of Sentinel's own gate (none when no rule is installed)."""
    from sentinel import config as config_mod, paths
    from sentinel.errors import SentinelError
    from sentinel.policy.gate.layer import provider_lookup
    from sentinel.policy.gate.loader import load_home, system_rules_dir

    try:
        cfg = config_mod.load()
    except SentinelError as exc:
        return [f"judges not probed: {str(exc).splitlines()[0]}"]
    bundle = load_home(str(paths.home()), cfg.gate.model_dump(), system_rules_dir())
    if not cfg.gate.enabled or not bundle.rules:
        return ["no gate rules: no judge to probe"]
    return probe_judges(bundle.config, bundle.rules, provider_lookup(cfg))
