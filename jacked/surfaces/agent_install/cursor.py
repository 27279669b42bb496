"""`jacked install --agent cursor`: jacked's MCP server in Cursor's global MCP configuration.

Cursor reads its global MCP servers from `~/.cursor/mcp.json` (`%USERPROFILE%\\.cursor\\mcp.json`
on Windows), in the shape Gemini CLI uses: a stdio server under `mcpServers`,

    "mcpServers": {"jacked": {"command": <jacked>, "args": [..., "mcp"]}}

so install and uninstall are Gemini CLI's (`jacked.surfaces.agent_install.gemini`): every other
key kept, the old file copied to `<file>.jacked.bak`, a file jacked cannot read refused before
anything is touched, exactly the `jacked` entry taken out again.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from jacked.sources.paths import home_dir
from jacked.surfaces.agent_install.gemini import install_at, uninstall_at

WHAT = "Cursor's MCP configuration"


def config_path(environ: Mapping[str, str]) -> Path:
    """Cursor's global `mcp.json`."""
    return home_dir(environ).expanduser() / ".cursor" / "mcp.json"


def install(exe: list[str], environ: Mapping[str, str]) -> Path:
    """Add (or update) the `jacked` MCP server in Cursor's `mcp.json`; the file written."""
    return install_at(config_path(environ), exe, WHAT)


def uninstall(environ: Mapping[str, str]) -> Path | None:
    """Take the `jacked` MCP server out of Cursor's `mcp.json`; the file changed, or None."""
    return uninstall_at(config_path(environ), WHAT)
