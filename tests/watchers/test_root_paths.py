"""Root opens nothing by path that an agent pointed elsewhere (sentinel/tools/rootpath.py): a watcher's file
source and operatorGoalFile, a `file` delivery target (watchers and notifications). The agent is `nobody` here: its
tree is a directory it owns, its links are links it owns. A root-owned link in a directory only root writes is
still followed; a FIFO, a device, a file over the cap are one-line errors, never a hang."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import stat

import pytest

from sentinel.watchers import strategies
from sentinel.watchers.deliver import DeliveryError, append_jsonl
from sentinel.watchers.envelope import envelope
from sentinel.watchers.runner import Runner
from sentinel.watchers.spec import Watcher
from sentinel.watchers.strategies import SourceError, make_source

pytestmark = pytest.mark.root
NOBODY = pwd.getpwnam("nobody").pw_uid
SECRET = b"s3cret root-only\n"


def watcher(ident="w", **strategy):
    return Watcher.model_validate({"id": ident, "eventName": "e", "strategy": {"type": "file", **strategy}})


@pytest.fixture
def tree(tmp_path):
    """`ws`: the agent's own directory; `vault`: a root-only directory holding `secret`; `etc`: root's, 0755."""
    os.chmod(tmp_path, 0o755)
    ws, vault, etc = tmp_path / "ws", tmp_path / "vault", tmp_path / "etc"
    ws.mkdir()
    os.chown(ws, NOBODY, NOBODY)
    vault.mkdir(mode=0o700)
    (vault / "secret").write_bytes(SECRET)
    os.chmod(vault / "secret", 0o600)
    etc.mkdir(mode=0o755)
    return ws, vault, etc


def agent_link(target, link):
    os.symlink(target, link)
    os.lchown(link, NOBODY, NOBODY)


def file_source(path):
    return make_source(watcher(path=str(path), intervalS=1), None)


# -- the file source ------------------------------------------------------------------------------------------

def test_file_source_refuses_an_agent_link_on_the_file(tree):
    ws, vault, _ = tree
    source = file_source(ws / "report.json")
    agent_link(vault / "secret", ws / "report.json")
    with pytest.raises(SourceError, match="goes through the link .*report.json, which a user other than root") as exc:
        source.poll(0)
    assert hashlib.sha256(SECRET).hexdigest() not in str(exc.value) and "\n" not in str(exc.value)


def test_file_source_refuses_an_agent_link_on_a_parent(tree):
    ws, vault, _ = tree
    agent_link(vault, ws / "out")
    with pytest.raises(SourceError, match=r"goes through the link .*/ws/out,"):
        file_source(ws / "out" / "secret").poll(0)


def test_a_root_link_the_agent_can_replace_is_refused_too(tree):
    ws, vault, _ = tree
    os.symlink(vault / "secret", ws / "report.json")  # root's, but in the agent's directory
    with pytest.raises(SourceError, match="which a user other than root could have made"):
        file_source(ws / "report.json").poll(0)


def test_a_root_link_in_a_root_only_directory_is_followed(tree):
    ws, _, etc = tree
    (ws / "report.json").write_text("v1")
    os.symlink(ws / "report.json", etc / "report.json")
    source = file_source(etc / "report.json")
    (ws / "report.json").write_text("v2")
    [change] = source.poll(0)
    assert change["event"] == "changed" and change["sha256"] == hashlib.sha256(b"v2").hexdigest()


@pytest.mark.timeout(20)
def test_a_fifo_is_an_error_not_a_hang(tree):
    ws, _, _ = tree
    source = file_source(ws / "report.json")
    os.mkfifo(ws / "report.json")
    with pytest.raises(SourceError, match=r"report.json: not a regular file \(a FIFO\)"):
        source.poll(0)


def test_dev_zero_is_refused_whether_linked_or_named(tree):
    ws, _, _ = tree
    agent_link("/dev/zero", ws / "report.json")
    with pytest.raises(SourceError, match="goes through the link"):
        file_source(ws / "report.json").poll(0)
    with pytest.raises(SourceError, match=r"not a regular file \(a character device\)"):
        file_source("/dev/zero").poll(0)


def test_a_hard_link_in_the_agents_tree_is_refused(tree):
    ws, vault, _ = tree
    os.link(vault / "secret", ws / "report.json")  # what fs.protected_hardlinks=0 would let the agent do
    with pytest.raises(SourceError, match="has other hard links"):
        file_source(ws / "report.json").poll(0)


def test_reads_are_capped(tree, monkeypatch):
    ws, _, _ = tree
    monkeypatch.setattr(strategies, "FILE_MAX", 1000)
    (ws / "big").write_bytes(b"x" * 1001)
    with pytest.raises(SourceError, match="larger than 1000 bytes"):
        file_source(ws / "big").poll(0)


def test_a_link_put_in_after_the_check_is_not_followed(tree, monkeypatch):
    from sentinel.tools import rootpath

    ws, vault, _ = tree
    (ws / "report.json").write_text("v1")
    checked = rootpath.vetted

    def then_swapped(path):
        real = checked(path)
        os.unlink(ws / "report.json")
        agent_link(vault / "secret", ws / "report.json")
        return real

    monkeypatch.setattr(rootpath, "vetted", then_swapped)
    with pytest.raises(OSError, match="put on the way after it was checked"):
        rootpath.open_read(str(ws / "report.json"))


@pytest.mark.timeout(30)
def test_a_refused_watcher_is_one_log_line_and_the_others_keep_going(tree):
    from sentinel.local.engine import LocalEngine

    ws, _, _ = tree
    os.mkfifo(ws / "pipe")
    (ws / "good").write_text("v1")
    lines, started = [], []

    class Hooks:
        def start(self, task, **kw):
            started.append(task)

    with LocalEngine() as engine:
        runner = Runner(Hooks(), engine.store, engine.config,
                        [watcher("bad", path=str(ws / "pipe")), watcher("good", path=str(ws / "good"))],
                        lambda argv, t, stdin: (0, ""), log=lines.append)
        runner.open()
        (ws / "good").write_text("v2")
        for source in runner.sources.values():
            source.due_at = 0
        fired = runner.tick()
    assert [line for line in lines if "bad" in line] == \
        [f"watcher bad: {ws / 'pipe'}: not a regular file (a FIFO); only a regular file is read or written"]
    assert len(fired) == 1 and len(started) == 1


# -- operatorGoalFile: its text goes to the hook session ----------------------------------------------------

def test_operator_goal_file_through_an_agent_link_is_not_read(tree):
    ws, vault, _ = tree
    agent_link(vault / "secret", ws / "goal.md")
    w = Watcher.model_validate({"id": "w", "eventName": "e", "strategy": {"type": "schedule", "intervalS": 60},
                                "fire": {"operatorGoalFile": str(ws / "goal.md")}})
    text = envelope(w, {}, None, "k", 0)["mode"]["operatorGoalRuntimeContext"]
    assert "could not be read: goes through the link" in text and "s3cret" not in text


@pytest.mark.timeout(20)
def test_operator_goal_file_fifo_and_size(tree):
    ws, _, _ = tree
    os.mkfifo(ws / "goal.md")
    w = Watcher.model_validate({"id": "w", "eventName": "e", "strategy": {"type": "schedule", "intervalS": 60},
                                "fire": {"operatorGoalFile": str(ws / "goal.md")}})
    assert "not a regular file (a FIFO)" in envelope(w, {}, None, "k", 0)["mode"]["operatorGoalRuntimeContext"]
    os.unlink(ws / "goal.md")
    (ws / "goal.md").write_text("g" * 100_000)
    assert envelope(w, {}, None, "k", 0)["mode"]["operatorGoalRuntimeContext"] == "g" * 20000


# -- the file target (watchers' and notifications' alike) ---------------------------------------------------

DOC = {"message": "agent-chosen text"}


def test_append_refuses_an_agent_link_on_the_file(tree):
    ws, vault, _ = tree
    agent_link(vault / "secret", ws / "log.jsonl")
    with pytest.raises(DeliveryError, match="goes through the link"):
        append_jsonl(ws / "log.jsonl", DOC)
    assert (vault / "secret").read_bytes() == SECRET


def test_append_refuses_an_agent_link_on_a_parent(tree):
    ws, vault, _ = tree
    agent_link(vault, ws / "logs")
    with pytest.raises(DeliveryError, match=r"goes through the link .*/ws/logs,"):
        append_jsonl(ws / "logs" / "cron.d" / "x.jsonl", DOC)
    assert sorted(os.listdir(vault)) == ["secret"]


def test_append_makes_missing_directories_beneath_without_links(tree):
    ws, _, _ = tree
    append_jsonl(ws / "a" / "b" / "log.jsonl", DOC)
    append_jsonl(ws / "a" / "b" / "log.jsonl", DOC)
    lines = (ws / "a" / "b" / "log.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [DOC, DOC]
    assert stat.S_IMODE(os.stat(ws / "a" / "b" / "log.jsonl").st_mode) == 0o600


def test_append_follows_a_root_link_in_a_root_only_directory(tree):
    ws, _, etc = tree
    os.symlink(ws, etc / "logs")
    append_jsonl(etc / "logs" / "log.jsonl", DOC)
    assert json.loads((ws / "log.jsonl").read_text()) == DOC


@pytest.mark.timeout(20)
def test_append_to_a_fifo_is_an_error_not_a_hang(tree):
    ws, _, _ = tree
    os.mkfifo(ws / "log.jsonl")
    with pytest.raises(DeliveryError, match="log.jsonl: "):  # no reader: ENXIO
        append_jsonl(ws / "log.jsonl", DOC)
    reader = os.open(ws / "log.jsonl", os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(DeliveryError, match=r"not a regular file \(a FIFO\)"):
            append_jsonl(ws / "log.jsonl", DOC)
    finally:
        os.close(reader)


def test_notification_file_target_takes_the_same_path(tree):
    from sentinel.notify.send import send

    ws, vault, _ = tree
    agent_link(vault, ws / "notes")
    spec = {"type": "file", "timeout_s": 5, "url": None, "name": None, "headers": {},
            "path": str(ws / "notes" / "n.jsonl")}
    with pytest.raises(DeliveryError, match="goes through the link"):
        send(spec, {"event": "done", "run_id": "r-1", "task": "t"})
    assert sorted(os.listdir(vault)) == ["secret"]


def test_local_mode_still_follows_links(tree, monkeypatch):
    """Not root: no boundary between the operator and its agent's uid; links are followed as before."""
    ws, _, etc = tree
    (ws / "report.json").write_text("v1")
    agent_link(ws / "report.json", etc / "report.json")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    source = file_source(etc / "report.json")
    assert source.seen == hashlib.sha256(b"v1").hexdigest()

