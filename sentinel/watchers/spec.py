"""Watcher files: `~/.sentinel/watchers/<id>.yaml` (local mode) or `/etc/sentinel/watchers/<id>.yaml` (system
mode: the operator's, run by the supervisor), validated.

    id: eth-low
    skillId: price-alert              # a skill the hook session loads
    eventName: eth.price.low
    strategy: {type: http-poll, endpoint: "http://127.0.0.1:8080/price", intervalS: 30}
    match: {path: price, op: "<", value: 2000}
    dedupeKey: "{{watcher.id}}"       # a template; a key already fired is not fired again until the match lapses
    cooldownS: 300
    priority: high
    tags: [defi]
    fire: {operatorGoal: "...", model: null, agent: null, autonomy: notify, environment: test, payloadTemplate: {}}
    delivery: [{type: inbox}, {type: file, path: /var/log/alerts.jsonl}]

Strategies: http-poll (GET `endpoint`, JSON), command (`argv` under the agent's Leash profile; stdout as
JSON or text), file (`path` changed), schedule (`cron` or `intervalS`), webhook (POST to
127.0.0.1:`port`/hooks/<id> with header `X-Sentinel-Secret: <secret>`). Every bad field is named on
one line: `watchers/eth-low.yaml: strategy.intervalS: Input should be greater than 0`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sentinel import paths
from sentinel.errors import ConfigError, NotFound
from sentinel.jsontypes import JSONObject

ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "contains", "matches", "changed")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HttpPoll(_Strict):
    type: Literal["http-poll"]
    endpoint: str = Field(pattern=r"^https?://", description="URL fetched with GET; the answer is JSON.")
    intervalS: float = Field(60.0, gt=0)
    timeoutS: float = Field(10.0, gt=0)
    headers: dict[str, str] = Field(default_factory=dict)


class Command(_Strict):
    type: Literal["command"]
    argv: list[str] = Field(min_length=1, description="Run under the agent's Leash profile.")
    intervalS: float = Field(60.0, gt=0)
    timeoutS: float = Field(30.0, gt=0)
    format: Literal["json", "text"] = "json"


class FileChanged(_Strict):
    type: Literal["file"]
    path: str
    intervalS: float = Field(5.0, gt=0, description="How often the file is looked at.")


class Schedule(_Strict):
    type: Literal["schedule"]
    cron: str | None = None
    intervalS: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _one(self) -> "Schedule":
        if (self.cron is None) == (self.intervalS is None):
            raise ValueError("give exactly one of `cron` or `intervalS`")
        if self.cron is not None:
            from sentinel.watchers.cron import Cron

            Cron.parse(self.cron)  # ValueError names the bad part
        return self


class Webhook(_Strict):
    type: Literal["webhook"]
    port: int = Field(ge=1, le=65535, description="Loopback port the watcher listens on.")
    secret: str = Field(min_length=16, description="Callers send it in the X-Sentinel-Secret header.")


Strategy = Annotated[Union[HttpPoll, Command, FileChanged, Schedule, Webhook], Field(discriminator="type")]


class Match(_Strict):
    path: str = Field("", description="A JSON path into the data ($.a.b[0] or a.b.0); empty: the whole data.")
    op: Literal[OPERATORS] = "=="  # type: ignore[valid-type]
    value: Any = None   # untyped: whatever YAML value the operator wrote, compared with the data as it is

    @model_validator(mode="after")
    def _regex(self) -> "Match":
        if self.op == "matches":
            try:
                re.compile(str(self.value))
            except re.error as exc:
                raise ValueError(f"value is not a valid regex ({exc})") from None
        return self


class Fire(_Strict):
    operatorGoal: str | None = None
    operatorGoalFile: str | None = None
    model: str | None = None
    agent: str | None = None
    autonomy: str = "notify"
    environment: Literal["test", "prod"] = "test"
    payloadTemplate: Any = None   # untyped: whatever YAML structure the operator wrote, filled as a JSON template

    @model_validator(mode="after")
    def _goal(self) -> "Fire":
        if self.operatorGoal and self.operatorGoalFile:
            raise ValueError("give `operatorGoal` or `operatorGoalFile`, not both")
        return self


class Target(_Strict):
    type: Literal["inbox", "command", "file", "webhook"]
    name: str | None = None
    argv: list[str] | None = None
    path: str | None = None
    url: str | None = Field(None, pattern=r"^https?://")

    @model_validator(mode="after")
    def _needs(self) -> "Target":
        need = {"command": "argv", "file": "path", "webhook": "url"}.get(self.type)
        if need and not getattr(self, need):
            raise ValueError(f"a {self.type} target needs `{need}`")
        return self

    def public(self) -> JSONObject:
        shown: JSONObject = {"name": self.name or self.type}
        shown.update(self.model_dump(exclude_none=True, exclude={"name"}))
        return shown


class Watcher(_Strict):
    id: str
    skillId: str | None = None
    eventName: str
    strategy: Strategy
    match: Match | None = None
    dedupeKey: str = "{{watcher.id}}"
    cooldownS: float = Field(0.0, ge=0)
    priority: Literal["low", "normal", "high", "critical"] = "normal"
    tags: list[str] = Field(default_factory=list)
    fire: Fire = Field(default_factory=Fire)
    delivery: list[Target] = Field(default_factory=lambda: [Target(type="inbox")])
    hookResponseTimeoutMs: int | None = Field(None, ge=1, description="Overrides the config's for this watcher.")
    enabled: bool = True

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not ID.match(value):
            raise ValueError("use 1-64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit")
        return value

    @property
    def endpoint(self) -> str | None:
        s = self.strategy
        if isinstance(s, HttpPoll):
            return s.endpoint
        if isinstance(s, FileChanged):
            return s.path
        if isinstance(s, Command):
            return " ".join(s.argv) or None
        if isinstance(s, Webhook):
            return f"http://127.0.0.1:{s.port}/hooks/{self.id}"
        return None  # a schedule has no endpoint


def user_dir(home: Path | None = None) -> Path:
    return (home or paths.home()) / "watchers"


def parse(path: Path, data: object) -> Watcher:
    """A watcher file's parsed YAML (any value: checked here), validated."""
    if not isinstance(data, dict):
        raise ConfigError(path, "top level must be a mapping")
    try:
        watcher = Watcher.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(path, "; ".join(_field_errors(exc))) from None
    if watcher.id != path.stem:
        raise ConfigError(path, f"id: {watcher.id!r} must match the file name ({path.stem}.yaml)")
    return watcher


def _field_errors(exc: ValidationError) -> list[str]:
    """One `field: message` per bad field (a strategy's type tag is left out of the path)."""
    out = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        if len(loc) > 1 and loc[0] == "strategy" and loc[1] in ("http-poll", "command", "file", "schedule", "webhook"):
            loc.pop(1)
        if loc and loc[-1].startswith("function-"):
            loc.pop()
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        out.append(f"{'.'.join(loc) or '(top level)'}: {msg}")
    return out


def load_file(path: Path) -> Watcher:
    from sentinel.config import read_yaml

    return parse(path, read_yaml(path))


def system_dir() -> Path:
    """The operator's watchers, which the supervisor runs (the agents cannot write them)."""
    from sentinel.supervisor.layout import etc_dir

    return etc_dir() / "watchers"


def dirs(home: Path | None = None, system: bool = False) -> list[Path]:
    return [system_dir()] if system else [user_dir(home)]


def files(home: Path | None = None, system: bool = False) -> list[Path]:
    return [p for d in dirs(home, system) if d.is_dir() for p in sorted(d.glob("*.yaml"))]


def load_all(home: Path | None = None, system: bool = False) -> tuple[list[Watcher], list[ConfigError]]:
    """Every valid watcher, and one error per bad file (the others still run)."""
    good, bad = [], []
    for path in files(home, system):
        try:
            good.append(load_file(path))
        except ConfigError as exc:
            bad.append(exc)
    return good, bad


def find(ident: str, home: Path | None = None, system: bool = False) -> Watcher:
    for path in files(home, system):
        if path.stem == ident:
            return load_file(path)
    raise NotFound(f"no watcher {ident!r} in {' or '.join(str(d) for d in dirs(home, system))}")
