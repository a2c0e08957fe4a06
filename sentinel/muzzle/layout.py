"""Where Muzzle keeps its state and where it reads upstream keys, in local and system mode.

    local   config   $SENTINEL_HOME/config.yaml
            store    $SENTINEL_HOME/state/muzzle.db      log  $SENTINEL_HOME/state/muzzle.jsonl
            keys     the operator's environment (provider `api_key_env`) or `api_key_file`
    system  config   /etc/sentinel/config.yaml
            store    /var/lib/sentinel-muzzle/muzzle.db  log  /var/lib/sentinel-muzzle/muzzle.jsonl
            keys     /etc/sentinel/muzzle/keys.env (0600, Muzzle's user), then `api_key_file`

Only Muzzle reads keys; a worker is handed Muzzle's URL and a run token (docs/architecture.md, property 4).
SENTINEL_ETC_DIR moves /etc/sentinel and SENTINEL_MUZZLE_USER names Muzzle's system user (tests).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sentinel import paths

if TYPE_CHECKING:
    from sentinel.config import Config

SYSTEM_USER = "sentinel-muzzle"
SYSTEM_CONFIG_DIR = Path("/etc/sentinel")
SYSTEM_STATE_DIR = Path("/var/lib/sentinel-muzzle")
SYSTEM_KEYS_FILE = SYSTEM_CONFIG_DIR / "muzzle" / "keys.env"


@dataclass(frozen=True)
class Layout:
    config_root: Path
    state_dir: Path
    log_path: Path
    keys_file: Path | None
    system: bool = False

    @property
    def store_path(self) -> Path:
        return self.state_dir / "muzzle.db"


def local_layout(config: "Config", home: Path | None = None) -> Layout:
    home = home or paths.home()
    s = config.muzzle
    state = Path(s.state_dir).expanduser() if s.state_dir else paths.state_dir(home)
    log = Path(s.log_path).expanduser() if s.log_path else state / "muzzle.jsonl"
    return Layout(home, state, log, Path(s.keys_file).expanduser() if s.keys_file else None)


def system_config_dir() -> Path:
    """The operator's configuration directory (/etc/sentinel)."""
    return Path(os.environ.get("SENTINEL_ETC_DIR") or SYSTEM_CONFIG_DIR)


def system_user() -> str:
    return os.environ.get("SENTINEL_MUZZLE_USER") or SYSTEM_USER


def system_layout(config: "Config") -> Layout:
    s = config.muzzle
    state = Path(s.state_dir) if s.state_dir else SYSTEM_STATE_DIR
    log = Path(s.log_path) if s.log_path else state / "muzzle.jsonl"
    etc = system_config_dir()
    keys = Path(s.keys_file) if s.keys_file else etc / SYSTEM_KEYS_FILE.relative_to(SYSTEM_CONFIG_DIR)
    return Layout(etc, state, log, keys, True)


def read_env_file(path: Path) -> dict[str, str]:
    """`NAME=value` lines (optional `export`, quotes, # comments); a missing file is empty."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[name.strip()] = value
    return out


class Credentials:
    """Upstream API keys, looked up by provider; the keys file wins over the environment."""

    def __init__(self, config: "Config", keys_file: Path | None, *, use_environ: bool = True):
        self.config = config
        self.file_keys = read_env_file(keys_file) if keys_file else {}
        self.use_environ = use_environ

    def key_for(self, provider: str) -> str | None:
        cfg = self.config.provider(provider)
        if cfg is None:
            return None
        if cfg.api_key_env:
            if cfg.api_key_env in self.file_keys:
                return self.file_keys[cfg.api_key_env]
            if self.use_environ and os.environ.get(cfg.api_key_env):
                return os.environ[cfg.api_key_env]
        if cfg.api_key_file and Path(cfg.api_key_file).expanduser().is_file():
            return Path(cfg.api_key_file).expanduser().read_text().strip()
        return None

    def known_secrets(self) -> list[tuple[str, str]]:
        """Every upstream key Muzzle holds, so one echoed back is redacted like any secret."""
        names = {*self.config.providers, "openai", "openrouter"}
        return [("upstream_key", k) for k in (self.key_for(n) for n in sorted(names)) if k]
