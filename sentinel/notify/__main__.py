"""`python -m sentinel.notify --home H`: local mode's deliverer, started detached by `dispatch.kick` after a run
paused or ended (which queued the outbox rows). One per home (an flock on state/notify.lock; a second one exits
at once), and it exits once nothing is left to send: retries keep it alive, nothing else does. It loads no
config (each row carries its target), so it starts in about an interpreter's start.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m sentinel.notify")
    parser.add_argument("--home", required=True)
    state = Path(parser.parse_args(argv).home) / "state"
    from sentinel import paths
    from sentinel.engine.store import Store
    from sentinel.notify.dispatch import Dispatcher

    with Store.open(state / "sentinel.db") as store:
        dispatcher = Dispatcher(store, None)  # the run's process queued the rows: no config to load here
        try:
            while (fd := paths.try_lock(state / "notify.lock")) is not None:
                try:
                    dispatcher.run(stop=lambda: False, until_idle=True)
                finally:
                    os.close(fd)  # then look once more: a kick refused while we held the lock is ours to serve
                if not dispatcher.busy():
                    break
        finally:
            dispatcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
