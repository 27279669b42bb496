"""The hot read commands (`sessions`, `turns`, `search`, `stats`, `status`) run without typer when a
daemon answers them: importing typer (and the pydantic it brings) took longer than the daemon's
whole answer.

The arguments are read from the same declarations typer reads (`jacked.surfaces.cli.params`),
and the same command function runs, so the output is the same byte for byte. Only plain argument
lists are read here; anything else (`--help`, an unknown or malformed option, a value out of range,
a missing or extra argument, a global option) is left to typer, which answers it as it always did.
"""
from __future__ import annotations

import importlib
import inspect
import os
import re
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The commands read here: (module, function) of what typer registers for each; a name ending in
#: `()` is called for the command (made when asked).
COMMANDS: dict[str, tuple[str, str]] = {
    "sessions": ("jacked.surfaces.cli.history", "sessions_cmd"),
    "turns": ("jacked.surfaces.cli.history", "turns_cmd"),
    "search": ("jacked.surfaces.cli.search", "search_command()"),
    "stats": ("jacked.surfaces.cli.stats", "stats_cmd"),
    "status": ("jacked.surfaces.cli.index", "status_cmd"),
}

#: Keyword arguments of an option that change nothing about how its value is read.
_PLAIN_OPTIONS = frozenset({"help", "min", "max", "show_default", "metavar", "rich_help_panel"})
_INTEGER = re.compile(r"[0-9]+")


class _Declined(Exception):
    """This argument list is typer's to read."""


def run_fast(argv: list[str]) -> int | None:
    """Run `argv` (without the program name) when it is a hot command in plain form; its exit code,
    or None when typer should read it instead."""
    if not argv or argv[0] not in COMMANDS:
        return None
    command = command_of(argv[0])
    try:
        kwargs = parse(command, argv[1:])
    except _Declined:
        return None
    from jacked.surfaces.cli.params import echo, error_line, expected_errors

    if os.environ.get("NO_COLOR"):  # as `jacked.surfaces.cli.main.run` does
        os.environ.setdefault("TERM", "dumb")
    try:
        command(**kwargs)
    except KeyboardInterrupt:
        echo("jacked: interrupted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    except expected_errors() as e:
        echo(error_line(e), err=True)
        return 1
    return 0


def command_of(name: str) -> Callable[..., Any]:
    """The function typer runs for the command `name` of `COMMANDS`."""
    module, attribute = COMMANDS[name]
    found = getattr(importlib.import_module(module), attribute.removesuffix("()"))
    return found() if attribute.endswith("()") else found


class _Spec:
    """One parameter of a command, as `parse` reads it."""

    def __init__(self, name: str, kind: type, many: bool, declared: Any) -> None:
        self.name = name
        self.kind = kind
        self.many = many
        self.default = declared.default
        self.options = declared.options
        self.flags = [d for d in declared.param_decls if d.startswith("-")]

    def convert(self, value: str) -> Any:
        if self.kind is str:
            return value
        if self.kind is Path:
            if not value:
                raise _Declined
            return Path(value)
        if self.kind is int and _INTEGER.fullmatch(value):
            number = int(value)
            low, high = self.options.get("min"), self.options.get("max")
            if (low is None or number >= low) and (high is None or number <= high):
                return number
        raise _Declined


def _specs(command: Callable[..., Any]) -> tuple[list[_Spec], list[_Spec]]:
    """(options, arguments) of `command`, or `_Declined` for a parameter read in a way not done here."""
    from jacked.surfaces.cli.params import ArgumentParam, OptionParam

    options, arguments = [], []
    for p in inspect.signature(command, eval_str=True).parameters.values():
        declared = p.default
        if not isinstance(declared, (OptionParam, ArgumentParam)) or set(declared.options) - _PLAIN_OPTIONS:
            raise _Declined
        kind, many = _kind(p.annotation)
        spec = _Spec(p.name, kind, many, declared)
        if isinstance(declared, ArgumentParam):
            if many or declared.param_decls:
                raise _Declined
            arguments.append(spec)
        else:
            if not spec.flags or any("/" in f for f in spec.flags) or (kind is bool and declared.default is not False):
                raise _Declined
            options.append(spec)
    return options, arguments


def _kind(annotation: Any) -> tuple[type, bool]:
    """(value type, repeated) of an annotation: str, int, bool or Path, optional or a list of str."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        annotation = next(a for a in args if a is not type(None))
    if typing.get_origin(annotation) is list and typing.get_args(annotation) == (str,):
        return str, True
    if annotation in (str, int, bool, Path):
        return annotation, False
    raise _Declined


def parse(command: Callable[..., Any], argv: list[str]) -> dict[str, Any]:
    """The keyword arguments typer would call `command` with for `argv`, as far as click would read
    it without complaint; `_Declined` for anything else."""
    options, arguments = _specs(command)
    by_flag = {flag: spec for spec in options for flag in spec.flags}
    values: dict[str, Any] = {spec.name: None if spec.many else spec.default for spec in options + arguments}
    positional: list[str] = []
    rest = list(argv)
    while rest:
        token = rest.pop(0)
        if not token.startswith("-") or token == "-":
            if token == "-":
                raise _Declined
            positional.append(token)
            continue
        flag, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        spec = by_flag.get(flag)
        if spec is None:  # `--help`, `--`, an unknown option, `-n5`, several short flags at once
            raise _Declined
        if spec.kind is bool:
            if eq:
                raise _Declined
            values[spec.name] = True
            continue
        if not eq:
            if not rest or rest[0].startswith("-"):
                raise _Declined
            value = rest.pop(0)
        converted = spec.convert(value)
        if spec.many:
            values[spec.name] = [*(values[spec.name] or []), converted]
        else:
            values[spec.name] = converted
    if len(positional) > len(arguments):
        raise _Declined
    for spec, value in zip(arguments, positional):
        values[spec.name] = spec.convert(value)
    if any(spec.default is ... and values[spec.name] is ... for spec in arguments):
        raise _Declined
    return values
