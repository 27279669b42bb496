"""A command's parameters written without importing typer, so that the hot read commands can run
without it (typer and the pydantic it imports cost more than a daemon's whole answer).

A command module declares its parameters as it would with typer — `Option(default, "--flag",
help=…)`, `Argument(default, help=…)` — and registers `typed(command)`, which hands typer the
same declarations. `jacked.surfaces.cli.fast` reads them too: one declaration, two parsers.
"""
from __future__ import annotations

import functools
import inspect
import re
import sys
from collections.abc import Callable
from typing import Any, TextIO

from jacked.errors import JackedError


class Param:
    """The arguments of a `typer.Option` or `typer.Argument` call, kept until typer is imported."""

    typer_class = ""

    def __init__(self, default: Any = ..., *param_decls: str, **options: Any) -> None:
        self.default = default
        self.param_decls = param_decls
        self.options = options

    def to_typer(self) -> Any:
        import typer

        return getattr(typer, self.typer_class)(self.default, *self.param_decls, **self.options)


class OptionParam(Param):
    typer_class = "Option"


class ArgumentParam(Param):
    typer_class = "Argument"


# Typed `Any`, as typer's own are, so that `flag: bool = Option(False, ...)` type-checks.
def Option(default: Any = ..., *param_decls: str, **options: Any) -> Any:
    return OptionParam(default, *param_decls, **options)


def Argument(default: Any = ..., *param_decls: str, **options: Any) -> Any:
    return ArgumentParam(default, *param_decls, **options)


def typed(command: Callable[..., Any]) -> Callable[..., Any]:
    """`command` with its `Option`/`Argument` defaults turned into typer's, for `app.command()`."""
    signature = inspect.signature(command, eval_str=True)
    parameters = [p.replace(default=p.default.to_typer()) if isinstance(p.default, Param) else p
                  for p in signature.parameters.values()]

    @functools.wraps(command)
    def with_typer_params(**kwargs: Any) -> Any:
        return command(**kwargs)

    with_typer_params.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return with_typer_params


# What click.echo strips from text written to a stream that is not a terminal.
_ANSI_STYLE = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def echo(message: str = "", err: bool = False) -> None:
    """A line on stdout (stderr with `err`), written as `typer.echo` writes it: styles stripped when
    the stream is not a terminal, flushed at once."""
    stream: TextIO = sys.stderr if err else sys.stdout
    text = message + "\n"
    if not _isatty(stream):
        text = _ANSI_STYLE.sub("", text)
    stream.write(text)
    stream.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):
        return False


def expected_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean "the user's input or setup is wrong", not a bug: every
    JackedError (CliError, ConfigError, StoreBusy, TokenizerUnavailable, …), a damaged
    database and a file system error. (A process that never imported sqlite3 met no database
    error: a daemon's client need not import it for this.)"""
    sqlite3 = sys.modules.get("sqlite3")
    return (JackedError, OSError) + ((sqlite3.DatabaseError,) if sqlite3 is not None else ())


def error_line(e: BaseException) -> str:
    """An expected error as the one line the CLI prints for it."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return f"jacked: {msg}"
