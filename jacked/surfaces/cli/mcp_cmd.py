"""`jacked mcp`: start the MCP server on stdio (see `jacked.surfaces.mcp`)."""
from __future__ import annotations

import typer

from jacked.surfaces.cli.common import settings


def mcp_cmd() -> None:
    """Serve jacked's memory to Claude Code over MCP (stdio). Register it with `jacked install --mcp`."""
    from jacked.surfaces.mcp import serve

    serve(settings())


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)
