"""One attempt to deliver one notification to one target (no store, no retries: sentinel/notify/dispatch.py).

    text = message(doc)            # what a person reads: the run, the tool, its arguments, the reason, the links
    send(spec, doc)                # DeliveryError on failure

Transports: the watchers' command, JSONL file and webhook delivery (sentinel/watchers/deliver.py), ntfy's
HTTP push (the text as the body, title and links in headers), Slack- and Discord-compatible webhooks
(`{"text"}`, `{"content"}`), Telegram's sendMessage, and email through the configured SMTP server.
"""

from __future__ import annotations

import json
import os
import smtplib
import ssl
import subprocess
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from sentinel.watchers.deliver import DeliveryError, append_jsonl, post, post_json

TELEGRAM_API = "https://api.telegram.org"
DISCORD_MAX = 2000
TITLES = {"approval": "run {run_id} waits for approval", "done": "run {run_id} finished",
          "failed": "run {run_id} failed", "escalated": "watcher {watcher} escalated"}


def title(doc: dict[str, Any]) -> str:
    return "Sentinel: " + TITLES[doc["event"]].format_map({"run_id": "", "watcher": "", **doc})


def message(doc: dict[str, Any]) -> str:
    lines = [title(doc)]
    for key, label in (("tool", "tool"), ("arguments", "arguments"), ("reason", "reason"), ("task", "task"),
                       ("agent", "agent"), ("output", "output"), ("error", "error"), ("severity", "severity")):
        if doc.get(key):
            lines.append(f"{label}: {doc[key]}")
    if doc.get("url"):
        lines.append(f"open: {doc['url']}")
    if doc.get("decide_url"):
        lines.append(f"approve or deny (once, until {doc['decide_expires']}): {doc['decide_url']}")
    return "\n".join(lines)


def send(spec: dict[str, Any], doc: dict[str, Any]) -> None:
    kind, timeout, text = spec["type"], spec["timeout_s"], message(doc)
    shown = spec.get("name") or kind
    headers = dict(spec.get("headers") or {})
    if kind == "webhook":
        post_json(spec["url"], {**doc, "title": title(doc), "message": text}, timeout, headers, shown)
    elif kind == "slack":
        post_json(spec["url"], {"text": text}, timeout, headers, shown)
    elif kind == "discord":
        post_json(spec["url"], {"content": text[:DISCORD_MAX]}, timeout, headers, shown)
    elif kind == "telegram":
        url = f"{(spec.get('url') or TELEGRAM_API).rstrip('/')}/bot{_secret(spec, 'token_env')}/sendMessage"
        post_json(url, {"chat_id": spec["chat_id"], "text": text, "disable_web_page_preview": True}, timeout,
                  headers, shown)
    elif kind == "ntfy":
        post(spec["url"], text.encode(), {**_ntfy_headers(doc), **headers}, timeout, shown)
    elif kind == "email":
        _mail(spec, doc, text)
    elif kind == "command":
        _command(spec, doc, text)
    elif kind == "file":
        append_jsonl(Path(os.path.expanduser(spec["path"])), {**doc, "message": text})
    else:
        raise DeliveryError(f"unknown target type {kind!r}")


def _secret(spec: dict[str, Any], field: str) -> str:
    value = os.environ.get(spec[field] or "")
    if not value:
        raise DeliveryError(f"{field} {spec[field]}: the variable is not set for the deliverer")
    return value


def _ntfy_headers(doc: dict[str, Any]) -> dict[str, str]:
    """ntfy's publish headers (ASCII only: header values are latin-1 on the wire)."""
    headers = {"Title": title(doc).encode("ascii", "replace").decode(), "Tags": doc["event"]}
    if doc["event"] in ("approval", "escalated", "failed"):
        headers["Priority"] = "high"
    if doc.get("url"):
        headers["Click"] = doc["url"]
    if doc.get("decide_url"):
        headers["Actions"] = f"view, Approve or deny, {doc['decide_url']}, clear=true"
    return headers


def _mail(spec: dict[str, Any], doc: dict[str, Any], text: str) -> None:
    mail = EmailMessage()
    mail["Subject"], mail["From"], mail["To"] = title(doc), spec["from"], ", ".join(spec["to"])
    mail.set_content(text)
    host, port, timeout = spec["host"], spec["port"], spec["timeout_s"]
    try:
        if spec.get("ssl"):
            client: smtplib.SMTP = smtplib.SMTP_SSL(host, port, timeout=timeout, context=ssl.create_default_context())
        else:
            client = smtplib.SMTP(host, port, timeout=timeout)
        with client:
            if spec.get("starttls"):
                client.starttls(context=ssl.create_default_context())
            if spec.get("username"):
                client.login(spec["username"], _secret(spec, "password_env"))
            client.send_message(mail)
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"SMTP {host}:{port}: {exc}") from None


def _command(spec: dict[str, Any], doc: dict[str, Any], text: str) -> None:
    """The operator's own program (never the agent's): the message on stdin, the notification in
    $SENTINEL_NOTIFICATION as JSON; arguments are the configured ones only, nothing an agent wrote."""
    from sentinel.mcp.launch import scrubbed, which

    env = {**scrubbed(dict(os.environ)), "SENTINEL_MESSAGE": text, "SENTINEL_NOTIFICATION": json.dumps(doc)}
    exe = which(spec["argv"][0], dict(os.environ))
    if exe is None:
        raise DeliveryError(f"{spec['argv'][0]}: not an absolute executable nor on PATH's absolute directories")
    try:
        proc = subprocess.run([exe, *spec["argv"][1:]], input=text.encode(), capture_output=True,
                              timeout=spec["timeout_s"], env=env, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeliveryError(f"{spec['argv'][0]}: {exc}") from None
    if proc.returncode != 0:
        out = (proc.stderr or proc.stdout).decode(errors="replace").strip()[:200]
        raise DeliveryError(f"{spec['argv'][0]} exited {proc.returncode}: {out}")
