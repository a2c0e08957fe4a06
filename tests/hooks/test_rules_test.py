"""`sentinel rules test RULE --payload FILE` (sentinel/hooks/rulestest.py) on payloads that carry several actions."""

from __future__ import annotations

import pytest

from sentinel.errors import UsageError
from sentinel.hooks.rulestest import run_test
from sentinel.policy.gate.loader import load_repo

BILLING = {"trigger": "file_write", "scope": ["src/core/billing/**"], "prompt": "FILE: {{file_path}}"}
PATCH = ("*** Begin Patch\n*** Update File: README.md\n@@\n-a\n+b\n*** Add File: src/core/billing/x.ts\n+1\n"
         "*** End Patch\n")


def test_a_patch_is_reported_on_the_file_the_rule_applies_to(repo):
    root = repo({"billing": BILLING})
    payload = {"cwd": str(root), "tool_name": "apply_patch", "tool_input": {"command": PATCH}}
    report = run_test(load_repo(str(root)), str(root), "billing", payload, "codex", dry_run=True)
    assert report["in_scope"] is True and report["target"] == "src/core/billing/x.ts"
    assert report["prompt"] == "FILE: src/core/billing/x.ts"


def test_a_patch_the_rule_does_not_cover_is_out_of_scope(repo):
    root = repo({"billing": BILLING})
    patch = "*** Begin Patch\n*** Update File: README.md\n@@\n-a\n+b\n*** End Patch\n"
    payload = {"cwd": str(root), "tool_name": "apply_patch", "tool_input": {"command": patch}}
    report = run_test(load_repo(str(root)), str(root), "billing", payload, "codex", dry_run=True)
    assert report["in_scope"] is False and report["target"] == "README.md"


def test_one_write_is_still_tested_as_before(repo):
    root = repo({"billing": BILLING})
    payload = {"cwd": str(root), "tool_name": "Write",
               "tool_input": {"file_path": str(root / "src/core/billing/y.ts"), "content": "1"}}
    report = run_test(load_repo(str(root)), str(root), "billing", payload, "claude-code", dry_run=True)
    assert report["in_scope"] is True and report["target"] == "src/core/billing/y.ts"


def test_a_patch_without_a_file_is_one_line(repo):
    root = repo({"billing": BILLING})
    payload = {"cwd": str(root), "tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\n"}}
    with pytest.raises(UsageError, match="^payload: apply_patch carries no file header"):
        run_test(load_repo(str(root)), str(root), "billing", payload, "codex", dry_run=True)
