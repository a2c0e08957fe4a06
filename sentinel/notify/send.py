"""One attempt to deliver one notification to one target (no store, no retries: sentinel/notify/dispatch.py).

    text = message(doc)            # what a person reads: the run, the tool, its arguments, the reason, the links
    text = message(doc, "slack")   # the same with each field escaped for the target's markup
    send(spec, doc)                # DeliveryError on failure

Transports: the watchers' command, JSONL file and webhook delivery (sentinel/watchers/deliver.py), ntfy's
HTTP push (the text as the body, title and links in headers), Slack- and Discord-compatible webhooks
(`{"text"}`, `{"content"}`), Telegram's sendMessage, and email through the configured SMTP server.

Everything of a notification but its title and Sentinel's own links is text an agent wrote or chose (the tool,
its arguments, the reason, the task, the output): each such field is shown with its hiding characters escaped
(sentinel/ui/escape.py), defanged (`defang`: a chat client links by itself a URL, a bare domain, an e-mail address
and an @name, so a scheme shows as `https[:]//`, the dots of anything a host name could be as `[.]`, an `@` as
`[@]`), and
escaped for the target's markup: Slack mrkdwn (`&`, `<`, `>`, so `<url|Approve>` and `<!channel>` are text),
Discord markdown (every markup character backslashed, `@` and `<` made inert, mentions off, no link embeds),
Telegram with no parse mode, email as plain text with an HTML alternative built with `html.escape`. So the only
link a person can tap in a notification is Sentinel's own. The webhook and file documents carry the fields
exactly (they are data for a program); their `message` is the plain text.
"""

from __future__ import annotations

import html
import json
import os
import re
import smtplib
import ssl
import subprocess
from email.message import EmailMessage
from pathlib import Path
from typing import TYPE_CHECKING

from sentinel.jsontypes import JSON, JSONObject
from sentinel.ui.escape import visible
from sentinel.watchers.deliver import DeliveryError, append_jsonl, post, post_json

if TYPE_CHECKING:
    from sentinel.notify.settings import TargetSpec

TELEGRAM_API = "https://api.telegram.org"
DISCORD_MAX = 2000
TITLES = {"approval": "run {run_id} waits for approval", "done": "run {run_id} finished",
          "done_unverified": "run {run_id} finished, not verified",
          "failed": "run {run_id} failed", "escalated": "watcher {watcher} escalated"}


FIELDS = (("tool", "tool"), ("arguments", "arguments"), ("reason", "reason"), ("task", "task"), ("agent", "agent"),
          ("output", "output"), ("error", "error"), ("severity", "severity"))
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*)://")
# A dot a linkifier could take for a host's (`evil.example/x`, `www.x`, `ops@evil.example`, `setup.py`: `.py` is a
# TLD): between a label and a letter (every TLD starts with one; IDN dots too), or in a dotted-quad address.
_HOST_DOT = re.compile(r"(?<=[\w-])[.\u3002\uff0e\uff61](?=[^\W\d_])")
_QUAD = re.compile(r"\b\d{1,3}(?:[.\u3002\uff0e\uff61]\d{1,3}){3}\b")
_AT = re.compile(r"[@\uff20]")  # an e-mail address, an @name (Telegram, Slack), a fullwidth one
_DISCORD = re.compile(r"([\\`*_~|>\[\]()<])")  # fields never start a line: no heading or list to escape
# Discord: mentions parse nothing, link previews off (SUPPRESS_EMBEDS).
DISCORD_QUIET: JSONObject = {"allowed_mentions": {"parse": []}, "flags": 4}


def title(doc: JSONObject, markup: str | None = None) -> str:
    fields = {k: _field(v, markup) for k, v in doc.items() if k in ("run_id", "watcher")}
    return "Sentinel: " + TITLES[str(doc["event"])].format_map({"run_id": "", "watcher": "", **fields})


def message(doc: JSONObject, markup: str | None = None) -> str:
    """What a person reads; `markup` ("slack", "discord", "html"): each agent-written field escaped for it."""
    lines = [title(doc, markup)]
    for key, label in FIELDS:
        if doc.get(key):
            lines.append(f"{label}: {_field(doc[key], markup)}")
    if doc.get("url"):
        lines.append(f"open: {doc['url']}")
    if doc.get("decide_url"):
        lines.append(f"approve or deny (once, until {doc['decide_expires']}): {doc['decide_url']}")
    return "\n".join(lines)


def _field(value: JSON, markup: str | None) -> str:
    """An agent-written field as one inert line: hiding characters shown, links defanged, the markup escaped."""
    text = defang(visible(value))
    if markup == "slack":
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if markup == "discord":
        return _DISCORD.sub(r"\\\1", text).replace("@", "@\u200b")  # a zero-width space: no @everyone
    if markup == "html":
        return html.escape(text)
    return text


def defang(text: str) -> str:
    """`text` with nothing a chat client's linkifier takes for a link: a scheme as `https[:]//`, each dot of what
    could be a host name (`evil[.]example`, `1[.]2[.]3[.]4`) as `[.]`, each `@` (an e-mail address, a mention)
    as `[@]`. Read by a person, it says the same; tapped, it opens nothing."""
    text = _SCHEME.sub(lambda m: f"{m.group(1)}[:]//", text)
    text = _QUAD.sub(lambda m: re.sub(r"[.\u3002\uff0e\uff61]", "[.]", m.group(0)), text)
    return _AT.sub("[@]", _HOST_DOT.sub("[.]", text))


def html_message(doc: JSONObject) -> str:
    """The email's HTML part: the fields escaped, the only link Sentinel's own."""
    rows = "".join(f"<tr><th align=left>{label}</th><td>{_field(doc[key], 'html')}</td></tr>"
                   for key, label in FIELDS if doc.get(key))
    links = []
    if doc.get("url"):
        links.append(f'<a href="{html.escape(str(doc["url"]))}">open the run</a>')
    if doc.get("decide_url"):
        links.append(f'<a href="{html.escape(str(doc["decide_url"]))}">approve or deny</a> '
                     f"(once, until {html.escape(str(doc['decide_expires']))})")
    return (f"<html><body><p><b>{title(doc, 'html')}</b></p><table>{rows}</table>"
            f"<p>{' · '.join(links)}</p></body></html>")


def send(spec: TargetSpec, doc: JSONObject) -> None:
    kind, timeout, text, url = spec["type"], spec["timeout_s"], message(doc), spec["url"]
    shown = spec.get("name") or kind
    headers = dict(spec.get("headers") or {})
    if kind == "webhook":
        post_json(_needs(url, "url"), {**doc, "title": title(doc), "message": text}, timeout, headers, shown)
    elif kind == "slack":
        body: JSONObject = {"text": message(doc, "slack"), "unfurl_links": False, "unfurl_media": False}
        post_json(_needs(url, "url"), body, timeout, headers, shown)
    elif kind == "discord":
        body = {"content": _cut(message(doc, "discord"), DISCORD_MAX), **DISCORD_QUIET}
        post_json(_needs(url, "url"), body, timeout, headers, shown)
    elif kind == "telegram":
        bot = f"{(url or TELEGRAM_API).rstrip('/')}/bot{_secret(spec['token_env'], 'token_env')}"
        post_json(f"{bot}/sendMessage", {"chat_id": spec["chat_id"], "text": text, "disable_web_page_preview": True},
                  timeout, headers, shown)
    elif kind == "ntfy":
        post(_needs(url, "url"), text.encode(), {**_ntfy_headers(doc), **headers}, timeout, shown)
    elif kind == "email":
        _mail(spec, doc, text)
    elif kind == "command":
        _command(spec, doc, text)
    elif kind == "file":
        append_jsonl(Path(os.path.expanduser(_needs(spec["path"], "path"))), {**doc, "message": text})
    else:
        raise DeliveryError(f"unknown target type {kind!r}")


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters, Sentinel's link lines kept whole: the agent's fields give way first."""
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    tail = [line for line in lines if line.startswith(("open: ", "approve or deny "))]
    head = "\n".join(line for line in lines if line not in tail)
    room = max(0, limit - sum(len(t) + 1 for t in tail) - 1)
    return "\n".join([head[:room].rstrip("\\") + "…", *tail])[:limit]


def _needs(value: str | None, field: str) -> str:
    """A field the target's type requires (settings.REQUIRED checked it when the config loaded)."""
    if value is None:
        raise DeliveryError(f"the target has no {field}")
    return value


def _secret(variable: str | None, field: str) -> str:
    value = os.environ.get(variable or "")
    if not value:
        raise DeliveryError(f"{field} {variable}: the variable is not set for the deliverer")
    return value


def _ntfy_headers(doc: JSONObject) -> dict[str, str]:
    """ntfy's publish headers (ASCII only: header values are latin-1 on the wire)."""
    headers = {"Title": title(doc).encode("ascii", "replace").decode(), "Tags": str(doc["event"])}
    if doc["event"] in ("approval", "escalated", "failed"):
        headers["Priority"] = "high"
    if doc.get("url"):
        headers["Click"] = str(doc["url"])
    if doc.get("decide_url"):
        headers["Actions"] = f"view, Approve or deny, {doc['decide_url']}, clear=true"
    return headers


def _mail(spec: TargetSpec, doc: JSONObject, text: str) -> None:
    mail = EmailMessage()
    mail["Subject"], mail["From"], mail["To"] = title(doc), spec["from"], ", ".join(spec["to"])
    mail.set_content(text)
    mail.add_alternative(html_message(doc), subtype="html")
    host, port, timeout, username = _needs(spec["host"], "host"), spec["port"], spec["timeout_s"], spec["username"]
    try:
        if spec.get("ssl"):
            client: smtplib.SMTP = smtplib.SMTP_SSL(host, port, timeout=timeout, context=ssl.create_default_context())
        else:
            client = smtplib.SMTP(host, port, timeout=timeout)
        with client:
            if spec.get("starttls"):
                client.starttls(context=ssl.create_default_context())
            if username:
                client.login(username, _secret(spec["password_env"], "password_env"))
            client.send_message(mail)
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"SMTP {host}:{port}: {exc}") from None


def _command(spec: TargetSpec, doc: JSONObject, text: str) -> None:
    """The operator's own program (never the agent's): the message on stdin, the notification in
    $SENTINEL_NOTIFICATION as JSON; arguments are the configured ones only, nothing an agent wrote."""
    from sentinel.leash import plain
    from sentinel.mcp.launch import which

    env = plain.operator_env(os.environ, {"SENTINEL_MESSAGE": text, "SENTINEL_NOTIFICATION": json.dumps(doc)})
    exe = which(spec["argv"][0], dict(os.environ))
    if exe is None:
        raise DeliveryError(f"{spec['argv'][0]}: not an absolute executable nor on PATH's absolute directories")
    try:
        proc = plain.run([exe, *spec["argv"][1:]], input=text.encode(), timeout=spec["timeout_s"], env=env, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeliveryError(f"{spec['argv'][0]}: {exc}") from None
    if proc.returncode != 0:
        out = (proc.stderr or proc.stdout).decode(errors="replace").strip()[:200]
        raise DeliveryError(f"{spec['argv'][0]} exited {proc.returncode}: {out}")
