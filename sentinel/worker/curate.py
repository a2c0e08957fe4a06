"""The curator model's call for a run that ended in local mode, made after the command exited.

    python -I -m sentinel.worker.curate --home HOME RUN_ID      (started detached by `start`)

A local `sentinel run` executes in the operator's terminal: asking the curator model there would hold the
command (and a script waiting on `--json`) for another model call after the answer. The run's keeper curates
its deterministic learnings at once and leaves the conventions to this process, which reads the ended run's
state, asks the curator model (`context.curator_model`, default the run's model) and adds what passes the
injection scanner to the scope's MEMORY.md. It never writes the run's journal (the run may already have a
next chat turn); a failed call is audited as `curator_failed` and logged in state/curator.log.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sentinel import paths
from sentinel.detach import detach

LOG = "curator.log"


def start(home: Path, run_id: str) -> None:
    """Start the curator's process for `run_id`, detached: this costs one fork of /bin/sh, which exits at once."""
    detach("sentinel.worker.curate", ["--home", str(home), run_id], log=paths.state_dir(home) / LOG,
           env={"SENTINEL_HOME": str(home)})


def curate(home: Path, run_id: str) -> list[str]:
    """Ask the curator model about the run's last turn; the conventions it added to MEMORY.md."""
    from sentinel import config as config_mod
    from sentinel.agents import profile as profiles
    from sentinel.engine.state import RunState
    from sentinel.engine.store import Store
    from sentinel.memory import curator
    from sentinel.memory.vault import memory_dir
    from sentinel.models import ModelError
    from sentinel.muzzle import model_for_run
    from sentinel.worker.compact import conventions

    config = config_mod.load(home)
    state = RunState.load(home / "runs" / run_id)
    profile = profiles.load(state.agent, home, check=False)
    store = Store.open(paths.state_dir(home) / "sentinel.db")
    try:
        name = config.context.curator_model or state.model
        try:
            found = conventions(state, model_for_run(name, config, run_id=run_id, agent=profile.name))
        except ModelError as exc:
            store.audit("curator_failed", {"run_id": run_id, "agent": profile.name, "model": name, "error": str(exc)})
            print(f"run {run_id}: curator: the model call failed ({exc}); kept the deterministic learnings only",
                  file=sys.stderr)
            return []
        curated = curator.curate(memory_dir(home) / profile.scope, found)
        for learning, finding in curated.flagged:
            store.audit("memory_quarantined", {"run_id": run_id, "agent": profile.name, "scope": profile.scope,
                                               "note": curator.MEMORY_MD, "title": learning[:80], "finding": finding})
        return found
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sentinel.worker.curate")
    parser.add_argument("--home", required=True, type=Path)
    parser.add_argument("run_id")
    args = parser.parse_args(argv)
    from sentinel.errors import SentinelError

    try:
        curate(args.home, args.run_id)
    except (OSError, SentinelError) as exc:
        print(f"run {args.run_id}: curator: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
