"""`jacked install --agent qwen`: jacked's MCP server in Qwen Code's user settings.

Qwen Code (a fork of Gemini CLI) reads its user settings from `~/.qwen/settings.json`
(`Storage.getGlobalSettingsPath`), with Gemini CLI's `mcpServers` object: the Gemini installer
writes it, with the same refusals and backup (`jacked.surfaces.agent_install.gemini`).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from jacked.surfaces.agent_install.gemini import install_at, uninstall_at

WHAT = "Qwen Code's settings file"


def settings_path(environ: Mapping[str, str]) -> Path:
    """Qwen Code's user settings file."""
    home = environ.get("HOME", "").strip() or environ.get("USERPROFILE", "").strip() or os.path.expanduser("~")
    return Path(home).expanduser() / ".qwen" / "settings.json"


def install(exe: list[str], environ: Mapping[str, str]) -> Path:
    """Add (or update) the `jacked` MCP server in Qwen Code's settings; the file written."""
    return install_at(settings_path(environ), exe, WHAT)


def uninstall(environ: Mapping[str, str]) -> Path | None:
    """Take the `jacked` MCP server out of Qwen Code's settings; the file changed, or None."""
    return uninstall_at(settings_path(environ), WHAT)
