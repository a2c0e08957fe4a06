"""The `notify:` section of config.yaml (owned by sentinel/notify): where a person hears that a run needs them.

    notify:
      - type: webhook                   # POST the notification as JSON
        url: https://hooks.example.com/sentinel
        on: [approval, failed]          # default: approval, done, failed, escalated
        one_tap: true                   # add a single-use, expiring approve/deny link (approvals only)
      - {type: ntfy, url: https://ntfy.sh/my-topic}
      - {type: slack, url: https://hooks.slack.com/services/...}       # {"text": ...}
      - {type: discord, url: https://discord.com/api/webhooks/...}     # {"content": ...}
      - {type: telegram, chat_id: "12345", token_env: TELEGRAM_BOT_TOKEN}
      - {type: email, host: smtp.example.com, port: 587, starttls: true, username: me, password_env: SMTP_PASSWORD,
         from: sentinel@example.com, to: [me@example.com]}
      - {type: command, argv: [notify-send, Sentinel]}                  # the message on stdin
      - {type: file, path: ~/sentinel-notifications.jsonl}              # one JSON line per notification

Secrets are never in the file: `token_env` and `password_env` name environment variables read at delivery.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field, model_validator

Kind = Literal["approval", "done", "failed", "escalated"]
KINDS: tuple[Kind, ...] = ("approval", "done", "failed", "escalated")
TargetType = Literal["webhook", "ntfy", "slack", "discord", "telegram", "email", "command", "file"]

REQUIRED: dict[str, tuple[str, ...]] = {
    "webhook": ("url",), "ntfy": ("url",), "slack": ("url",), "discord": ("url",),
    "telegram": ("chat_id", "token_env"), "email": ("host", "sender", "to"), "command": ("argv",), "file": ("path",),
}


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: TargetType = Field(description="How to deliver: webhook, ntfy, slack, discord, telegram, email, command, file.")
    name: str | None = Field(None, description="Shown in `sentinel status`; default: the type and the address.")
    on: list[Kind] = Field(default_factory=lambda: list(KINDS),
                           description="Which events: approval (a run waits), done, failed, escalated (a watcher).")
    one_tap: bool = Field(False, description="Approval notifications carry a single-use, expiring decision link.")
    attempts: int = Field(5, ge=1, le=50, description="Attempts of a failing delivery before it is given up.")
    backoff_s: float = Field(2.0, gt=0, description="Delay before the first retry; each next one doubles it.")
    timeout_s: float = Field(10.0, gt=0, le=120, description="Seconds one attempt may take.")
    url: str | None = Field(None, description="webhook, ntfy, slack, discord: where to POST; telegram: the API base.")
    headers: dict[str, str] = Field(default_factory=dict, description="Extra HTTP headers (e.g. ntfy's Authorization).")
    chat_id: str | None = Field(None, description="telegram: the chat to message.")
    token_env: str | None = Field(None, description="telegram: the variable holding the bot token.")
    host: str | None = Field(None, description="email: the SMTP server.")
    port: int = Field(25, ge=1, le=65535, description="email: the SMTP port (587 with starttls, 465 with ssl).")
    starttls: bool = Field(False, description="email: upgrade the connection with STARTTLS.")
    ssl: bool = Field(False, description="email: connect with TLS from the start (SMTPS).")
    username: str | None = Field(None, description="email: log in as this user.")
    password_env: str | None = Field(None, description="email: the variable holding the SMTP password.")
    sender: str | None = Field(None, alias="from", description="email: the From address.")
    to: list[str] = Field(default_factory=list, description="email: the recipients.")
    argv: list[str] = Field(default_factory=list, description="command: the program and its arguments.")
    path: str | None = Field(None, description="file: the JSONL file to append to.")

    @model_validator(mode="after")
    def _complete(self) -> "Target":
        for field in REQUIRED[self.type]:
            if not getattr(self, field):
                shown = "from" if field == "sender" else field
                raise ValueError(f"a {self.type} target needs `{shown}`")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url {self.url!r} must start with http:// or https://")
        return self

    @property
    def label(self) -> str:
        where = self.url or self.host or self.path or (self.argv[0] if self.argv else None) or self.chat_id
        return self.name or f"{self.type} {where}"

    def spec(self) -> TargetSpec:
        """What an outbox row keeps of the target (names of secrets, never their values)."""
        return {"type": self.type, "name": self.name, "on": [*self.on], "one_tap": self.one_tap,
                "attempts": self.attempts, "backoff_s": self.backoff_s, "timeout_s": self.timeout_s, "url": self.url,
                "headers": dict(self.headers), "chat_id": self.chat_id, "token_env": self.token_env,
                "host": self.host, "port": self.port, "starttls": self.starttls, "ssl": self.ssl,
                "username": self.username, "password_env": self.password_env, "from": self.sender,
                "to": [*self.to], "argv": [*self.argv], "path": self.path}


# A target as an outbox row keeps it (Target.spec), plus where the deliverer mints one-tap links; `from` is a
# keyword, hence the functional form.
TargetSpec = TypedDict("TargetSpec", {
    "type": str, "name": str | None, "on": list[str], "one_tap": bool, "attempts": int, "backoff_s": float,
    "timeout_s": float, "url": str | None, "headers": dict[str, str], "chat_id": str | None,
    "token_env": str | None, "host": str | None, "port": int, "starttls": bool, "ssl": bool,
    "username": str | None, "password_env": str | None, "from": str | None, "to": list[str],
    "argv": list[str], "path": str | None, "link_base": NotRequired[str], "link_ttl_s": NotRequired[float]})
