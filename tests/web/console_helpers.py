"""Helpers the web tests import (conftest modules are not importable by name across test folders)."""

from __future__ import annotations


def pending() -> list[dict]:
    """The pending approvals, read as the CLI reads them (local mode, this test's SENTINEL_HOME)."""
    from sentinel.local.engine import LocalEngine

    engine = LocalEngine()
    try:
        return [a.to_dict() for a in engine.pending()]
    finally:
        engine.close()
