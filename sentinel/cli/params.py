"""The run commands' parameter declarations, recorded without importing typer; typer's own when its app is built.

    def show(run_id: str = Argument(..., help="Run id."), as_json: bool = Option(False, "--json")) -> None: ...

    fast.parse(show, ["r-1"])      # sentinel/cli/fast.py reads the declarations to parse plain arguments
    app.command("show")(typed(show))   # typer sees typer.Argument/typer.Option defaults, as if written so

Importing typer (and click under it) costs a listing more than the rest of its start, and a command in
plain form never needs it: only `--help`, a usage error or another form builds the typer app.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Literal

Command = Callable[..., None]


class Param:
    """One parameter's declaration: what typer.Argument or typer.Option was given."""

    def __init__(self, kind: Literal["argument", "option"], default: object, decls: tuple[str, ...],
                 help: str | None):
        self.kind = kind
        self.default = default
        self.decls = decls
        self.help = help

    def for_typer(self) -> object:
        import typer

        if self.kind == "argument":
            return typer.Argument(self.default, help=self.help)
        return typer.Option(self.default, *self.decls, help=self.help)


# untyped: a default standing for the parameter's value, as typer.Argument's (typed Any there too)
def Argument(default: object = ..., *, help: str | None = None) -> Any:  # noqa: N802 - typer's name
    return Param("argument", default, (), help)


# untyped: as Argument's
def Option(default: object, *decls: str, help: str | None = None) -> Any:  # noqa: N802 - typer's name
    return Param("option", default, decls, help)


def typed(fn: Command) -> Command:
    """`fn` for typer: the same function, its Param defaults made typer's declarations."""
    import inspect

    signature = inspect.signature(fn)
    parameters = [p.replace(default=p.default.for_typer()) if isinstance(p.default, Param) else p
                  for p in signature.parameters.values()]

    @functools.wraps(fn)
    def command(**kwargs: object) -> None:
        fn(**kwargs)

    command.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]  # read by inspect
    return command
