"""System mode setup for Muzzle: its own system user, a keys file only it can read, a private state directory.

    /etc/sentinel/                   root 0755                (Muzzle and the agents pass through it)
    /etc/sentinel/config.yaml        root:sentinel-muzzle 0640 (the supervisor and Muzzle read it; agents do not)
    /etc/sentinel/muzzle/            root:sentinel-muzzle 0750
    /etc/sentinel/muzzle/keys.env    sentinel-muzzle 0600   upstream keys, `OPENAI_API_KEY=...` lines
    /var/lib/sentinel-muzzle/        sentinel-muzzle 0700   token store, call log

`setup()` is idempotent, never overwrites an existing keys file or config, and repairs the owner and mode
of each of these whatever the umask was when they were made; `sentinel setup`, the installer and
`sentinel muzzle setup-system` call it as root. The unit `installer/sentinel-muzzle.service`
runs `sentinel muzzle serve --system` as that user. Files are created with
O_NOFOLLOW and chowned through their descriptor, never by path.
"""

from __future__ import annotations

import os
import pwd
import shutil
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from sentinel.errors import SentinelError
from sentinel.leash import plain
from sentinel.muzzle.layout import SYSTEM_KEYS_FILE, SYSTEM_STATE_DIR, SYSTEM_USER, system_layout, system_user

if TYPE_CHECKING:
    from sentinel.config import Config

CONFIG_MODE = 0o640
KEYS_HEADER = """\
# Upstream model API keys, read only by Muzzle (user sentinel-muzzle). One NAME=value per line;
# NAME is a provider's `api_key_env` in /etc/sentinel/config.yaml, e.g.
# OPENAI_API_KEY=sk-...
# OPENROUTER_API_KEY=sk-or-...
# Workers never see these: they get Muzzle's URL and a per-run token. Restart Muzzle after editing.
"""


@dataclass(frozen=True)
class SystemSetup:
    user: str
    uid: int
    gid: int
    keys_file: Path
    state_dir: Path


def ensure_user(user: str = SYSTEM_USER, home: Path = SYSTEM_STATE_DIR) -> pwd.struct_passwd:
    """Muzzle's system user (no login shell, no password); created if missing."""
    try:
        return pwd.getpwnam(user)
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    nologin = shutil.which("nologin") or "/usr/sbin/nologin"
    proc = plain.admin([useradd, "--system", "--user-group", "--no-create-home", "--home-dir", str(home),
                        "--shell", nologin, "--comment", "Sentinel Muzzle model proxy", user])
    if proc.returncode != 0:
        raise SentinelError(f"useradd {user}: {proc.stderr.strip() or f'exit {proc.returncode}'}")
    return pwd.getpwnam(user)


def _dir(path: Path, uid: int, gid: int, mode: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchown(fd, uid, gid)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _readable_config(path: Path, gid: int) -> None:
    """The operator's config.yaml, when there is one: root-owned, readable by Muzzle's group, by nobody else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        os.fchown(fd, 0, gid)
        os.fchmod(fd, CONFIG_MODE)
    finally:
        os.close(fd)


def write_config(path: Path, text: str) -> None:
    """Rewrite the operator's config.yaml (`sentinel mcp add`, ...) atomically as setup made it: root,
    Muzzle's group, 0640, whatever the file was before; as anyone else (a local home), its owner and mode
    are kept."""
    from sentinel import paths

    paths.write_atomic(path, text, 0o600, keep=True)
    if os.geteuid() != 0:
        return
    try:
        gid = pwd.getpwnam(system_user()).pw_gid
    except KeyError:  # no Muzzle user yet (setup not run): root-only until `sentinel setup` opens it to Muzzle
        gid = 0
    _readable_config(path, gid)


def _keys_file(path: Path, uid: int, gid: int) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.write(fd, KEYS_HEADER.encode())
    except FileExistsError:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchown(fd, uid, gid)
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def setup(*, user: str = SYSTEM_USER, keys_file: Path = SYSTEM_KEYS_FILE,
          state_dir: Path = SYSTEM_STATE_DIR, config_dir: Path | None = None) -> SystemSetup:
    """Create (or repair the modes of) Muzzle's user, keys file and state directory. Needs root."""
    if os.geteuid() != 0:
        raise SentinelError("muzzle system setup needs root (sudo sentinel muzzle setup-system)")
    entry = ensure_user(user, state_dir)
    etc = config_dir or keys_file.parent.parent
    _dir(etc, 0, 0, 0o755)
    _readable_config(etc / "config.yaml", entry.pw_gid)
    keys_file.parent.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    _dir(keys_file.parent, 0, entry.pw_gid, 0o750)
    _keys_file(keys_file, entry.pw_uid, entry.pw_gid)
    _dir(state_dir, entry.pw_uid, entry.pw_gid, 0o700)
    return SystemSetup(user, entry.pw_uid, entry.pw_gid, keys_file, state_dir)


def setup_for(config: "Config") -> SystemSetup:
    """`setup` at the places the operator's config names (its keys file and state directory)."""
    layout = system_layout(config)
    assert layout.keys_file is not None
    return setup(user=system_user(), keys_file=layout.keys_file, state_dir=layout.state_dir,
                 config_dir=layout.config_root)
