"""`python -m sentinel.notify --home H`: local mode's deliverer, started detached by `dispatch.kick` after a run
paused or ended. One per home (an flock on state/notify.lock; a second one exits at once), and it exits once
nothing is left to send: retries keep it alive, nothing else does.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m sentinel.notify")
    parser.add_argument("--home", required=True)
    home = Path(parser.parse_args(argv).home)
    from sentinel import config as config_mod, paths
    from sentinel.engine.store import Store
    from sentinel.errors import SentinelError
    from sentinel.notify.dispatch import Dispatcher

    try:
        config = config_mod.load(home)
    except SentinelError as exc:
        print(f"notify: {exc}", file=sys.stderr)
        return 2
    state = paths.state_dir(home)
    with Store.open(state / "sentinel.db") as store:
        dispatcher = Dispatcher(store, config)
        try:
            while (fd := paths.try_lock(state / "notify.lock")) is not None:
                try:
                    dispatcher.run(stop=lambda: False, until_idle=True)
                finally:
                    os.close(fd)  # then look once more: a kick refused while we held the lock is ours to serve
                dispatcher.scan()
                if not dispatcher.busy():
                    break
        finally:
            dispatcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
