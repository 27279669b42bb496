"""`jacked install --agent copilot`: jacked's MCP server in GitHub Copilot CLI's MCP configuration.

Copilot CLI reads its user-level MCP servers from `mcp-config.json` in its folder (`~/.copilot`,
or `COPILOT_HOME`): an `mcpServers` object whose local servers are
`{"type": "local", "command", "args", "tools": ["*"]}`. It is written as Gemini CLI's settings
are (`jacked.surfaces.agent_install.gemini`: every other key kept, a backup, the same refusals).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jacked.sources.copilot.source import copilot_home
from jacked.surfaces.agent_install.gemini import install_at, uninstall_at

WHAT = "Copilot CLI's mcp-config.json"


def config_path(environ: Mapping[str, str]) -> Path:
    return copilot_home(environ) / "mcp-config.json"


def entry(exe: list[str]) -> dict[str, Any]:
    """A local (stdio) server with all its tools."""
    return {"type": "local", "command": exe[0], "args": [*exe[1:], "mcp"], "tools": ["*"]}


def install(exe: list[str], environ: Mapping[str, str]) -> Path:
    return install_at(config_path(environ), exe, WHAT, entry)


def uninstall(environ: Mapping[str, str]) -> Path | None:
    return uninstall_at(config_path(environ), WHAT)
