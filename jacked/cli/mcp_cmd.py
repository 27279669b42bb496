"""`jacked mcp`: start the MCP server on stdio (see `jacked.mcp_server`)."""
from __future__ import annotations

import typer

from jacked.cli.common import settings


def mcp_cmd() -> None:
    """Serve jacked's memory to Claude Code over MCP (stdio). Register it with `jacked install --mcp`."""
    from jacked.mcp_server import serve

    serve(settings())


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)
