"""The worker's store is one protocol: what the loop may ask (`RunStore`) is exactly what `RemoteStore` asks the
supervisor and what the supervisor answers on a worker's channel, so no op is answered that the protocol does not
name (nothing that resolves an approval or records trust) and none the loop needs is missing."""

from __future__ import annotations

from sentinel.engine.runstore import RunStore
from sentinel.engine.store import Store
from sentinel.supervisor.workers import CHANNEL_OPS
from sentinel.worker.remote import RemoteStore

CHANNEL_ONLY = {"hello", "error"}  # the channel's own: the greeting, a worker's last words


def _methods(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def test_the_supervisor_answers_exactly_the_run_store():
    assert set(CHANNEL_OPS) - CHANNEL_ONLY == _methods(RunStore)
    assert not {"resolve", "trust_tool", "trust_mcp", "revoke_trust", "set_model"} & set(CHANNEL_OPS)


def test_both_stores_implement_it():
    assert _methods(RunStore) <= _methods(RemoteStore) and _methods(RunStore) <= _methods(Store)
