"""Test isolation: every test gets its own SENTINEL_HOME; root-only tests skip when not root."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def sentinel_home(tmp_path, monkeypatch):
    home = tmp_path / "sentinel-home"
    home.mkdir()
    monkeypatch.setenv("SENTINEL_HOME", str(home))
    for var in ("SENTINEL_SOCKET", "SENTINEL_DEFAULT_MODEL", "SENTINEL_DEFAULT_AGENT", "SENTINEL_SANDBOX"):
        monkeypatch.delenv(var, raising=False)
    return home


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (CI runs as root)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
