"""What every CLI module shares: settings from global options, JSON output, clean errors."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import typer

from jacked.config import Settings, load_settings


class CliError(Exception):
    """A problem the user can fix: printed as one line on stderr, exit code 1."""


@dataclass
class GlobalOptions:
    claude_dir: Path | None = None


STATE = GlobalOptions()


def settings() -> Settings:
    """Settings for this command, with the global `--claude-dir` applied."""
    return load_settings(STATE.claude_dir)


def print_json(obj: Any) -> None:
    """JSON on stdout and nothing else (the `--json` contract)."""
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")


def print_jsonl(obj: Any) -> None:
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode() + "\n")


def warn(message: str) -> None:
    """Progress and warnings go to stderr so `--json` stdout stays clean."""
    typer.echo(message, err=True)


def open_catalog(s: Settings):  # type: ignore[no-untyped-def]
    from jacked.catalog import Catalog

    return Catalog(s.catalog_path)
