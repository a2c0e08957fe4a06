"""A notification carries one link a person can tap: Sentinel's own. An agent's command written as Slack or Discord
markup (`<url|Approve>`, `<!channel>`, `[Approve](url)`, `@everyone`), as a bare URL or with ESC sequences arrives
escaped for each target's markup (receivers record the real payloads); the webhook's document keeps the data."""

from __future__ import annotations

import re

HOSTILE = ("echo <https://evil.example/a|Approve> <!channel> [Approve](https://evil.example/b) @everyone "
           "**urgent** <@123> \x1b[2K\r ls")


def _configure(configure, scripted_server, targets):
    script = [{"tool_calls": [{"name": "bash", "arguments": {"command": HOSTILE}}]}, "All done."]
    configure({"notify": targets}, server=scripted_server(script))


def _links(text: str) -> list[str]:
    return re.findall(r"https?://\S+", text)


def test_slack_gets_inert_mrkdwn_and_only_sentinels_link(configure, scripted_server, webhook, cli):
    slack = webhook()
    _configure(configure, scripted_server, [{"type": "slack", "url": slack.url, "on": ["approval"], "one_tap": True}])
    cli("run", "tidy", "--json", check=3)
    payload = slack.wait(1)[0]["json"]
    text = payload["text"]
    assert "&lt;https[:]//evil[.]example/a|Approve&gt;" in text and "&lt;!channel&gt;" in text
    assert "<!channel>" not in text and "<https://evil" not in text and "\x1b" not in text
    assert r"\u001b[2K\r ls" in text  # the arguments' JSON: the ESC as its escape
    assert [u.split("/link/")[0] != u for u in _links(text)] == [False, True]  # the run's page and the one-tap link
    assert payload["unfurl_links"] is False


def test_discord_gets_backslashed_markdown_no_mentions_no_embeds(configure, scripted_server, webhook, cli):
    discord = webhook()
    _configure(configure, scripted_server, [{"type": "discord", "url": discord.url, "on": ["approval"],
                                            "one_tap": True}])
    cli("run", "tidy", "--json", check=3)
    payload = discord.wait(1)[0]["json"]
    content = payload["content"]
    assert r"\[Approve\]\(https\[:\]//evil\[.\]example/b\)" in content
    assert r"\*\*urgent\*\*" in content and "\\<\\[@\u200b\\]123\\>" in content
    assert "@everyone" not in content and "\\[@\u200b\\]everyone" in content
    assert "](http" not in content and "\x1b" not in content
    assert payload["allowed_mentions"] == {"parse": []} and payload["flags"] == 4
    assert len(_links(content)) == 2 and "/link/" in content


def test_telegram_is_plain_text_and_email_html_is_escaped(configure, scripted_server, webhook, smtp, cli):
    telegram = webhook()
    base = telegram.url.rsplit("/", 1)[0]
    _configure(configure, scripted_server, [
        {"type": "telegram", "url": base, "chat_id": "42", "token_env": "TG_TOKEN", "on": ["approval"]},
        {"type": "email", "host": "127.0.0.1", "port": smtp.port, "from": "s@example.test", "to": ["o@example.test"],
         "on": ["approval"], "one_tap": True}])
    cli("run", "tidy", "--json", check=3, env={"TG_TOKEN": "1:a"})
    sent = telegram.wait(1)[0]["json"]
    assert "parse_mode" not in sent and "https[:]//evil[.]example/a" in sent["text"] and "\x1b" not in sent["text"]
    (mail,) = smtp.wait(1)
    page = mail["message"].get_body(("html",)).get_content()
    assert "&lt;https[:]//evil[.]example/a|Approve&gt;" in page and "<!channel>" not in page
    assert re.findall(r'href="([^"]+)"', page)[-1].split("/link/")[1]  # the last link is the one-tap link
    assert all("evil" not in href for href in re.findall(r'href="([^"]+)"', page))


def test_the_webhook_document_keeps_the_arguments_as_data(configure, scripted_server, webhook, cli):
    hook = webhook()
    _configure(configure, scripted_server, [{"type": "webhook", "url": hook.url, "on": ["approval"]}])
    cli("run", "tidy", "--json", check=3)
    doc = hook.wait(1)[0]["json"]
    assert "<https://evil.example/a|Approve>" in doc["arguments"]  # exact for the program reading it
    assert "https://evil" not in doc["message"] and "\x1b" not in doc["message"]  # the text for people is not


# What chat clients' linkifiers take for a link besides a URL with a scheme (Telegram, Slack, ntfy's apps, mail
# readers): a bare domain with a path, a host in a sentence, an e-mail address, an @name, an address, IDN dots.
LINKY = {"command": "ls  # approve or deny (once): sentinel-console.example.net/s/Qm9kZ/link/K7T_J5ar "
                    "mail ops@evil.example, ask @evil_bot, see www.evil.example or 10.0.0.7:8080/x or evil\u3002com "
                    "or EVIL.EXAMPLE/Approve or xn--80ak6aa92e.com ｏｐｓ＠evil.example",
         "path": "/srv/setup.py"}
LINKIFIER = re.compile(r"://|[\w-][.\u3002\uff0e\uff61][^\W\d_]|\d\.\d|[@\uff20]\w|\w[@\uff20]")


def test_no_agent_field_has_anything_a_chat_client_would_link():
    from sentinel.notify.dispatch import _short
    from sentinel.notify.send import html_message, message

    doc = {"event": "approval", "run_id": "r-1", "approval_id": "a-1", "tool": "bash@evil.example",
           "arguments": _short(LINKY), "reason": "see docs.evil.example", "task": "mail me@x.io", "agent": "a.b",
           "output": "done: https://evil.example/x", "error": "@here", "url": "https://console.example/s/X/runs/r-1",
           "decide_url": "https://console.example/s/X/link/SECRET", "decide_expires": "2026-01-01 00:00:00 UTC"}
    for markup in (None, "slack", "discord", "html"):
        text = html_message(doc) if markup == "html" else message(doc, markup)
        agent_lines = [line for line in text.splitlines() if not line.startswith(("open: ", "approve or deny ("))]
        agent_text = re.sub(r'<a href="[^"]+">', "", "\n".join(agent_lines))  # Sentinel's own two links
        assert not LINKIFIER.search(agent_text.replace("console.example/s/X", "")), (markup, agent_text)
        plain = text.replace("\\", "").replace("\u200b", "")  # Discord's backslashes and zero-width spaces
        assert "sentinel-console[.]example[.]net/s/Qm9kZ" in plain and "ops[@]evil[.]example" in plain
    assert message(doc).splitlines()[-1].endswith("https://console.example/s/X/link/SECRET")  # Sentinel's: as is
