"""Watcher files: every bad field gets one line naming the file and the field; never a traceback."""

from __future__ import annotations

import pytest
import yaml

from sentinel.errors import ConfigError
from sentinel.watchers import spec
from sentinel.watchers.cron import Cron

from watch_helpers import price_watcher


def write(home, data, name=None):
    path = home / "watchers" / f"{name or data.get('id', 'x')}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("change,expected", [
    ({"strategy": {"type": "http-poll", "endpoint": "ftp://x", "intervalS": 1}}, "strategy.endpoint: String should match"),
    ({"strategy": {"type": "http-poll", "endpoint": "http://x", "intervalS": 0}}, "strategy.intervalS: Input should be greater than 0"),
    ({"strategy": {"type": "carrier-pigeon"}}, "strategy: Input tag 'carrier-pigeon' found using 'type' does not match"),
    ({"strategy": {"type": "schedule", "cron": "61 * * * *"}}, "strategy: cron minute field '61' is outside 0-59"),
    ({"match": {"path": "price", "op": "~=", "value": 1}}, "match.op: Input should be"),
    ({"match": {"path": "price", "op": "matches", "value": "("}}, "match: value is not a valid regex"),
    ({"fire": {"environment": "staging"}}, "fire.environment: Input should be 'test' or 'prod'"),
    ({"delivery": [{"type": "file"}]}, "delivery.0: a file target needs `path`"),
    ({"surprise": 1}, "surprise: Extra inputs are not permitted"),
])
def test_bad_field_is_named(sentinel_home, change, expected):
    path = write(sentinel_home, {**price_watcher("eth", "http://127.0.0.1:9/"), **change})
    with pytest.raises(ConfigError) as err:
        spec.load_file(path)
    assert str(err.value).startswith(f"{path}: ") and expected in str(err.value)
    assert "\n" not in str(err.value)


def test_two_bad_fields_both_named(sentinel_home):
    path = write(sentinel_home, {**price_watcher("eth", "http://127.0.0.1:9/"), "cooldownS": -1, "priority": "meh"})
    message = str(pytest.raises(ConfigError, spec.load_file, path).value)
    assert "cooldownS:" in message and "priority:" in message


def test_id_must_match_file_name(sentinel_home):
    path = write(sentinel_home, price_watcher("eth", "http://127.0.0.1:9/"), name="btc")
    assert "id: 'eth' must match the file name (btc.yaml)" in str(pytest.raises(ConfigError, spec.load_file, path).value)


def test_cli_lists_good_watchers_and_one_line_per_bad_file(sentinel_home, cli):
    write(sentinel_home, price_watcher("eth", "http://127.0.0.1:9/"))
    write(sentinel_home, "id: [unclosed\n", name="broken")
    write(sentinel_home, {**price_watcher("btc", "http://127.0.0.1:9/"), "eventName": None})
    proc = cli("watch", "list")
    assert proc.returncode == 2 and "eth" in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("error: ") for line in lines)
    assert "broken.yaml: line 2: invalid YAML" in proc.stderr and "btc.yaml: eventName:" in proc.stderr
    shown = cli("watch", "show", "btc")
    assert shown.returncode == 2 and len(shown.stderr.strip().splitlines()) == 1 and "Traceback" not in shown.stderr
    assert cli("watch", "fire", "eth", "--payload", "{nope").stderr.strip() == \
        "error: --payload: not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"


def test_cron_next_minute():
    cron = Cron.parse("*/15 9-17 * * 1-5")
    import datetime as dt

    monday_0901 = dt.datetime(2026, 11, 23, 9, 1).timestamp()
    assert dt.datetime.fromtimestamp(cron.next_after(monday_0901)) == dt.datetime(2026, 11, 23, 9, 15)
    friday_late = dt.datetime(2026, 11, 27, 17, 50).timestamp()
    assert dt.datetime.fromtimestamp(cron.next_after(friday_late)) == dt.datetime(2026, 11, 30, 9, 0)
