"""Sources: webhook (secret checked, bodies queued), file (change after the baseline), command, schedule,
and matching/templates."""

from __future__ import annotations

import json
import select
import threading
import urllib.error
import urllib.request

import pytest

from sentinel.watchers.match import MISSING, compare, holds, lookup, render_any
from sentinel.watchers.spec import Match, Watcher
from sentinel.watchers.strategies import SourceError, make_source


def watcher(strategy, **extra):
    return Watcher.model_validate({"id": "w", "eventName": "e", "strategy": strategy, **extra})


def post(url, body, secret):
    request = urllib.request.Request(url, data=body, method="POST", headers={"X-Sentinel-Secret": secret})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_webhook_checks_the_secret_and_queues_json_bodies():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    source = make_source(watcher({"type": "webhook", "port": port, "secret": "s" * 20}), None)
    url = f"http://127.0.0.1:{port}/hooks/w"
    try:
        for body, secret, expected in ((b'{"a": 1}', "wrong-secret-xxxxxxx", 403), (b'{"a": 2}', "s" * 20, 202),
                                       (b"not json", "s" * 20, 400)):
            result = []
            client = threading.Thread(target=lambda: result.append(post(url, body, secret)))
            client.start()
            while client.is_alive():
                if select.select([source.fileno()], [], [], 0.1)[0]:
                    source.readable()
            assert result == [expected]
        assert source.poll(0) == [{"a": 2}] and source.poll(0) == []
    finally:
        source.close()


def test_file_source_reports_changes_after_its_baseline(tmp_path):
    path = tmp_path / "policy.txt"
    path.write_text("v1")
    source = make_source(watcher({"type": "file", "path": str(path)}), None)
    assert source.poll(0) == []
    path.write_text("v2")
    [change] = source.poll(0)
    assert change["event"] == "changed" and change["path"] == str(path)
    path.unlink()
    assert source.poll(0)[0]["event"] == "deleted"


def test_command_source_parses_stdout_and_reports_failure():
    outputs = iter([(0, '{"depth": 12}'), (0, "not json"), (3, "boom")])
    source = make_source(watcher({"type": "command", "argv": ["queue-depth"]}), lambda argv, t, stdin: next(outputs))
    assert source.poll(0) == [{"depth": 12}]
    with pytest.raises(SourceError, match="stdout is not JSON"):
        source.poll(0)
    with pytest.raises(SourceError, match="queue-depth exited 3: boom"):
        source.poll(0)


def test_schedule_interval_ticks():
    source = make_source(watcher({"type": "schedule", "intervalS": 60}), None)
    first_due = source.due_at
    [tick] = source.poll(first_due)
    assert "scheduledAt" in tick and source.due_at == first_due + 60


@pytest.mark.parametrize("op,left,right,expected", [
    ("<", "1990.5", 2000, True), (">=", 5, "5", True), ("==", "5", 5.0, True), ("!=", "a", "b", True),
    ("contains", ["x", "y"], "y", True), ("contains", "a dip", "dip", True), ("matches", "ERR-42", r"ERR-\d+", True),
    ("<", "n/a", 2000, False), ("<", MISSING, 2000, False)])
def test_operators(op, left, right, expected):
    assert compare(op, left, right) is expected


def test_changed_paths_and_templates():
    data = {"prices": [{"eth": 1990}]}
    assert lookup(data, "$.prices[0].eth") == 1990 == lookup(data, "prices.0.eth")
    assert lookup(data, "$.prices[3].eth") is MISSING
    changed = Match(path="prices.0.eth", op="changed")
    assert holds(changed, data) == (False, 1990)                 # nothing to compare with yet
    assert holds(changed, data, 2010) == (True, 1990) and holds(changed, data, 1990)[0] is False
    ctx = {"data": data, "value": 1990}
    assert render_any({"p": "{{data.prices.0.eth}}", "s": "at {{ value }}", "n": "{{nope}}"}, ctx) == \
        {"p": 1990, "s": "at 1990", "n": None}
    assert json.dumps(render_any(["{{data}}"], ctx)) == json.dumps([data])
