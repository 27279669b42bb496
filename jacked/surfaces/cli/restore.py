"""`jacked restore`: argument parsing and output formatting only (see `jacked.query.restore`)."""
from __future__ import annotations


import typer

from jacked.surfaces.cli.common import print_json, service


def restore_cmd(
    session: str = typer.Argument(..., help="Session id, unique prefix, or transcript path."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", min=1, help="Token budget (default 4000)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """A brief for continuing an interrupted session: goal, state after each turn, where it stopped."""
    brief = service().restore(session, max_tokens)
    if json_out:
        print_json(brief.to_json())
    else:
        typer.echo(brief.text)


def register(app: typer.Typer) -> None:
    app.command("restore")(restore_cmd)
