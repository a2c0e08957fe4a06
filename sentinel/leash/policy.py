"""The Leash policy file of one agent: extra paths, network grant and domain allowlist, resource limits.

System mode reads `/etc/sentinel/leash/<user>.yaml` (root-owned, so the agent cannot widen its own
leash); local mode reads `$SENTINEL_HOME/leash.yaml`. A missing file means the defaults below.
Validation failures are one-line ConfigErrors naming the file and the field.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sentinel import paths
from sentinel.errors import ConfigError, validated

DEFAULT_POLICY_DIR = Path("/etc/sentinel/leash")
_DOMAIN = re.compile(r"^(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Limits(_Strict):
    cpu_s: int | None = Field(600, ge=1, description="RLIMIT_CPU: CPU seconds per process.")
    memory_mb: int | None = Field(4096, ge=16, description="RLIMIT_AS per process and the cgroup memory limit.")
    processes: int | None = Field(256, ge=8, description="Processes and threads (pids cgroup; RLIMIT_NPROC).")
    file_size_mb: int | None = Field(1024, ge=1, description="RLIMIT_FSIZE: largest file a tool may write.")
    open_files: int | None = Field(1024, ge=16, description="RLIMIT_NOFILE.")


class LeashPolicy(_Strict):
    read_only: list[str] = Field(default_factory=list, description="Extra paths tools may read.")
    read_write: list[str] = Field(default_factory=list, description="Extra paths tools may write.")
    network: bool = Field(False, description="Tools may reach the network (only through the egress proxy).")
    allow_domains: list[str] = Field(
        default_factory=list, description="Domains the egress proxy lets this agent reach; `*.example.com` for subdomains."
    )
    unix_sockets: list[str] = Field(
        default_factory=list, description="Unix sockets (paths) tools may connect to; no other unix socket is reachable."
    )
    limits: Limits = Field(default_factory=Limits)

    @field_validator("read_only", "read_write", "unix_sockets")
    @classmethod
    def _absolute(cls, value: list[str]) -> list[str]:
        for entry in value:
            if not os.path.isabs(os.path.expanduser(entry)):
                raise ValueError(f"{entry!r} is not an absolute path")
        return value

    @field_validator("allow_domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        out = []
        for entry in value:
            name = entry.strip().lower().rstrip(".")
            if not _DOMAIN.match(name):
                raise ValueError(f"{entry!r} is not a domain name (use example.com or *.example.com)")
            out.append(name)
        return out


def policy_path(agent: str | None, *, system: bool, policy_dir: Path | None = None) -> Path:
    directory = policy_dir or DEFAULT_POLICY_DIR
    if system and agent:
        return directory / f"{agent}.yaml"
    # A system-mode worker runs unprivileged as its agent: the root-owned policy for that user still
    # governs its tools, never the $SENTINEL_HOME/leash.yaml the agent itself can edit.
    own = directory / f"{current_user()}.yaml"
    try:
        if own.stat().st_uid == 0:
            return own
    except OSError:
        pass
    return paths.home() / "leash.yaml"


def current_user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


_cache: dict[Path, tuple[int, LeashPolicy]] = {}


def load(path: Path) -> LeashPolicy:
    """Parse a policy file (defaults if it does not exist); cached by modification time."""
    try:
        mtime = path.stat().st_mtime_ns
    except FileNotFoundError:
        return LeashPolicy()
    except OSError as exc:
        raise ConfigError(path, f"cannot read: {exc.strerror}") from None
    cached = _cache.get(path)
    if cached and cached[0] == mtime:
        return cached[1]
    from sentinel.config import read_yaml

    policy = validated(LeashPolicy, read_yaml(path) or {}, path)
    _cache[path] = (mtime, policy)
    return policy


def domain_allowed(host: str, allow: list[str]) -> str | None:
    """The allowlist entry that admits `host`, or None."""
    host = host.lower().rstrip(".")
    for entry in allow:
        if entry.startswith("*."):
            if host.endswith(entry[1:]) and len(host) > len(entry) - 1:
                return entry
        elif host == entry:
            return entry
    return None
