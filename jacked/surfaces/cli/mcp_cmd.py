"""`jacked mcp`: start the MCP server on stdio (see `jacked.surfaces.mcp`)."""
from __future__ import annotations

import typer

from jacked.surfaces.cli.common import STATE, settings, warn


def mcp_cmd() -> None:
    """Serve jacked's memory to Claude Code over MCP (stdio). Register it with `jacked install --mcp`."""
    from jacked.surfaces.daemon.protocol import daemon_enabled

    if daemon_enabled():
        from jacked.surfaces.daemon.client import DaemonUnavailable
        from jacked.surfaces.daemon.mcp_bridge import relay
        from jacked.surfaces.daemon.protocol import locate

        try:
            raise typer.Exit(relay(locate(STATE.claude_dir)))
        except DaemonUnavailable as e:
            warn(f"jacked: {e}; serving MCP in this process (JACKED_DAEMON=off says so quietly)")
    from jacked.surfaces.mcp import serve

    serve(settings())


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)
