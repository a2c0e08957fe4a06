"""The run commands without typer: parse their plain arguments from their own declarations, call them.

Importing typer and click costs a listing more than the rest of its start, and typer 0.29 builds a pydantic
TypeAdapter for every parameter of the command it runs (typer._adapters). The commands of
`sentinel.cli.runs` (approvals, runs, show, status, approve, deny, run, resume, logs, cancel) are typed many
times a day and by scripts, so `sentinel.cli.main` hands them here first:

    parse(runs.approvals, ["--json"])   # {"as_json": True}, or None: not plain, let typer do it

Only what is unambiguous is taken: each function's own `Argument`/`Option` declarations
(sentinel/cli/params.py), of type str, Path or a bool flag. Anything else (`--help`, an unknown or repeated
option, a missing or extra argument, `--`) returns None and the typer app runs the command instead, with its
usage errors and help exactly as before. The command body is the same function either way.
"""

from __future__ import annotations

import errno
import sys
import typing
from pathlib import Path
from typing import Callable

from sentinel.cli.params import Command, Param
from sentinel.errors import SentinelError

VALUE_TYPES: dict[type, Callable[[str], str | Path]] = {str: str, Path: Path}


# The commands of sentinel.cli.runs (sentinel/cli/app.py COMMANDS maps them; tests/cli/test_cli_start.py checks)
RUN_COMMANDS = ("run", "runs", "show", "approvals", "approve", "deny", "resume", "logs", "status", "cancel", "undo")


def _plain_type(annotation: object) -> type | None:
    """str, Path or bool (Optional[...] of them too), else None: a type typer would coerce in its own way."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Union and len(args) == 1:
        annotation = args[0]
    return annotation if isinstance(annotation, type) and (annotation in VALUE_TYPES or annotation is bool) else None


def parse(fn: Command, args: list[str]) -> dict[str, object] | None:
    """The keyword arguments typer would call `fn` with for `args`, or None when typer must decide."""
    hints = typing.get_type_hints(fn)
    positional: list[str] = []
    options: dict[str, tuple[str, type]] = {}  # "--json" -> (parameter name, type)
    values: dict[str, object] = {}
    declared = _defaults(fn)
    if declared is None:
        return None
    for name, info in declared.items():
        kind = _plain_type(hints.get(name))
        if kind is None or not isinstance(info, Param):
            return None
        if info.kind == "argument":
            if kind is bool:
                return None
            positional.append(name)
        else:
            decls = info.decls
            if not decls or any("/" in d or not d.startswith("-") for d in decls):
                return None
            options.update(dict.fromkeys(decls, (name, kind)))
        if info.default is not ...:
            values[name] = info.default
    return _bind(args, positional, options, values)


def _defaults(fn: Command) -> dict[str, object] | None:
    """Each parameter's default (typer's declaration), from the code object (`inspect` costs more to import);
    None when some parameter has none or is keyword-only: not a form parse() takes."""
    code, defaults = fn.__code__, fn.__defaults__ or ()
    names = code.co_varnames[:code.co_argcount]
    if code.co_kwonlyargcount or len(defaults) != len(names):
        return None
    return dict(zip(names, defaults))


def _bind(args: list[str], positional: list[str], options: dict[str, tuple[str, type]],
          values: dict[str, object]) -> dict[str, object] | None:
    seen: set[str] = set()
    waiting = list(positional)
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if token.startswith("-") and token != "-":
            flag, eq, inline = token.partition("=")
            if flag not in options or options[flag][0] in seen:
                return None
            name, kind = options[flag]
            seen.add(name)
            if kind is bool:
                if eq:
                    return None
                values[name] = True
            elif eq:
                values[name] = VALUE_TYPES[kind](inline)
            elif rest and not rest[0].startswith("-"):
                values[name] = VALUE_TYPES[kind](rest.pop(0))
            else:
                return None
        elif waiting:
            values[waiting.pop(0)] = token
        else:
            return None
    if any(name not in values for name in waiting):
        return None
    return values


def fail(exc: SentinelError) -> None:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)


def call(fn: Command, kwargs: dict[str, object]) -> None:
    """Run a command as the typer app would: its exit code, a SentinelError's one line, 130 on Ctrl-C."""
    try:
        fn(**kwargs)
    except SentinelError as exc:
        fail(exc)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        from typer._click.utils import PacifyFlushWrapper  # as typer does: no second error at exit

        sys.stdout, sys.stderr = PacifyFlushWrapper(sys.stdout), PacifyFlushWrapper(sys.stderr)
        sys.exit(1)
    sys.exit(0)


def run(args: list[str]) -> bool:
    """Run `args` here if they name a run command in plain form; False: the typer app must run them."""
    if not args or args[0] not in RUN_COMMANDS:
        return False
    from sentinel.cli import runs

    fn = getattr(runs, args[0].replace("-", "_"), None)
    if not callable(fn):
        return False
    kwargs = parse(fn, args[1:])
    if kwargs is None:
        return False
    call(fn, kwargs)
    return True
