"""The audit log: one record per decision or enforcement event, in the state database.

Local mode keeps it in $SENTINEL_HOME/state/sentinel.db; system mode in the
supervisor's root-only database. Writers call `record(kind, **fields)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


# Any (`fields`): the record's JSON values, whatever each writer's kind carries (the audit log keeps them as given)
def record(kind: str, db_path: Path | str | None = None, **fields: Any) -> None:
    from sentinel.engine.store import Store

    store = Store.open(db_path)
    try:
        store.audit(kind, fields)
    finally:
        store.close()
