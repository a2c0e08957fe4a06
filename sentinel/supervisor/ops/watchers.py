"""Watchers on the operator socket (sentinel/watchers): their firings with the relay's outcome, the operator's
inbox, and firing an operator watcher now (`sentinel watch fire`)."""

from __future__ import annotations

from typing import Sequence

from sentinel.engine import relay
from sentinel.engine.operations import FireWatcher, Firings, Inbox, Start
from sentinel.errors import UsageError
from sentinel.frames import reply
from sentinel.supervisor.hub import Client, Hub
from sentinel.supervisor.ops.runs import start as start_run
from sentinel.supervisor.ops.common import MAX_ROWS, Reply


def firings(sup: Hub, conn: Client, req: Firings) -> Reply:
    rows = relay.history(sup.store.conn, req.watcher, req.limit or MAX_ROWS)
    return reply([r.to_dict() for r in rows])


def inbox(sup: Hub, conn: Client, req: Inbox) -> Reply:
    return reply([r.to_dict() for r in relay.inbox(sup.store.conn, req.limit or MAX_ROWS)])


def fire_watcher(sup: Hub, conn: Client, req: FireWatcher) -> Reply:
    """An operator watcher fires now; its hook session is a worker and its relay contract is settled by the
    watcher child's timer."""
    from sentinel.watchers import spec
    from sentinel.watchers.runner import Runner

    watcher = spec.find(req.ident, system=True)

    class Starter:  # the runner's HookStarter: start the hook session as `start` does, without following it
        def start(self, task: str, *, model: str | None, agent: str | None, skills: Sequence[str],
                  hook: str | None) -> Reply:
            return start_run(sup, conn, Start(task=task, agent=agent, model=model, skills=list(skills), hook=hook))

    firing_id = Runner(Starter(), sup.store, sup.config, [watcher], run_command=_no_command,
                       log=lambda line: None).fire(watcher, req.payload if req.payload is not None else {})
    sup.ensure_watchers()
    return reply(relay.get(sup.store.conn, firing_id))


def _no_command(argv: list[str], timeout_s: float, stdin: bytes | None) -> tuple[int | None, str]:
    """A firing made here polls no source and delivers nothing: the watcher child (its own user) does both."""
    raise UsageError("commands of a watcher run in its watcher process, not in the supervisor")
