"""The audit log: one record per decision or enforcement event, in the state database.

Local mode keeps it in $SENTINEL_HOME/state/sentinel.db; system mode in the
supervisor's root-only database. Writers call `record(kind, **fields)`.
"""

from __future__ import annotations

from pathlib import Path


def record(kind: str, db_path: Path | str | None = None, **fields: object) -> None:
    from sentinel.engine.store import Store

    store = Store.open(db_path)
    try:
        store.audit(kind, fields)
    finally:
        store.close()
