"""Stop-event work, off the agent's critical path: the session accumulator, then the scribe.

`on_stop` (called by the hook) starts `python -m sentinel.hooks.background ROOT SESSION
TRANSCRIPT` as a detached process and returns at once, so Stop never waits for a
model. With SENTINEL_GATE_SYNC=1 the work runs inline (tests, debugging). For Claude
Code, fresh draft rules not yet announced are mentioned once in a systemMessage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from sentinel.hooks import common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sentinel.hooks.adapter import Adapter
    from sentinel.jsontypes import JSON
    from sentinel.policy.gate.loader import Bundle

SYNC_ENV = "SENTINEL_GATE_SYNC"


def on_stop(adapter: Adapter, root: str, session_id: str, transcript: str | None, bundle: Bundle) -> common.Reply:
    cfg = bundle.config
    if transcript and (cfg.context["enabled"] or cfg.scribe["enabled"]):
        if os.environ.get(SYNC_ENV):
            work(root, session_id, transcript)
        else:
            spawn(root, session_id, transcript)
    return announce(adapter, bundle)


def spawn(root: str, session_id: str, transcript: str) -> subprocess.Popen[bytes]:
    """The worker from `/` with -P (no working directory on sys.path) and this package's parent as its only
    PYTHONPATH: the agent's repository (the hook's cwd) holds no `sentinel/` the worker could import. The rest of
    its environment is the operator's (its judges' logins and keys), less loader variables (sentinel/leash/plain.py)."""
    from sentinel.leash import plain

    parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return plain.popen([sys.executable, "-P", "-s", "-m", "sentinel.hooks.background", root, session_id, transcript],
                       cwd="/", env=plain.operator_env(os.environ), python_path=parent, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, new_session=True)


def work(root: str, session_id: str, transcript: str) -> dict[str, object]:
    from sentinel.policy.gate.context import accumulate
    from sentinel.policy.gate.judges import Judges
    from sentinel.policy.gate.loader import load_repo
    from sentinel.policy.gate.scribe import Scribe

    bundle = load_repo(root)
    judges = Judges(bundle.config)
    status = accumulate(bundle.config, bundle.paths, session_id, transcript, judges)
    drafts = Scribe(bundle.config, bundle.paths, bundle.rules, judges).reflect(session_id, transcript)
    return {"context": status, "drafts": drafts}


def announce(adapter: Adapter, bundle: Bundle) -> common.Reply:
    """Claude Code only: a one-time systemMessage about fresh drafts (never a Stop block)."""
    if adapter.NAME != "claude-code" or not os.path.isdir(bundle.paths.drafts_dir):
        return common.SILENT
    from sentinel.policy.gate.drafts import DraftStore

    marker = os.path.join(bundle.paths.state_dir, "scribe", "announced.json")
    seen: set[str] = set()
    try:
        with open(marker, encoding="utf-8") as fh:
            listed: JSON = json.load(fh)
        seen = {str(d) for d in listed} if isinstance(listed, list) else set()
    except (OSError, ValueError):
        pass
    drafts = DraftStore(bundle.paths).fresh(bundle.config.scribe["notification"]["max_age_days"])
    fresh = [str(d["id"]) for d in drafts if d["id"] not in seen]
    if not fresh:
        return common.SILENT
    from sentinel.pathwalk import replace_beneath

    try:
        replace_beneath(bundle.paths.root, marker, json.dumps(sorted(seen | set(fresh))).encode())
    except OSError:  # a link in the repository's state directory: nothing written through it, nothing announced
        return common.SILENT
    text = f"Sentinel: {len(fresh)} draft rule(s) to review ({', '.join(fresh)}): sentinel rules drafts"
    return common.Reply(stdout=common.as_json({"systemMessage": text}))


if __name__ == "__main__":
    work(sys.argv[1], sys.argv[2], sys.argv[3])
