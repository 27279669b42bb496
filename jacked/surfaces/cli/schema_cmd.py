"""`jacked schema [NAME]`: the JSON Schema of an answer, as every surface gives it (docs/schema.md)."""
from __future__ import annotations


import typer

from jacked.surfaces.cli.common import CliError, print_json


def schema_cmd(name: str | None = typer.Argument(
        None, help="The answer: search, sessions, restore, retrieve, scan, index, forget, status. "
                   "None: every answer's schema, by name.")) -> None:
    """Print the JSON Schema of an answer of `--json`, the MCP tools and the web API."""
    from jacked.schema import json_schema
    from jacked.schema.answers import ANSWERS

    if name is None:
        print_json({n: json_schema(n) for n in ANSWERS})
        return
    if name not in ANSWERS:
        raise CliError(f"no answer called {name!r}: use one of {', '.join(ANSWERS)}")
    print_json(json_schema(name))


def register(app: typer.Typer) -> None:
    app.command("schema")(schema_cmd)
