"""Notifications from real runs (`sentinel run` in a fresh process, the scripted model over real HTTP) to loopback
receivers: one per pause, within a second, with retries, recorded, and a failing target in `sentinel status`."""

from __future__ import annotations

import json
import time

import pytest


def _paused(cli) -> dict:
    return cli.json("run", "write that it ran to ran.txt", "--json", check=3)


def test_a_pause_posts_exactly_one_notification_within_a_second(notify_config, webhook, cli):
    hook = webhook()
    notify_config([{"type": "webhook", "url": hook.url, "on": ["approval"]}])
    run = _paused(cli)
    paused_at = time.time()
    (got,) = hook.wait(1, timeout=5)
    assert got["t"] - paused_at < 1.0, f"{got['t'] - paused_at:.2f} s"
    doc = got["json"]
    assert (doc["event"], doc["run_id"], doc["approval_id"], doc["tool"]) == ("approval", run["id"],
                                                                            run["approval_id"], "bash")
    assert "echo ran >> ran.txt" in doc["arguments"] and doc["reason"]
    assert doc["url"].startswith("http://127.0.0.1:8789/s/") and doc["url"].endswith(f"/runs/{run['id']}")
    assert "decide_url" not in doc  # one_tap is off
    assert f"run {run['id']} waits for approval" in doc["message"]
    cli("resume", run["id"], check=3)  # still paused: the same pause, no second notification
    time.sleep(1.5)
    assert len(hook.received) == 1


def test_a_webhook_and_an_smtp_receiver_each_get_one_per_pause_and_the_end(notify_config, webhook, smtp, cli):
    hook = webhook()
    notify_config([{"type": "webhook", "url": hook.url},
                   {"type": "email", "host": "127.0.0.1", "port": smtp.port, "from": "sentinel@example.test",
                    "to": ["ops@example.test"], "on": ["approval", "done"], "one_tap": True}])
    run = _paused(cli)
    hook.wait(1)
    (mail,) = smtp.wait(1)
    assert mail["to"] == ["ops@example.test"] and mail["from"] == "sentinel@example.test"
    message = mail["message"]
    assert message["Subject"] == f"Sentinel: run {run['id']} waits for approval"
    body = message.get_body(("plain",)).get_content()
    assert "tool: bash" in body and "echo ran >> ran[.]txt" in body and "/link/" in body
    page = message.get_body(("html",)).get_content()  # the HTML part: the command escaped, the link Sentinel's
    assert "echo ran &gt;&gt; ran[.]txt" in page and 'href="http' in page and "/link/" in page
    cli("approve", run["approval_id"], check=0)
    events = [r["json"]["event"] for r in hook.wait(2)]
    assert events == ["approval", "done"]
    assert [m["message"]["Subject"] for m in smtp.wait(2)][1] == f"Sentinel: run {run['id']} finished"
    time.sleep(1.0)
    assert len(hook.received) == 2 and len(smtp.mail) == 2


def test_chat_style_payloads_for_slack_discord_telegram_and_ntfy(notify_config, webhook, cli, monkeypatch):
    slack, discord, telegram, ntfy = webhook(), webhook(), webhook(), webhook()
    base = telegram.url.rsplit("/", 1)[0]
    notify_config([{"type": "slack", "url": slack.url, "on": ["approval"]},
                   {"type": "discord", "url": discord.url, "on": ["approval"]},
                   {"type": "telegram", "url": base, "chat_id": "42", "token_env": "TG_TOKEN", "on": ["approval"]},
                   {"type": "ntfy", "url": ntfy.url, "on": ["approval"], "one_tap": True}])
    run = cli.json("run", "write that it ran to ran.txt", "--json", check=3, env={"TG_TOKEN": "123:abc"})
    title = f"Sentinel: run {run['id']} waits for approval"
    assert slack.wait(1)[0]["json"]["text"].startswith(title)
    assert discord.wait(1)[0]["json"]["content"].startswith(title)
    (tg,) = telegram.wait(1)
    assert tg["path"] == "/bot123:abc/sendMessage" and tg["json"]["chat_id"] == "42"
    assert tg["json"]["text"].startswith(title)
    (push,) = ntfy.wait(1)
    assert push["headers"]["Title"] == title and push["body"].decode().startswith(title)
    assert push["headers"]["Click"].endswith(f"/runs/{run['id']}")
    assert push["headers"]["Actions"].startswith("view, Approve or deny, http://127.0.0.1:8789/s/")


def test_a_failing_target_is_retried_and_then_delivered_once(notify_config, webhook, cli, sentinel_home):
    hook = webhook(fail_first=2)
    notify_config([{"type": "webhook", "url": hook.url, "on": ["approval"], "backoff_s": 0.2}])
    _paused(cli)
    (got,) = hook.wait(1, timeout=10)
    from sentinel.engine import outbox
    from sentinel.engine.store import Store

    def recorded():  # the receiver sees the POST before the sender has written down its answer
        with Store.open(sentinel_home / "state" / "sentinel.db") as store:
            (row,) = outbox.history(store.conn)
        return row["status"], row["attempts"]

    deadline = time.monotonic() + 10
    while (seen := recorded())[0] == "pending" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert seen == ("delivered", 3)
    time.sleep(0.5)
    assert len(hook.received) == 1


def test_a_target_that_gives_up_shows_in_status(notify_config, webhook, cli):
    hook = webhook()
    notify_config([{"type": "webhook", "url": hook.url, "on": ["approval"]},
                   {"type": "webhook", "name": "pager", "url": "http://127.0.0.1:9/down", "on": ["approval"],
                    "attempts": 2, "backoff_s": 0.1}])
    _paused(cli)
    hook.wait(1)
    deadline = time.monotonic() + 10
    while (status := cli.json("status", "--json", check=0))["notify"][1]["state"] != "gave up":
        assert time.monotonic() < deadline, status["notify"]
        time.sleep(0.2)
    ok, pager = status["notify"]
    assert ok == {"target": f"webhook {hook.url}", "state": "ok"}
    assert pager["target"] == "pager" and pager["attempts"] == 2 and "POST pager" in pager["error"]
    text = cli("status", check=0).stdout
    assert "notify:" in text and "pager" in text and "gave up" in text


def test_a_command_and_a_file_target_get_the_watchers_delivery(notify_config, cli, tmp_path):
    out, log = tmp_path / "stdin.txt", tmp_path / "notes.jsonl"
    notify_config([{"type": "command", "argv": ["sh", "-c", f"cat > {out}"], "on": ["approval"]},
                   {"type": "file", "path": str(log), "on": ["approval"]}])
    run = _paused(cli)
    deadline = time.monotonic() + 5
    while not (out.exists() and log.exists() and out.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.read_text().startswith(f"Sentinel: run {run['id']} waits for approval")
    (line,) = log.read_text().splitlines()
    assert json.loads(line)["approval_id"] == run["approval_id"]


@pytest.mark.parametrize("target, message", [
    ({"type": "webhook"}, "notify.0: Value error, a webhook target needs `url`"),
    ({"type": "email", "host": "h", "to": ["a@b"]}, "notify.0: Value error, a email target needs `from`"),
    ({"type": "pager", "url": "http://x"}, "notify.0.type: Input should be"),
    ({"type": "slack", "url": "ftp://x"}, "must start with http:// or https://"),
])
def test_a_bad_target_is_one_line_naming_the_field(configure, cli, sentinel_home, target, message):
    configure({"notify": [target]})
    proc = cli("runs", check=2)
    assert message in proc.stderr and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_target_that_never_answers_does_not_hold_up_the_run(notify_config, webhook, cli):
    import socket

    hook = webhook()
    hang = socket.socket()  # accepts (the backlog) and never answers
    hang.bind(("127.0.0.1", 0))
    hang.listen(8)
    notify_config([{"type": "webhook", "name": "hanging", "url": f"http://127.0.0.1:{hang.getsockname()[1]}/",
                    "on": ["approval"], "timeout_s": 60, "attempts": 1},
                   {"type": "webhook", "url": hook.url, "on": ["approval"]}])
    try:
        started = time.monotonic()
        run = _paused(cli)
        assert time.monotonic() - started < 30  # the run's process never waits for a delivery
        (got,) = hook.wait(1, timeout=10)        # nor does another target
        assert got["json"]["run_id"] == run["id"]
        hang.settimeout(10)
        conn, _ = hang.accept()                  # the hanging target was tried, and is still being waited on
        status = {t["target"]: t for t in cli.json("status", "--json", check=0)["notify"]}
        assert status["hanging"]["state"] == "ok"   # not failed yet: its attempt is in flight
        conn.close()                             # now it fails: given up after its one attempt
        deadline = time.monotonic() + 20
        while cli.json("status", "--json", check=0)["notify"][0]["state"] != "gave up":
            assert time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        hang.close()


def test_a_deliverer_that_cannot_start_leaves_the_run_standing(notify_config, webhook, sentinel_home, monkeypatch,
                                                                capsys):
    from sentinel.local.engine import LocalEngine
    from sentinel import detach

    hook = webhook()
    notify_config([{"type": "webhook", "url": hook.url, "on": ["approval"]}])

    def no_shell(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", "/bin/sh")

    (sentinel_home / "workspace").mkdir(exist_ok=True)
    with monkeypatch.context() as patched, LocalEngine() as engine:
        patched.setattr(detach.plain, "run", no_shell)
        outcome = engine.start("write that it ran to ran.txt", workspace=sentinel_home / "workspace")
    assert outcome.status == "waiting_approval" and outcome.approval_id
    assert "warning: notify: could not queue or start the deliverer" in capsys.readouterr().err
    with LocalEngine() as engine:  # the next kick sends what is queued
        engine.resume(outcome.id)
    (got,) = hook.wait(1)
    assert got["json"]["approval_id"] == outcome.approval_id


def test_a_command_target_is_the_operators_program_not_one_in_the_working_directory(tmp_path, monkeypatch):
    """A relative PATH entry, PYTHONPATH and a relative argv[0] point at what the agent could write: ignored."""
    import os
    import stat

    from sentinel.notify.send import DeliveryError, _command

    shadow, real, marker, record = tmp_path / "ws", tmp_path / "real", tmp_path / "SHADOW-RAN", tmp_path / "out"
    for folder, body in ((shadow / "bin", f"touch {marker}"), (real, f'pwd > {record}; echo "py=$PYTHONPATH" >> '
                                                                    f"{record}; cat >> {record}")):
        folder.mkdir(parents=True)
        (folder / "notifier").write_text(f"#!/bin/sh\n{body}\n")
        (folder / "notifier").chmod(0o755 | stat.S_IXUSR)
    monkeypatch.chdir(shadow)
    monkeypatch.setenv("PATH", f"bin:{real}:{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(shadow))
    _command({"argv": ["notifier"], "timeout_s": 30}, {"id": "n1"}, "hello")
    assert record.read_text().splitlines() == ["/", "py=", "hello"] and not marker.exists()
    with pytest.raises(DeliveryError, match="bin/notifier: not an absolute executable"):
        _command({"argv": ["bin/notifier"], "timeout_s": 30}, {"id": "n1"}, "hello")
    assert not marker.exists()
