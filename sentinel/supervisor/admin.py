"""Root's administration of system mode, run by the CLI in its own process as root: none of it needs a
supervisor running, so none of it is an engine operation. The one module of sentinel/supervisor a UI
may import (tests/test_layers.py holds them to it); everything else an operator does goes through the
engine protocol (sentinel/engine/api.py) and the operator socket.

    setup(name) -> Identity                 `sentinel setup`: the agent's user and tree, the default agent
    init_leash(user) -> Identity            `sentinel init --leash USER`
    remove_agent(name, user=, by=)          `sentinel agent remove`
    apply_egress() / remove_egress()        `sentinel leash egress [--uninstall]`
    serve(...)                              `sentinel supervisor` in the foreground
    system_installed() / unreadable_files() `sentinel status` as root beside a supervisor that is not running
    exposed_files()                         ... and the secrets an agent's user could read
    etc_dir()                               /etc/sentinel (SENTINEL_ETC_DIR)

Each refuses a caller that is not root in one line.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from sentinel.errors import UsageError
from sentinel.supervisor import layout
from sentinel.supervisor.identity import DEFAULT_NAME

if TYPE_CHECKING:
    from sentinel.engine.store import Store
    from sentinel.supervisor.identity import Identity, Removed

__all__ = ["DEFAULT_NAME", "setup", "init_leash", "remove_agent", "apply_egress", "remove_egress", "serve",
           "system_installed", "unreadable_files", "exposed_files", "etc_dir"]


def etc_dir() -> Path:
    return layout.etc_dir()


@contextmanager
def _store() -> Iterator["Store"]:
    from sentinel.supervisor.server import open_store

    if os.geteuid() != 0:
        raise UsageError("system mode commands need root (sudo sentinel ...)")
    os.umask(0o077)
    store = open_store(layout.state_dir())
    try:
        yield store
    finally:
        store.close()


def setup(name: str) -> "Identity":
    from sentinel.supervisor import identity

    with _store() as store:
        return identity.setup(name, store, layout.home_base(), layout.operator_group())


def init_leash(user: str) -> "Identity":
    from sentinel.supervisor import identity

    with _store() as store:
        return identity.init_leash(user, store, layout.operator_group())


def remove_agent(name: str, *, user: bool, by: str) -> "Removed":
    from sentinel.supervisor import identity

    with _store() as store:
        return identity.remove(name, store, user=user, by=by)


def apply_egress() -> str:
    from sentinel.supervisor.identity import apply_egress as apply

    with _store() as store:
        return apply(store)


def remove_egress(netns: str | None) -> None:
    from sentinel.leash import nft

    with _store():  # root only, as installing it
        pass
    nft.uninstall(netns=netns)


def serve(state_dir: Path | None, socket_path: Path | None, group: str | None, resume: bool,
          model_ports: list[int]) -> None:
    from sentinel.supervisor.hub import Settings
    from sentinel.supervisor.server import Supervisor

    settings = Settings(state_dir=state_dir or layout.state_dir(), socket_path=socket_path or layout.socket_path(),
                        group=group or layout.operator_group(), resume=resume, model_ports=model_ports)
    sup = Supervisor(settings)
    sup.open()
    print(f"sentinel supervisor: listening on {settings.socket_path} (operators: root, group {settings.group})",
          file=sys.stderr, flush=True)
    sup.serve()


def system_installed() -> bool:
    return (layout.etc_dir() / "config.yaml").exists()


def unreadable_files() -> list[str]:
    """Which files the system's parts (Muzzle, the agents' workers) cannot read (sentinel/supervisor/readable.py)."""
    from sentinel import config as config_mod
    from sentinel.supervisor import readable

    return readable.problems(config_mod.load(layout.etc_dir()), _agents())


def exposed_files() -> list[str]:
    """Which secrets an agent's user can read (sentinel/supervisor/readable.py `exposed`)."""
    from sentinel import config as config_mod
    from sentinel.supervisor import readable

    return readable.exposed(config_mod.load(layout.etc_dir()), _agents())


def _agents() -> list[str]:
    """The agents' users the supervisor's store registers (none before the first `sentinel setup`)."""
    from sentinel.supervisor import registry
    from sentinel.supervisor.server import open_store

    if not layout.db_path().exists():
        return []
    with open_store(layout.state_dir()) as store:
        return [a.user for a in registry.all_agents(store)]
