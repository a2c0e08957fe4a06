"""User-facing errors: each renders as one line naming the file, field or argument.

    SentinelError            anything the CLI prints as "error: ..." and exits 1
    ├── UsageError           bad input from the operator (exit 2)
    │   └── ConfigError      a config, policy or rule file failed validation
    ├── NotFound             an id that names nothing (exit 2)
    ├── Busy                 a run is leased by another process (exit 1)
    └── Damaged              a database file SQLite cannot read (exit 1)

Harness bugs are not SentinelErrors: they raise whatever they raise.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")


class SentinelError(Exception):
    exit_code = 1


class UsageError(SentinelError):
    exit_code = 2


class ConfigError(UsageError):
    """A file failed validation; the message names the file and the field."""

    def __init__(self, path: object, detail: str):
        self.path = str(path)
        self.detail = detail
        super().__init__(f"{path}: {detail}")


class NotFound(UsageError):
    pass


class Busy(SentinelError):
    pass


class Damaged(SentinelError):
    """A database file is not one SQLite can read. A cache (the memory index) is rebuilt from its files;
    a store of record is named and left for the operator to move aside."""


def pydantic_detail(exc: Exception) -> str:
    """The first pydantic validation error as `field.path: message`."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc).splitlines()[0]
    first = errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
    more = len(errors()) - 1
    suffix = f" (and {more} more)" if more else ""
    return f"{loc}: {first.get('msg', 'invalid')}{suffix}"


def validated(model: type[M], data: object, source: Path | str, *,
              not_mapping: str = "top level must be a mapping") -> M:
    """`data` (a file's parsed YAML) as `model`, or a ConfigError naming `source` and the first bad field."""
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise ConfigError(source, not_mapping)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, pydantic_detail(exc)) from None
