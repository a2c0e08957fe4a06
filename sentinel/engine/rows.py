"""The store's listings, typed: what `runs`, `pending`, `sessions`, `firings` and `inbox` return in both modes.

    for run in engine.runs(): run.id, run.status, run.parent_id ...
    run.to_dict()                  # the JSON object `sentinel runs --json` prints and the supervisor sends
    RunRow.from_dict(obj)          # from the supervisor's answer
    store.get_run(run_id)["run_dir"]   # StoredRun: a run's whole row, every column typed

`to_dict` gives exactly the keys, key order and values these listings always had, so `--json` output and the
operator socket's wire format are unchanged; `from_dict` drops keys this version does not know.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Self, TypedDict

from sentinel.errors import SentinelError
from sentinel.jsontypes import JSONObject


@dataclass(frozen=True)
class Row:
    """A listing row: a frozen dataclass that reads from and writes to its JSON object. `absent` remembers the
    optional keys an object left out (the agent door's approvals carry no workspace), so `to_dict` gives that
    object back key for key."""

    absent: frozenset[str] = field(default=frozenset(), compare=False, repr=False, kw_only=True)

    def to_dict(self) -> JSONObject:
        """Shallow: the values are the row's own (JSON values, never dataclasses), not copies; `asdict`'s deep
        copy made `runs --json` over 10,000 runs a third slower."""
        return {name: getattr(self, name) for name in _names(type(self)) if name not in self.absent}

    @classmethod
    def from_dict(cls, data: JSONObject) -> Self:
        """From the store's or the supervisor's object; keys this version does not know are left out, a
        missing required one is a broken peer."""
        names = {f.name for f in fields(cls)} - {"absent"}
        try:
            return cls(**{k: v for k, v in data.items() if k in names}, absent=frozenset(names - data.keys()))
        except TypeError as exc:
            raise SentinelError(f"the other end sent a {cls.__name__} without a field ({exc})") from None


_NAMES: dict[type[Row], tuple[str, ...]] = {}


def _names(cls: type[Row]) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in fields(cls) if f.name != "absent")
    return names


@dataclass(frozen=True)
class RunRow(Row):
    """A run in the registry (`runs`): a child run's `parent_id` names its parent, `depth` how far below the
    head run it is; `host` the host whose supervisor executes it (None before hosts were recorded)."""

    id: str
    parent_id: str | None
    depth: int
    kind: str
    agent: str
    task: str
    model: str
    status: str
    created_at: float
    updated_at: float
    host: str | None = None


class StoredRun(TypedDict):
    """A run's row in the store (`runs`, a key per column), as `get_run` and `child_for_call` return it: a dict,
    because the supervisor hands it on as JSON and `show` prints it; typed, so a misspelt column is an error.
    `grants` is JSON text (the tools a child run was granted; None for a head run)."""

    id: str
    parent_id: str | None
    agent: str
    task: str
    model: str
    status: str
    workspace: str
    run_dir: str
    output: str | None
    error: str | None
    created_at: float
    updated_at: float
    user: str | None
    kind: str
    call_id: str | None
    depth: int
    grants: str | None
    host: str | None


@dataclass(frozen=True)
class SessionRow(Row):
    """A chat session (`sessions`): `title` is its first message; `user` the Linux user it runs as (None:
    local mode's operator)."""

    id: str
    agent: str
    user: str | None
    model: str
    status: str
    title: str
    error: str | None
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class ApprovalRow(Row):
    """A pending approval as a person reviews it (`pending`): the call (`tool`, `arguments`, bound by
    `digest`), why it paused, the runs above its run (`parents`, its parent first), the workspace, the Linux user it
    would run as and the host. `code`/`code_sha256`: an agent-authored tool's files as shown, and their
    hash, given for such a tool only; `mcp`: {server, tool}, given for an MCP tool only; `client`: the coding
    agent whose hook asks (`claude-code`, `codex`, ...), given for such an ask only (sentinel/engine/asks.py)."""

    id: str
    run_id: str
    tool: str
    arguments: JSONObject
    reason: str
    status: str
    call_id: str
    created_at: float
    digest: str
    code: dict[str, str] | None = None
    code_sha256: str | None = None
    mcp: dict[str, str] | None = None
    parents: list[str] = field(default_factory=list)
    workspace: str | None = None
    user: str | None = None
    host: str | None = None
    client: str | None = None


@dataclass(frozen=True)
class FiringRow(Row):
    """A watcher's firing and its relay contract (`firings`): `run_id` its hook session; `status` pending,
    notified, fallback or suppressed; `envelope` what the session was given; `escalation` and `outcome` as
    the session or the fallback timer recorded them."""

    id: str
    watcher: str
    dedupe_key: str
    run_id: str | None
    status: str
    fired_at: float
    deadline: float
    fallback: bool
    envelope: JSONObject | None
    escalation: JSONObject | None
    outcome: JSONObject | None
    resolved_at: float | None


@dataclass(frozen=True)
class InboxRow(Row):
    """One entry of the operator's inbox (`inbox`): what a relay delivered there, or a delivery that failed."""

    id: int
    t: float
    firing_id: str | None
    watcher: str | None
    kind: str
    message: str
