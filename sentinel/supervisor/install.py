"""What system mode needs besides an agent, set up idempotently by `sentinel setup` and by
`installer/install.sh --system` (`python -m sentinel.supervisor.install`):

    /etc/sentinel/config.yaml       the operator's config (a commented starter when there is none),
                                    root:sentinel-muzzle 0640: the supervisor and Muzzle read it
    the operator group              `sentinel` (root and its members approve)
    Muzzle's user, keys, state      sentinel/muzzle/system.py
    systemd units                   copied to /etc/systemd/system and enabled, only where systemd runs;
                                    elsewhere `sentinel supervisor` starts Muzzle itself

Nothing here overwrites a file that exists; the owner and mode of each file and directory are set
explicitly (never left to the umask of whoever ran setup) and repaired when they are wrong.
`problems()` names any file a component cannot read (`sentinel status` shows them).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from sentinel.leash import plain
from sentinel.supervisor import layout

UNITS = ("sentinel-muzzle.service", "sentinel-supervisor.service", "sentinel-egress.service")
UNIT_DIR = Path("/etc/systemd/system")
INSTALLED_VENV = "/opt/sentinel/venv"  # what the shipped units name; rewritten to the running install

STARTER_CONFIG = """\
# Sentinel system mode: the operator's configuration (root-owned; agents cannot change it).
# Runs use only the models allowed here; an agent's profile chooses among them.
#
# default_model: ollama/qwen3:4b
# providers:
#   ollama: {base_url: http://127.0.0.1:11434/v1}
#   openai: {base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}   # key in muzzle/keys.env
# system:
#   models: [ollama/*, openai/gpt-5-mini]     # default: default_model only
#   agents:
#     naomi: {models: [ollama/*], default_model: ollama/qwen3:4b}
#   start_muzzle: true                       # sentinel supervisor starts Muzzle when none answers
"""


def prepare() -> list[str]:
    """Set up everything system mode needs; one line per thing, each saying whether it was made now or
    kept as it was (owners and modes are repaired either way). Safe to run again in any state, a
    supervisor running included: nothing it uses is replaced under it."""
    from sentinel import config as config_mod
    from sentinel.muzzle.layout import system_layout, system_user
    from sentinel.muzzle.system import setup_for

    done = [_starter_config(layout.etc_dir())]
    done.append(_group(layout.operator_group()))
    config = config_mod.load(layout.etc_dir())
    planned = system_layout(config)
    existed = {"user": _user_exists(system_user()), "keys": bool(planned.keys_file and planned.keys_file.exists()),
               "state": planned.state_dir.exists()}
    muzzle = setup_for(config)
    done.append(f"muzzle: user {muzzle.user} ({_made(existed['user'])}), keys {muzzle.keys_file} (0600, "
                f"{_made(existed['keys'])}), state {muzzle.state_dir} (0700, {_made(existed['state'])})")
    done += install_units()
    done.append(_supervisor())
    return done


def _made(existed: bool) -> str:
    return "kept" if existed else "created"


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _supervisor() -> str:
    """Whether a supervisor already runs: it read the config when it started."""
    import socket

    path = layout.socket_path()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        return f"supervisor: none running on {path} (start it: sentinel supervisor, or its systemd unit)"
    finally:
        sock.close()
    return (f"supervisor: already running on {path}, left running; it reads /etc/sentinel/config.yaml when it "
            "starts (restart it after changing the config)")


def _starter_config(etc: Path) -> str:
    """Written root-only; Muzzle's setup (which runs next) gives its group read access."""
    etc.mkdir(parents=True, exist_ok=True, mode=0o755)
    os.chmod(etc, 0o755)
    path = etc / "config.yaml"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return f"config: {path} (kept)"
    with os.fdopen(fd, "w") as f:
        os.fchmod(fd, 0o640)
        f.write(STARTER_CONFIG)
    return f"config: {path} (a commented starter: add your providers and models)"


def _group(name: str) -> str:
    import grp

    try:
        grp.getgrnam(name)
        existed = True
    except KeyError:
        existed = False
    return f"operators: group {name} (gid {ensure_group(name)}, {_made(existed)})"


def ensure_group(name: str) -> int:
    """The operator group's gid, creating the (system) group if it does not exist."""
    import grp

    from sentinel.errors import UsageError

    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        pass
    proc = plain.admin(["groupadd", "--system", name])
    if proc.returncode != 0:
        raise UsageError(f"cannot create operator group {name!r}: {proc.stderr.strip()}")
    return grp.getgrnam(name).gr_gid


def systemd_running() -> bool:
    return Path("/run/systemd/system").is_dir()


def render(unit: str, venv: str) -> str:
    """A shipped unit with its paths pointed at this install."""
    return (unit_source() / unit).read_text().replace(INSTALLED_VENV, venv)


def unit_source() -> Path:
    from sentinel import paths

    return paths.data_dir("installer")


def install_units(dest: Path = UNIT_DIR) -> list[str]:
    if not systemd_running():
        return ["systemd: not running here; `sentinel supervisor` starts and restarts Muzzle itself"]
    venv = sys.prefix
    made = []
    for unit in UNITS:
        target = dest / unit
        if not target.exists():
            target.write_text(render(unit, venv))
            os.chmod(target, 0o644)
            made.append(unit)
    systemctl = shutil.which("systemctl") or "/usr/bin/systemctl"
    plain.admin([systemctl, "daemon-reload"])
    proc = plain.admin([systemctl, "enable", "--now", *UNITS])
    state = "enabled and started" if proc.returncode == 0 else f"not enabled ({proc.stderr.strip()[:200]})"
    kept = [u for u in UNITS if u not in made]
    return [f"systemd: {', '.join(UNITS)} in {dest} ({'created: ' + ', '.join(made) if made else ''}"
            f"{'; ' if made and kept else ''}{'kept: ' + ', '.join(kept) if kept else ''}), {state}"]


def main() -> int:
    from sentinel.errors import SentinelError

    if os.geteuid() != 0:
        print("error: system mode setup needs root", file=sys.stderr)
        return 2
    try:
        for line in prepare():
            print(line)
    except SentinelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
